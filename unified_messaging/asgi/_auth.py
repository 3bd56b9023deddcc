"""The Bearer token of a request (SPEC 5, RFC 6750 §2.1). Judging it is the core's job."""

from __future__ import annotations

from starlette.datastructures import Headers

__all__ = ["bearer_token"]


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
