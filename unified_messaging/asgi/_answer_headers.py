"""The headers every answer of the REST and MCP edges carries, beside ``X-Request-ID``.

Records carry phone numbers and message text: no cache on the way (a proxy, the browser's
disk) may keep them (``Cache-Control: no-store``), and no browser may guess a JSON answer
to be something it would run or render (``X-Content-Type-Options: nosniff``). Added by
:class:`~._request_id.RequestIdMiddleware`, which already touches every answer's headers,
so that no path, error or refusal goes without them; ``serve``'s own answers before the app
runs carry them too (``cli._serve_http.server_answer``).

The dashboard (mounted at ``/dashboard``) is left to its own headers (D31): its static
files may be cached, and its pages say ``no-store`` themselves.
"""

from __future__ import annotations

from typing import Final

from starlette.types import Scope

__all__ = ["ANSWER_HEADERS", "answer_headers"]

ANSWER_HEADERS: Final = (
    (b"cache-control", b"no-store"),
    (b"x-content-type-options", b"nosniff"),
)
_DASHBOARD: Final = "/dashboard"


def answer_headers(scope: Scope) -> tuple[tuple[bytes, bytes], ...]:
    """The headers the answer to ``scope``'s request gets added (none under the dashboard)."""
    path: str = scope.get("path", "")
    root: str = scope.get("root_path", "")
    if root and path.startswith(root):
        path = path[len(root) :]
    if path == _DASHBOARD or path.startswith(_DASHBOARD + "/"):
        return ()
    return ANSWER_HEADERS
