"""The Bearer token of a request (SPEC 5, RFC 6750 §2.1), and the one frame REST and MCP
put around the core's judgement of it (D15's 401 → 403 → 429, rendered the same way)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from starlette.datastructures import Headers
from starlette.responses import Response

from .._access.authorize import RateLimitRefused
from .._errors import MessagingError
from ._errors import error_response

if TYPE_CHECKING:
    from .._messenger import Messenger, Principal

__all__ = ["Answer", "authorize", "bearer_token"]


class Answer(Protocol):
    """What the façade answers a send, a bulk or a read with: its contract body."""

    def to_dict(self) -> dict[str, object]: ...


async def authorize(
    messenger: Messenger, headers: Headers, client_ip: str | None
) -> tuple[Principal, dict[str, str]] | Response:
    """The caller and the rate-limit headers every answer carries, or the refusal to send
    back as it is (401, 403, or 429 with its rate-limit headers)."""
    try:
        principal, decision = await messenger.access.authorize(bearer_token(headers), client_ip)
    except RateLimitRefused as exc:
        return error_response(exc, exc.decision.headers())
    except MessagingError as exc:
        return error_response(exc)
    return principal, decision.headers()


def bearer_token(headers: Headers) -> str | None:
    """The token of ``Authorization: Bearer <token>``, or ``None`` when there is not exactly one.

    Anything else (another scheme, an empty token, two ``Authorization`` fields) is no key
    at all, which the core answers with the same 401 as a wrong key (D1).
    """
    values = headers.getlist("authorization")
    if len(values) != 1:
        return None
    scheme, _, token = values[0].strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        return None
    return token
