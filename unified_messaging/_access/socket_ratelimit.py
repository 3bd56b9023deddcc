"""Token buckets in one process, used by its child processes over a Unix socket (D16).

``serve --workers N`` without Redis: the parent holds a :class:`MemoryRateLimiter` and
serves it (:class:`RateLimitHost`); every server process asks it through a
:class:`SocketRateLimiter`. One set of buckets, so a key's limit is exact across the
processes, as with Redis, and nothing to run beside the server on one host.

The wire format is one JSON array per line each way: ``[key, rate, burst, cost]`` asked,
``[allowed, limit, remaining, reset_after, retry_after, window]`` answered, in order, on a
connection each client keeps open. The socket lives in a directory only its owner can
enter.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from contextlib import suppress
from typing import Final

from .._errors import StorageUnavailable
from .ratelimit import MemoryRateLimiter, RateLimitDecision, RateLimitPolicy, check_key

__all__ = ["RateLimitHost", "SocketRateLimiter"]

logger = logging.getLogger("unified_messaging.ratelimit")

#: A line longer than this is not a request (keys are short hashes).
_MAX_LINE: Final = 4096


class RateLimitHost:
    """Serves one :class:`MemoryRateLimiter` on the Unix socket ``path``, from a thread of
    its own with its own event loop: :meth:`start`, then :meth:`stop`."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._limiter = MemoryRateLimiter()
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, name="rate-limit host", daemon=True)
        self._failure: BaseException | None = None

    def start(self) -> None:
        self._thread.start()
        self._ready.wait()
        if self._failure is not None:
            raise self._failure

    def stop(self) -> None:
        if self._loop is not None and self._stopping is not None:
            self._loop.call_soon_threadsafe(self._stopping.set)
        self._thread.join()

    def _run(self) -> None:
        asyncio.run(self._serve())

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        try:
            server = await asyncio.start_unix_server(self._answer, self.path, limit=_MAX_LINE)
        except OSError as exc:
            self._failure = exc
            self._ready.set()
            return
        self._ready.set()
        async with server:
            await self._stopping.wait()

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while line := await reader.readline():
                writer.write(await self._decide(line))
        except (OSError, ValueError, TypeError, asyncio.LimitOverrunError) as exc:
            # A client that is not ours, or one that went away mid-line.
            logger.warning("rate-limit host: dropped a connection (%s)", type(exc).__name__)
        finally:
            writer.close()
            with suppress(OSError):
                await writer.wait_closed()

    async def _decide(self, line: bytes) -> bytes:
        key, rate, burst, cost = json.loads(line)
        decision = await self._limiter.hit(key, RateLimitPolicy(rate=rate, burst=burst), cost)
        answer = [
            decision.allowed,
            decision.limit,
            decision.remaining,
            decision.reset_after,
            decision.retry_after,
            decision.window,
        ]
        return json.dumps(answer).encode() + b"\n"


class SocketRateLimiter:
    """A :class:`~.ratelimit.RateLimiter` whose buckets are a :class:`RateLimitHost`'s.

    One connection, asked one request at a time (a lock keeps answers in order); a lost
    connection, or one whose call was cut off before its answer was read, is made again on
    the next hit. A host that cannot be reached is
    ``StorageUnavailable`` (503), as a Redis that cannot be.
    """

    def __init__(self, path: str) -> None:
        self._path = path
        self._lock = asyncio.Lock()
        self._streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    def __repr__(self) -> str:
        return f"SocketRateLimiter({self._path!r})"

    async def hit(self, key: str, policy: RateLimitPolicy, cost: int = 1) -> RateLimitDecision:
        check_key(key)
        policy.check_cost(cost)
        request = json.dumps([key, policy.rate, policy.burst, cost]).encode() + b"\n"
        async with self._lock:
            try:
                line = await self._ask(request)
            except OSError:
                await self._drop()
                raise StorageUnavailable("The rate limiter cannot be reached.") from None
            except BaseException:
                # Cut off mid-call (cancelled, most often: a client that went away, a
                # time-out): the answer may still come on this connection, and the next
                # caller would read it as its own, another key's. The connection goes.
                self._forget()
                raise
        allowed, limit, remaining, reset_after, retry_after, window = json.loads(line)
        return RateLimitDecision(
            allowed=allowed,
            limit=limit,
            remaining=remaining,
            reset_after=reset_after,
            retry_after=retry_after,
            window=window,
        )

    async def _ask(self, request: bytes) -> bytes:
        if self._streams is None:
            self._streams = await asyncio.open_unix_connection(self._path)
        reader, writer = self._streams
        writer.write(request)
        line = await reader.readline()
        if not line:
            raise ConnectionResetError("the rate-limit host closed the connection")
        return line

    async def _drop(self) -> None:
        writer = self._forget()
        if writer is not None:
            with suppress(OSError):
                await writer.wait_closed()

    def _forget(self) -> asyncio.StreamWriter | None:
        """Close the connection without waiting (safe while being cancelled); a later hit
        opens a new one. The writer that was closed, if any."""
        streams, self._streams = self._streams, None
        if streams is None:
            return None
        streams[1].close()
        return streams[1]

    async def aclose(self) -> None:
        await self._drop()
