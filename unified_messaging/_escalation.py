"""Escalation across channels (D36): the chain of a send that names later channels.

Beside SPEC's SMS-only ``fallback`` (providers of one channel), a send may name later
*channels* (``channel_fallback``): when the current channel fails, or is not ``delivered``
within ``escalate_after``, the next channel sends the same message under the same
``job_id``. This module turns the request into that chain of connections, and checks that
one recipient is reachable on every channel of it; the worker's DLR time-out item, due at
``escalate_after`` on a hop whose next hop is another channel, is the durable timer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Final, get_args

from ._domain import Connection
from ._errors import (
    EscalationInvalid,
    FallbackNotAllowed,
    InvalidRecipient,
    ProviderNotConnected,
    RequestInvalid,
)
from ._recipients import normalize_recipient
from ._types import SMS_PROVIDERS, Channel, ProviderCode

__all__ = [
    "DEFAULT_ESCALATE_AFTER",
    "ESCALATE_MAX",
    "ESCALATE_MIN",
    "chain_recipient",
    "channel_chain",
    "escalate_seconds",
]

#: How long a channel has to report ``delivered`` before the next one sends (default).
DEFAULT_ESCALATE_AFTER: Final = timedelta(seconds=30)
ESCALATE_MIN: Final = timedelta(seconds=5)
ESCALATE_MAX: Final = timedelta(hours=1)
_CHANNELS: Final[tuple[Channel, ...]] = get_args(Channel)


def escalate_seconds(escalate_after: float | None, channel_fallback: object) -> float | None:
    """The wait of a send's escalation in seconds (``None``: it names no later channel);
    :class:`EscalationInvalid` out of 5-3600 s or without ``channel_fallback``."""
    if not channel_fallback:
        if escalate_after is not None:
            raise EscalationInvalid("escalate_after is only allowed with channel_fallback.")
        return None
    if escalate_after is None:
        return DEFAULT_ESCALATE_AFTER.total_seconds()
    low, high = ESCALATE_MIN.total_seconds(), ESCALATE_MAX.total_seconds()
    if not low <= escalate_after <= high:
        raise EscalationInvalid(
            f"escalate_after must be {low:.0f}-{high:.0f} seconds, not {escalate_after:g}."
        )
    return float(escalate_after)


def _channels(primary: Channel, named: Sequence[str], field: str) -> list[Channel]:
    seen: list[Channel] = [primary]
    for index, raw in enumerate(named):
        channel = next((c for c in _CHANNELS if c == raw), None)
        if channel is None:
            known = ", ".join(_CHANNELS)
            raise EscalationInvalid(f"{field}.{index}: unknown channel {raw!r} (one of {known}).")
        if channel in seen:
            raise EscalationInvalid(f"{field}.{index}: the channel {channel} is named twice.")
        seen.append(channel)
    return seen[1:]


def _connection_of(connections: Sequence[Connection], channel: Channel) -> Connection:
    """The channel's connection: the workspace's default if it is of that channel, else its
    first connection of it."""
    found = [c for c in connections if c.channel == channel]
    if not found:
        raise ProviderNotConnected(f"No {channel} provider is connected to escalate to.")
    return next((c for c in found if c.is_default), found[0])


def channel_chain(
    connections: Mapping[ProviderCode, Connection],
    primary: Connection,
    channel_fallback: Sequence[str] | None,
    fallback: Sequence[ProviderCode],
    *,
    field: str = "channel_fallback",
) -> list[Connection]:
    """The connections a send goes through, in order: ``primary``, then each later channel
    of ``channel_fallback``; the SMS ``fallback`` providers follow the chain's first SMS
    hop (the workspace's SMS route with its fallback). 422 :class:`EscalationInvalid` for an
    unknown or repeated channel, :class:`FallbackNotAllowed` for a ``fallback`` with no SMS
    hop to follow, 404 for a channel with no connection."""
    later = _channels(primary.channel, channel_fallback or (), field)
    chain = [primary, *(_connection_of(list(connections.values()), c) for c in later)]
    if not fallback:
        return chain
    if primary.provider in fallback:
        raise RequestInvalid.for_field("fallback", "must not contain the primary provider")
    for code in fallback:
        if code not in connections:
            raise ProviderNotConnected(f"The fallback provider {code} is not connected.")
    route = [connections[code] for code in fallback]
    sms_at = next((i for i, c in enumerate(chain) if c.provider in SMS_PROVIDERS), None)
    if sms_at is None or any(c.provider not in SMS_PROVIDERS for c in route):
        raise FallbackNotAllowed
    if any(c in chain for c in route):
        raise RequestInvalid.for_field("fallback", "must not repeat a provider of the chain")
    return [*chain[: sms_at + 1], *route, *chain[sms_at + 1 :]]


def chain_recipient(channels: Sequence[Channel], raw: str) -> str:
    """``raw`` normalized for every channel of a chain: one address all of them reach (a
    phone number for ``bizchat`` and ``sms``). A chat id is no phone number: ``chatbot``
    escalates only to channels that read the recipient the same way. The first channel's
    refusal is its own 422 ``INVALID_RECIPIENT``; a later one's is ``ESCALATION_INVALID``."""
    first = normalize_recipient(channels[0], raw)
    for channel in channels[1:]:
        try:
            other = normalize_recipient(channel, raw)
        except InvalidRecipient as exc:
            raise EscalationInvalid(
                f"The recipient cannot be reached by {channel}: {exc.message}"
            ) from exc
        if other != first:
            raise EscalationInvalid(
                f"{channels[0]} and {channel} read the recipient differently; "
                "a chain's channels must reach the same address."
            )
    return first
