"""The channels of a code (D36): the escalation order a start asks for, the recipient every
channel of it reaches, and the per-channel sends a verification shows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, get_args

from .._domain import Attempt, MessageRecord
from .._errors import ChannelNotSupported, EscalationInvalid
from .._recipients import normalize_recipient
from .._types import CHANNEL_OF, AttemptStatus, Channel, MessageStatus
from ._models import CodeSendOut
from ._records import CodeSend

__all__ = ["channel_sends", "code_channels", "code_recipient"]

_CHANNELS: Final[tuple[Channel, ...]] = get_args(Channel)
#: What an earlier channel's last attempt says about that channel's send.
_SEND_STATUS: Final[dict[AttemptStatus, MessageStatus]] = {
    "accepted": "sent",
    "delivered": "delivered",
    "expired": "expired",
    "rejected": "rejected",
    "failed": "failed",
    "unavailable": "failed",
    "unknown": "unknown",  # no report in time: the next channel took over
}


def _channel(raw: str) -> Channel | None:
    return next((c for c in _CHANNELS if c == raw), None)


def code_channels(channel: str | None, channels: Sequence[str] | None) -> tuple[Channel, ...]:
    """The channels a code goes by, in order: ``channels`` (an escalation order), else
    ``channel``, else SMS. 422 ``CHANNEL_NOT_SUPPORTED`` for an unknown ``channel``,
    ``ESCALATION_INVALID`` for an unknown or repeated entry of ``channels`` or a ``channel``
    that is not its first."""
    if channels is None:
        single = _channel(channel or "sms")
        if single is None:
            known = ", ".join(_CHANNELS)
            raise ChannelNotSupported(f"Codes go by {known}; not by {channel!r}.")
        return (single,)
    order: list[Channel] = []
    for index, raw in enumerate(channels):
        found = _channel(raw)
        if found is None:
            known = ", ".join(_CHANNELS)
            raise EscalationInvalid(f"channels.{index}: unknown channel {raw!r} (one of {known}).")
        if found in order:
            raise EscalationInvalid(f"channels.{index}: the channel {found} is named twice.")
        order.append(found)
    if channel is not None and channel != order[0]:
        raise EscalationInvalid("channel must be the first of channels, or left out.")
    return tuple(order)


def code_recipient(order: Sequence[Channel], raw: str) -> str:
    """``raw`` as every channel of ``order`` reads it (422 ``INVALID_RECIPIENT`` naming the
    channel that cannot reach it: SMS codes go only to Turkish mobile numbers); 422
    ``ESCALATION_INVALID`` when two channels read it differently (a Telegram chat id is no
    phone number)."""
    found = [normalize_recipient(channel, raw) for channel in order]
    if len(set(found)) > 1:
        raise EscalationInvalid(
            f"{order[0]} and {order[found.index(next(f for f in found if f != found[0]))]} "
            "read the recipient differently; a code's channels must reach the same address."
        )
    return found[0]


def channel_sends(send: CodeSend, record: MessageRecord) -> list[CodeSendOut]:
    """One code message as its channels sent it: an entry per channel its attempts went
    through (an SMS route's fallback providers count as one channel), the current one with
    the message's status, each earlier one with what its last attempt said."""
    groups: list[list[Attempt]] = []
    for attempt in record.attempts:
        if attempt.error is not None and attempt.error.code == "SUBMIT_IN_PROGRESS":
            continue  # a hand-over in flight: not a send yet
        if groups and CHANNEL_OF[groups[-1][-1].provider] == CHANNEL_OF[attempt.provider]:
            groups[-1].append(attempt)
        else:
            groups.append([attempt])
    if not groups:
        return [
            CodeSendOut(job_id=send.job_id, channel=send.channel, provider=send.provider,
                        status=record.status, created_at=send.created_at)
        ]  # fmt: skip
    sends: list[CodeSendOut] = []
    for index, group in enumerate(groups):
        last = group[-1]
        current = index == len(groups) - 1
        sends.append(
            CodeSendOut(
                job_id=send.job_id,
                channel=CHANNEL_OF[last.provider],
                provider=last.provider,
                status=record.status if current else _SEND_STATUS[last.status],
                created_at=send.created_at if index == 0 else group[0].at,
            )
        )
    return sends
