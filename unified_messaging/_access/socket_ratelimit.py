"""Token buckets in one process, used by its child processes over a Unix socket (D16).

``serve --workers N`` without Redis: the parent holds a :class:`MemoryRateLimiter` and
serves it (:class:`RateLimitHost`); every server process asks it through a
:class:`SocketRateLimiter`. One set of buckets, so a key's limit is exact across the
processes, as with Redis, and nothing to run beside the server on one host.

The wire format is one JSON array per line each way: ``[key, rate, burst, cost]`` asked,
``[allowed, limit, remaining, reset_after, retry_after, window]`` answered, in order, on a
connection each client keeps open. The socket lives in a directory only its owner can
enter.

Both ends batch: a client writes every hit its callers made since its last write in one
go, and the host answers every complete line it read in one write. A server under load
thus pays one round trip (two system calls and one wake-up of each process) for all the
requests that were waiting, not one each; a lone request still goes at once.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Final

from .._errors import StorageUnavailable
from .ratelimit import MemoryRateLimiter, RateLimitDecision, RateLimitPolicy, check_key

__all__ = ["RateLimitHost", "SocketRateLimiter"]

logger = logging.getLogger("unified_messaging.ratelimit")

#: A line longer than this is not a request (keys are short hashes).
_MAX_LINE: Final = 4096
#: What the host reads at once: every line a client batched, most often.
_READ_SIZE: Final = 65536


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
        rest = b""
        try:
            while chunk := await reader.read(_READ_SIZE):
                *lines, rest = (rest + chunk).split(b"\n")
                if len(rest) > _MAX_LINE:
                    raise ValueError("a line longer than any request")
                if lines:
                    writer.write(b"".join([await self._decide(line) for line in lines]))
        except (OSError, ValueError, TypeError) as exc:
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


@dataclass(slots=True)
class _Asked:
    request: bytes
    answer: asyncio.Future[bytes] = field(repr=False)


class SocketRateLimiter:
    """A :class:`~.ratelimit.RateLimiter` whose buckets are a :class:`RateLimitHost`'s.

    One connection, on which one task of the limiter's own (not a caller's) writes what the
    callers asked and reads the answers, in order: every hit asked while an exchange was
    under way goes in the next one, all in one write. A caller cancelled while it waits
    leaves its answer to that task, which reads and drops it, so no other caller ever reads
    an answer that was not its own. A lost connection is made again on the next exchange;
    a host that cannot be reached is ``StorageUnavailable`` (503), as a Redis that cannot
    be, for every caller of that exchange.
    """

    def __init__(self, path: str) -> None:
        self._path = path
        self._asked: list[_Asked] = []
        self._exchanging: asyncio.Task[None] | None = None
        self._streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    def __repr__(self) -> str:
        return f"SocketRateLimiter({self._path!r})"

    async def hit(self, key: str, policy: RateLimitPolicy, cost: int = 1) -> RateLimitDecision:
        check_key(key)
        policy.check_cost(cost)
        request = json.dumps([key, policy.rate, policy.burst, cost]).encode() + b"\n"
        loop = asyncio.get_running_loop()
        asked = _Asked(request, loop.create_future())
        self._asked.append(asked)
        if self._exchanging is None or self._exchanging.done():
            self._exchanging = loop.create_task(self._exchange(), name="rate-limit exchange")
        line = await asked.answer
        allowed, limit, remaining, reset_after, retry_after, window = json.loads(line)
        return RateLimitDecision(
            allowed=allowed,
            limit=limit,
            remaining=remaining,
            reset_after=reset_after,
            retry_after=retry_after,
            window=window,
        )

    async def _exchange(self) -> None:
        while self._asked:
            batch, self._asked = self._asked, []
            try:
                answers = await self._ask(b"".join(a.request for a in batch), len(batch))
            except OSError:
                await self._drop()
                for asked in batch:
                    _fail(asked, StorageUnavailable("The rate limiter cannot be reached."))
                continue
            except BaseException as exc:
                # The task itself cancelled (the loop is closing): answers may still come on
                # this connection and nobody would read them. It goes, and so do the callers.
                self._forget()
                for asked in batch + self._asked:
                    _fail(asked, exc)
                self._asked = []
                raise
            for asked, line in zip(batch, answers, strict=True):
                if not asked.answer.done():
                    asked.answer.set_result(line)

    async def _ask(self, requests: bytes, count: int) -> list[bytes]:
        if self._streams is None:
            self._streams = await asyncio.open_unix_connection(self._path)
        reader, writer = self._streams
        writer.write(requests)
        answers = []
        for _ in range(count):
            line = await reader.readline()
            if not line:
                raise ConnectionResetError("the rate-limit host closed the connection")
            answers.append(line)
        return answers

    async def _drop(self) -> None:
        writer = self._forget()
        if writer is not None:
            with suppress(OSError):
                await writer.wait_closed()

    def _forget(self) -> asyncio.StreamWriter | None:
        """Close the connection without waiting; a later exchange opens a new one. The
        writer that was closed, if any."""
        streams, self._streams = self._streams, None
        if streams is None:
            return None
        streams[1].close()
        return streams[1]

    async def aclose(self) -> None:
        exchanging = self._exchanging
        if exchanging is not None and not exchanging.done():
            with suppress(Exception):
                await asyncio.shield(exchanging)
        await self._drop()


def _fail(asked: _Asked, exc: BaseException) -> None:
    if not asked.answer.done():
        asked.answer.set_exception(exc)
