"""Fault injection for any loopback fake: wrap its ASGI app in :class:`Faults` and
script how the provider misbehaves, the way a real one does on a bad day.

- :meth:`Faults.hang`: requests are never answered (until :meth:`Faults.heal`, which answers
  them 503, too late), so the client waits out its read time-out;
- :meth:`Faults.slow`: every answer comes ``seconds`` late;
- :meth:`Faults.storm`: 5xx answers (all of them, or the next ``count``);
- :meth:`Faults.throttle`: ``429`` with ``Retry-After`` (the next ``count`` requests);
- :meth:`Faults.reset`: the answer starts (status, headers, a first byte of a longer body)
  and the connection is cut mid-answer;
- :meth:`Faults.flap`: up for ``up`` requests, down (5xx) for ``down``, over and over;
- :meth:`Faults.garble`: a 2xx that is not the provider's format (a captive portal's or a
  misconfigured proxy's page): it says the request arrived, not what became of it.

Anything not faulted reaches the wrapped fake, which answers in its own wire format. The
fault layer counts what it saw: :attr:`Faults.requests`, and :attr:`Faults.faulted` per kind.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Literal

__all__ = ["Faults"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]
Kind = Literal["hang", "slow", "storm", "throttle", "reset", "flap", "garble"]


class MidAnswerReset(Exception):
    """Raised after the first bytes of an answer: uvicorn drops the connection."""


class Faults:
    """An ASGI wrapper that makes the fake inside it misbehave on demand."""

    def __init__(self, app: App) -> None:
        self.app = app
        self.requests = 0
        self.faulted: Counter[str] = Counter()
        self._mode: Kind | None = None
        self._left: int | None = None
        self._status = 503
        self._retry_after = "0"
        self._delay = 0.0
        self._flap = (0, 0)
        self._since = 0
        self._healed = asyncio.Event()
        self._garbled: tuple[int, bytes, str] = (200, b"", "text/html")

    # --- knobs --------------------------------------------------------------------------------

    def hang(self) -> None:
        """Never answer, until :meth:`heal`."""
        self._set("hang", None)

    def slow(self, seconds: float) -> None:
        self._delay = seconds
        self._set("slow", None)

    def storm(self, status: int = 503, *, count: int | None = None) -> None:
        self._status = status
        self._set("storm", count)

    def throttle(self, retry_after: float, *, count: int | None = 1, status: int = 429) -> None:
        self._retry_after, self._status = f"{retry_after:g}", status
        self._set("throttle", count)

    def reset(self, *, count: int | None = None) -> None:
        self._set("reset", count)

    def flap(self, *, up: int, down: int, status: int = 503) -> None:
        """Answer ``up`` requests normally, then ``down`` with ``status``, and so on."""
        self._flap, self._status = (up, down), status
        self._set("flap", None)

    def garble(
        self,
        *,
        status: int = 200,
        body: bytes = b"<html><body><h1>Welcome</h1>Please log in to continue.</body></html>",
        content_type: str = "text/html; charset=utf-8",
        count: int | None = None,
    ) -> None:
        """Answer ``status`` with ``body`` of ``content_type`` instead of the provider's own."""
        self._garbled = (status, body, content_type)
        self._set("garble", count)

    def heal(self) -> None:
        """Back to normal; hanging requests are answered 503 (their clients gave up)."""
        self._mode, self._left = None, None
        self._healed.set()

    def _set(self, mode: Kind, count: int | None) -> None:
        self._mode, self._left, self._since = mode, count, self.requests
        self._healed = asyncio.Event()

    # --- ASGI ---------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        index = self.requests
        self.requests += 1
        fault = self._next(index)
        if fault is not None:
            self.faulted[fault] += 1
        if fault == "hang":
            await self._healed.wait()
            # Too late for any client that waited: it gave up (or died) long ago.
            await _answer(send, 503, b"Service Unavailable", {})
            return
        if fault == "slow":
            await asyncio.sleep(self._delay)
        elif fault in ("storm", "flap"):
            await _answer(send, self._status, b"Service Unavailable", {})
            return
        elif fault == "throttle":
            await _answer(send, self._status, b"Too Many Requests",
                          {"retry-after": self._retry_after})  # fmt: skip
            return
        elif fault == "garble":
            status, body, content_type = self._garbled
            await _answer(send, status, body, {}, content_type=content_type)
            return
        elif fault == "reset":
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"content-length", b"4096")]})  # fmt: skip
            await send({"type": "http.response.body", "body": b"{", "more_body": True})
            raise MidAnswerReset
        await self.app(scope, receive, send)

    def _next(self, index: int) -> Kind | None:
        mode = self._mode
        if mode is None:
            return None
        if mode == "flap":
            up, down = self._flap
            return "flap" if (index - self._since) % (up + down) >= up else None
        if self._left is not None:
            self._left -= 1
            if self._left <= 0:
                self._mode, self._left = None, None
        return mode


async def _answer(
    send: Send,
    status: int,
    body: bytes,
    headers: dict[str, str],
    *,
    content_type: str = "text/plain",
) -> None:
    raw = [(b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode())]
    raw += [(k.encode(), v.encode()) for k, v in headers.items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})
