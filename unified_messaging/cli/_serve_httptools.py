"""``serve``'s HTTP/1.1 connection over httptools (llhttp): uvicorn's httptools protocol
with the same limits as :class:`~._serve_http.GuardedH11Protocol`.

h11 says which part of a request it waits for (``their_state``); httptools only calls back
as it parses, so the phase is followed here from its callbacks: a head has begun
(``on_message_begin``), its headers are complete (``on_headers_complete``), its body is
complete (``on_message_complete``). Two things h11 does by itself are done here too: a head
is bounded (llhttp has no limit: an unfinished head past :data:`~._serve_http.MAX_HEAD` gets
a 431, as h11's buffer limit does), and a pipelined request's deadline waits for the answer
to the request before it (uvicorn stops reading until then).

Imported only when httptools is chosen: httptools is optional.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httptools
from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from ._serve_head import MAX_HEAD
from ._serve_http import _Guard

__all__ = ["GuardedHttpToolsProtocol"]

_data_received = HttpToolsProtocol.data_received
_on_message_begin = HttpToolsProtocol.on_message_begin
_on_headers_complete = HttpToolsProtocol.on_headers_complete
_on_message_complete = HttpToolsProtocol.on_message_complete
_on_response_complete = HttpToolsProtocol.on_response_complete


class GuardedHttpToolsProtocol(_Guard, HttpToolsProtocol):
    """uvicorn's httptools protocol with a connection cap, head/body deadlines and a
    bounded head. Use :func:`~._serve_protocols.guarded_protocol` to bind it to limits."""

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        # Bytes received since the last head was complete (or the connection opened) while
        # no body was being read: the unfinished head, counted by the chunks it came in.
        self._head_bytes = 0
        self._head_open = False  # on_message_begin came, on_headers_complete not yet
        self._body_open = False  # on_headers_complete came, on_message_complete not yet

    def data_received(self, data: bytes) -> None:
        if self._refused or self._lingering:
            return
        if self._health_only and self._off_the_health_slot(data):
            return
        if not self._body_open:
            self._head_bytes += len(data)
        _data_received(self, data)
        if not (self._body_open or self._head_open or self._head_bytes):
            # The common case, the whole request in: no deadline while the app has it.
            if self._deadline is not None:
                self._disarm()
            return
        if self._head_bytes > MAX_HEAD and not self._lingering:
            self.logger.warning("Invalid HTTP request received.")  # uvicorn's, as with h11
            self._answer_invalid(too_large=True)
            return
        self._follow_request()

    def send_400_response(self, msg: str) -> None:
        # uvicorn's own is plain text without X-Request-ID; this one has the D13 shape.
        self._answer_invalid(too_large=False)

    # Parser callbacks: uvicorn's, and the phase.

    # (The base class's methods are called directly, not through super(): these run for
    # every request, and each frame counts on a GET /v1/health.)

    def on_message_begin(self) -> None:
        _on_message_begin(self)
        self._head_open = True

    def on_headers_complete(self) -> None:
        if self._head_refused(
            self.parser.get_method(), self.url, self.parser.get_http_version(), self.headers
        ):
            # httptools stops parsing and raises it as a parser error, which uvicorn's
            # data_received answers through send_400_response.
            raise httptools.HttpParserError("refused request head")
        self._head_open = False
        self._body_open = True
        self._head_bytes = 0
        _on_headers_complete(self)

    def on_message_complete(self) -> None:
        self._body_open = False
        _on_message_complete(self)

    def on_response_complete(self) -> None:
        _on_response_complete(self)
        if self._health_only:
            self._close_a_health_slot()
            return
        # A pipelined request waited for this answer (uvicorn stopped reading meanwhile):
        # its deadline starts now. With nothing begun, uvicorn's keep-alive timer runs, and
        # the head deadline starts with the next request's first byte (data_received).
        if self._deadline is not None:
            self._disarm()
        if self._body_open or self._head_open or self._head_bytes:
            self._follow_request()

    def _head_started(self) -> bool:
        return self._head_open or self._head_bytes > 0

    def _follow_request(self) -> None:
        if self.transport.is_closing() or self._lingering:
            self._disarm()
        elif self._body_open:
            # Behind an unanswered request, uvicorn reads nothing more: no deadline yet.
            self._watch(None if self.pipeline else "body")
        elif self._head_started():
            earlier = self.cycle
            self._watch(None if earlier is not None and not earlier.response_complete else "head")
        else:
            self._watch(None)  # a whole request is in; the app has it
