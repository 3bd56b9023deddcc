"""A loopback HTTP/1.1 server on bare asyncio streams that answers exactly the bytes a test
scripts, for the tests of the project's own HTTP clients (webhooks and providers)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from types import EllipsisType

__all__ = ["RawServer", "Script", "answer"]


#: What a connection does with one request: the bytes to answer (None: close without one;
#: ``...``: never answer, and wait for the client to leave).
Script = Callable[[int], bytes | EllipsisType | None]


def answer(status: int = 204, body: bytes = b"", *extra: str) -> bytes:
    head = [f"HTTP/1.1 {status} X", f"content-length: {len(body)}", *extra]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


@dataclass
class RawServer:
    """A loopback HTTP server on bare sockets: reads each request (head and a length-framed
    body) and writes what ``script`` returns for the request's number."""

    script: Script
    port: int = 0
    connections: int = 0
    requests: list[bytes] = field(default_factory=list)
    #: Seconds to wait before answering (a slow receiver).
    delay: float = 0.0
    #: Close each connection after this many answers (None: keep it open).
    close_after: int | None = None

    def url(self, path: str = "/hook", host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        served = 0
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except asyncio.IncompleteReadError:
                    return
                length = 0
                for line in head.split(b"\r\n"):
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                body = await reader.readexactly(length)
                self.requests.append(head + body)
                if self.delay:
                    await asyncio.sleep(self.delay)
                reply = self.script(len(self.requests))
                if reply is Ellipsis:
                    await reader.read()
                    return
                if not isinstance(reply, bytes):
                    return
                writer.write(reply)
                await writer.drain()
                served += 1
                if self.close_after is not None and served >= self.close_after:
                    return
        except (ConnectionError, asyncio.CancelledError):
            return
        finally:
            writer.close()
