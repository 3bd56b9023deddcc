"""Cross-site request forgery (D31): a state change needs the session's token, and must come
from the dashboard's own pages as far as the browser tells.

The token arrives as the ``X-CSRF-Token`` header (htmx sends it on every request, from the
page's ``hx-headers``) or the ``csrf_token`` form field (plain form posts).

Where the request came from is read from what a page cannot forge. A browser sends
``Sec-Fetch-Site`` (Fetch Metadata) on every request: only ``same-origin`` is accepted. Its
``Origin`` header does not serve here alone: under the dashboard's own
``Referrer-Policy: no-referrer`` the Fetch standard has the browser send ``Origin: null`` on
every POST, same-origin ones included. So without ``Sec-Fetch-Site`` (an older browser),
the ``Origin`` must name the dashboard's own host, ``null`` refused; without either (not a
browser: curl, a script) the token alone decides.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from typing import Final
from urllib.parse import urlsplit

from starlette.requests import Request

__all__ = ["CSRF_FIELD", "CSRF_HEADER", "SAFE_METHODS", "origin_allowed", "token_matches"]

CSRF_HEADER: Final = "x-csrf-token"
CSRF_FIELD: Final = "csrf_token"
SAFE_METHODS: Final = frozenset({"GET", "HEAD", "OPTIONS"})


def origin_allowed(request: Request) -> bool:
    """D31's origin check (see the module docstring): ``Sec-Fetch-Site``, else ``Origin``.

    ``Origin`` is compared by host and port with the ``Host`` the browser sent, not by
    scheme: behind a TLS-terminating proxy the browser's origin is ``https://`` while the app
    hears plain HTTP.
    """
    site = request.headers.get("sec-fetch-site")
    if site is not None:
        return site == "same-origin"
    origin = request.headers.get("origin")
    if origin is None:
        return True
    host = request.headers.get("host")
    parts = urlsplit(origin)
    if not host or parts.scheme not in ("http", "https") or not parts.netloc:
        return False
    return _netloc(parts.scheme, parts.netloc) == _netloc(parts.scheme, host)


def _netloc(scheme: str, netloc: str) -> str:
    default = ":443" if scheme == "https" else ":80"
    return netloc.lower().removesuffix(default)


def token_matches(expected: str, headers: Mapping[str, str], form: Mapping[str, str]) -> bool:
    """Whether the request carries the session's CSRF token (constant-time compare)."""
    given = headers.get(CSRF_HEADER) or form.get(CSRF_FIELD) or ""
    return hmac.compare_digest(given.encode(), expected.encode())
