"""Admin operations on webhook endpoints (D19): add, list, remove, rotate, re-enable, log.

The methods are :class:`~unified_messaging.webhooks._service.Webhooks`' (``messenger.webhooks``);
the CLI, the dashboard and the tests call them and get the same errors.

Rules kept here, once:

- The URL is judged by :func:`~unified_messaging.webhooks._sender.url_problem` under the
  façade's ``TargetPolicy`` (scheme, length, credentials, private IP literals, ``localhost``).
  Where a host *name* resolves is judged again on every delivery, when it is dialled.
- ``events`` lists the event types an endpoint receives. ``None`` or an empty list subscribes
  it to every event type, including ones added in later versions; that is stored as ``()``.
- The secret (``whsec_…``) is returned once, in :class:`CreatedWebhookEndpoint`, and stored
  only sealed in the vault, bound to the workspace and the endpoint id. No ``repr``, log line
  or error message contains it.
- Rotation keeps the old secret signing beside the new one for ``overlap`` (default 24 h), so
  receivers can switch whenever they like within that window.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Final

from .._errors import RequestInvalid
from .._lifecycle.rules import EVENT_TYPES
from ..store.base import WebhookEndpoint

if TYPE_CHECKING:
    # The sender (httpx), the signer (pydantic) and the vault (cryptography) are imported
    # where they are used: the command line reads this module's settings to build its
    # ``--help``, which needs none of them.
    from ..vault._core import Vault
    from ._sender import TargetPolicy

__all__ = [
    "ALLOW_PRIVATE_ENV",
    "DEFAULT_ROTATION_OVERLAP",
    "CreatedWebhookEndpoint",
    "endpoint_refusal",
    "endpoint_url_problem",
    "open_secret",
    "seal_secret",
    "webhook_policy_from_env",
]

#: Compare-and-set rounds of a secret rotation before it gives up (it never should).
SWAP_TRIES: Final = 5
#: How long the previous secret keeps signing after a rotation.
DEFAULT_ROTATION_OVERLAP: Final = timedelta(hours=24)
#: Sealed secrets are bound to this pseudo connection id, so a webhook secret can never be
#: opened as (or swapped with) a connection's credentials.
_AAD_PREFIX: Final = "webhook-endpoint:"
#: ``UM_WEBHOOK_ALLOW_PRIVATE=1`` lets webhooks go to loopback and private addresses.
ALLOW_PRIVATE_ENV: Final = "UM_WEBHOOK_ALLOW_PRIVATE"
_TRUE: Final = frozenset({"1", "true", "yes", "on"})


def webhook_policy_from_env(environ: Mapping[str, str] | None = None) -> TargetPolicy:
    """The operator's webhook target policy: private targets only with ``ALLOW_PRIVATE_ENV``.

    One switch for both ends: the process that adds endpoints and the one that delivers to
    them must agree, or an endpoint would be accepted and then refused on every attempt.
    """
    from ._sender import TargetPolicy

    value = (os.environ if environ is None else environ).get(ALLOW_PRIVATE_ENV, "")
    return TargetPolicy(allow_private=value.strip().lower() in _TRUE)


def seal_secret(vault: Vault, secret: str, *, workspace_id: str, endpoint_id: str) -> str:
    """Encrypt an endpoint secret, bound to its workspace and endpoint."""
    return vault.encrypt(
        secret.encode("ascii"),
        workspace_id=workspace_id,
        connection_id=_AAD_PREFIX + endpoint_id,
    )


def open_secret(vault: Vault, token: str, *, workspace_id: str, endpoint_id: str) -> str:
    """Decrypt what :func:`seal_secret` made (``DecryptionFailed`` for anything else)."""
    raw = vault.decrypt(token, workspace_id=workspace_id, connection_id=_AAD_PREFIX + endpoint_id)
    return raw.decode("ascii")


@dataclass(frozen=True, slots=True)
class CreatedWebhookEndpoint:
    """An endpoint with its new secret, which is shown this once (never in a ``repr``)."""

    endpoint: WebhookEndpoint
    secret: str = field(repr=False)


def check_events(events: Sequence[str] | None) -> tuple[str, ...]:
    if events is None:
        return ()
    if isinstance(events, str):
        events = [events]  # a lone str is a Sequence[str] of characters: never what is meant
    chosen: list[str] = []
    for name in events:
        if name not in EVENT_TYPES:
            known = ", ".join(EVENT_TYPES)
            raise RequestInvalid.for_field(
                "events", f"unknown event type {str(name)[:64]!r} (known: {known})"
            )
        if name not in chosen:
            chosen.append(name)
    return tuple(chosen)


def endpoint_refusal(url: str, policy: TargetPolicy) -> RequestInvalid | None:
    """The refusal of ``url`` as a new endpoint's address under ``policy``, or None. When only
    this process's private-address rule refuses it, the refusal names the switch that allows
    it (an environment variable the operator would otherwise have to find)."""
    from ._sender import TargetPolicy

    problem = endpoint_url_problem(url, policy)
    if problem is None:
        return None
    if endpoint_url_problem(url, TargetPolicy(allow_private=True)) is None:
        problem += (
            f"; set {ALLOW_PRIVATE_ENV}=1 to allow loopback and private targets (where "
            "endpoints are added and where webhooks are delivered: serve, worker, the command "
            "line), or use serve --demo, which allows them"
        )
    return RequestInvalid.for_field("url", problem)


def endpoint_url_problem(url: str, policy: TargetPolicy) -> str | None:
    """What is wrong with ``url`` as a new endpoint's address under ``policy``, or None."""
    from ._sender import url_problem

    # httpx would percent-encode a space in the path: one URL stored, another read back by
    # the operator. A space is nearly always a pasting mistake, so it is refused.
    if isinstance(url, str) and any(char.isspace() for char in url):
        return "must not contain spaces (percent-encode one as %20)"
    return url_problem(url, policy)
