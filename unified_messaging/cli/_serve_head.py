"""What ``serve`` refuses in a complete request head, whichever parser read it.

h11 and httptools (llhttp) disagree on what they let through: h11 serves a request with
both ``Content-Length`` and ``Transfer-Encoding`` (a request-smuggling vector when a proxy
in front reads the other one), llhttp serves one without ``Host`` or with two, and neither
bounds a head that arrives whole. Both protocols of ``serve`` pass every complete head here
before the app sees it (:func:`head_refusal`), so the rules are one function, not two
parser configurations.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, Literal

__all__ = ["HEALTH_PATH", "MAX_HEAD", "HeadRefusal", "head_refusal", "is_health_check"]

#: The most bytes a request head may take (h11's own default bound, kept for httptools
#: too): past it, 431 and close.
MAX_HEAD: Final = 16 * 1024
#: The one request a connection admitted past the connection cap may make.
HEALTH_PATH: Final = b"/v1/health"

#: Why a head is refused: 431 (``too_large``) or 400 (``invalid``).
HeadRefusal = Literal["too_large", "invalid"]

# What a header line adds to its name and value: ": " and CRLF.
_LINE_OVERHEAD: Final = 4
# The request line's spaces, "HTTP/1.1" and CRLF.
_REQUEST_LINE_OVERHEAD: Final = 12


def head_refusal(
    method: bytes,
    target: bytes,
    http_version: bytes | str,
    headers: Iterable[tuple[bytes, bytes]],
) -> HeadRefusal | None:
    """Why this complete head (header names lower-case) is refused, or ``None``.

    * larger than :data:`MAX_HEAD` (counted from what was parsed: the bytes on the wire,
      less optional whitespace) is ``too_large``;
    * both ``Content-Length`` and ``Transfer-Encoding`` is ``invalid``: RFC 9112 §6.1
      allows a server to reject it and requires it to close the connection after, since
      the body's end is ambiguous (request smuggling);
    * no ``Host`` in an HTTP/1.1 request, or more than one ``Host`` in any, is ``invalid``:
      RFC 9112 §3.2 requires a 400 for both.
    """
    size = len(method) + len(target) + _REQUEST_LINE_OVERHEAD
    hosts = 0
    length = chunked = False
    for name, value in headers:
        size += len(name) + len(value) + _LINE_OVERHEAD
        if name == b"host":
            hosts += 1
        elif name == b"content-length":
            length = True
        elif name == b"transfer-encoding":
            chunked = True
    if size > MAX_HEAD:
        return "too_large"
    if length and chunked:
        return "invalid"
    version = http_version.decode("ascii") if isinstance(http_version, bytes) else http_version
    if hosts > 1 or (hosts == 0 and version == "1.1"):
        return "invalid"
    return None


def is_health_check(method: bytes, target: bytes) -> bool:
    """Is this request ``GET /v1/health`` (a query string allowed)?"""
    return method == b"GET" and target.partition(b"?")[0] == HEALTH_PATH
