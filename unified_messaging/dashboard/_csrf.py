"""Cross-site request forgery (D31): a state change needs the session's token and, when the
browser names one, the dashboard's own ``Origin``.

The token arrives as the ``X-CSRF-Token`` header (htmx sends it on every request, from the
page's ``hx-headers``) or the ``csrf_token`` form field (plain form posts). The ``Origin``
check is the second lock: a page elsewhere cannot make a browser send our token, and a
browser always names the page's origin on a cross-site POST. ``Origin: null`` (a sandboxed
frame, a ``data:`` page) is refused too. Without an ``Origin`` (not a browser) the token
alone decides.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping, Sequence
from typing import Final
from urllib.parse import urlsplit

from starlette.requests import Request

__all__ = ["CSRF_FIELD", "CSRF_HEADER", "SAFE_METHODS", "origin_allowed", "token_matches"]

CSRF_HEADER: Final = "x-csrf-token"
CSRF_FIELD: Final = "csrf_token"
SAFE_METHODS: Final = frozenset({"GET", "HEAD", "OPTIONS"})


def origin_allowed(request: Request, extra_origins: Sequence[str] = ()) -> bool:
    """Whether the request's ``Origin`` (if any) is the dashboard's own host.

    Compared by host and port with the ``Host`` the browser sent, not by scheme: behind a
    TLS-terminating proxy the browser's origin is ``https://`` while the app hears plain
    HTTP. ``extra_origins`` names other origins a deployment serves the dashboard under.
    """
    origin = request.headers.get("origin")
    if origin is None:
        return True
    if origin in extra_origins:
        return True
    host = request.headers.get("host")
    parts = urlsplit(origin)
    if not host or parts.scheme not in ("http", "https") or not parts.netloc:
        return False
    return _netloc(parts.scheme, parts.netloc) == _netloc(parts.scheme, host)


def _netloc(scheme: str, netloc: str) -> str:
    default = ":443" if scheme == "https" else ":80"
    netloc = netloc.lower()
    return netloc.removesuffix(default)


def token_matches(expected: str, headers: Mapping[str, str], form: Mapping[str, str]) -> bool:
    """Whether the request carries the session's CSRF token (constant-time compare)."""
    given = headers.get(CSRF_HEADER) or form.get(CSRF_FIELD) or ""
    return hmac.compare_digest(given.encode(), expected.encode())
