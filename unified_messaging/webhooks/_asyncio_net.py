"""An httpcore network backend on plain asyncio streams, for the one httpcore pool the
project still builds: the webhook sender's when a host passes its own httpx client
(``_transport``). The project's own clients are on the h11 core (``.._http11``).

httpcore's default backend under asyncio goes through anyio, whose per-call cancel scopes
and socket attribute lookups (``extra_attributes`` calls ``getpeername`` each time the pool
asks whether an idle connection is still usable) were about a third of the CPU of one
webhook delivery to a loopback receiver. This backend implements the same small interface
(``httpcore.AsyncNetworkBackend`` / ``AsyncNetworkStream``, documented by httpcore as the
seam for custom networking) with :mod:`asyncio` streams and ``asyncio.timeout``; errors map
to the same httpcore exceptions, so httpx behaves exactly as before.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import Iterable
from typing import Any

import httpcore
from httpcore._utils import is_socket_readable

__all__ = ["AsyncioBackend", "AsyncioStream"]

#: Read buffer limit of the stream reader; httpcore reads in chunks of 64 KiB.
_READ_LIMIT = 2**16
#: Bytes of a request held back to leave with the next part (see ``AsyncioStream``).
_HOLD_BYTES = 2**16
#: Seconds a close waits for the connection to wind down before it is cut.
_CLOSE_WAIT = 1.0


class AsyncioStream(httpcore.AsyncNetworkStream):
    """One connection: an asyncio ``StreamReader``/``StreamWriter`` pair."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        # httpcore writes a request's head and its body separately; held until the first
        # read (or until there is a lot of it), they leave in one segment and one syscall.
        self._held: list[bytes] = []
        self._held_bytes = 0

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:  # noqa: ASYNC109
        if self._held:
            self._flush()
        try:
            async with asyncio.timeout(timeout):
                return await self._reader.read(max_bytes)
        except TimeoutError:
            raise httpcore.ReadTimeout("timed out reading the answer") from None
        except OSError as exc:
            raise httpcore.ReadError(str(exc) or type(exc).__name__) from exc

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:  # noqa: ASYNC109
        if not buffer:
            return
        if self._held_bytes + len(buffer) <= _HOLD_BYTES:
            self._held.append(buffer)
            self._held_bytes += len(buffer)
            return
        try:
            async with asyncio.timeout(timeout):
                self._held.append(buffer)
                self._flush()
                await self._writer.drain()
        except TimeoutError:
            raise httpcore.WriteTimeout("timed out writing the request") from None
        except OSError as exc:
            raise httpcore.WriteError(str(exc) or type(exc).__name__) from exc

    def _flush(self) -> None:
        data = self._held[0] if len(self._held) == 1 else b"".join(self._held)
        self._held.clear()
        self._held_bytes = 0
        self._writer.write(data)  # asyncio sends at once what the socket takes, buffers the rest

    async def aclose(self) -> None:
        self._held.clear()
        self._writer.close()
        try:
            # A peer that stopped reading would hold a graceful close (and us) forever.
            async with asyncio.timeout(_CLOSE_WAIT):
                await self._writer.wait_closed()
        except TimeoutError:
            self._writer.transport.abort()
        except (OSError, ssl.SSLError):
            pass  # closing a connection the peer already dropped is not an error

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> httpcore.AsyncNetworkStream:
        try:
            async with asyncio.timeout(timeout):
                await self._writer.start_tls(ssl_context, server_hostname=server_hostname)
        except TimeoutError:
            await self.aclose()
            raise httpcore.ConnectTimeout("timed out in the TLS handshake") from None
        except (OSError, ssl.SSLError) as exc:
            await self.aclose()
            raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
        return self  # the writer's transport is now the TLS one; the reader reads through it

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":
            # A kept-alive connection the server closed (or sent something on) is unusable.
            if self._writer.is_closing() or self._reader.at_eof():
                return True
            return is_socket_readable(self._writer.get_extra_info("socket"))
        if info == "client_addr":
            return self._writer.get_extra_info("sockname")
        if info == "server_addr":
            return self._writer.get_extra_info("peername")
        if info in ("ssl_object", "socket"):
            return self._writer.get_extra_info(info)
        return None


class AsyncioBackend(httpcore.AsyncNetworkBackend):
    """Dials TCP with ``asyncio.open_connection`` (which sets ``TCP_NODELAY``)."""

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's interface
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        local = None if local_address is None else (local_address, 0)
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_connection(
                    host, port, local_addr=local, limit=_READ_LIMIT
                )
        except TimeoutError:
            raise httpcore.ConnectTimeout(f"timed out connecting to {host}:{port}") from None
        except OSError as exc:
            raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
        sock: socket.socket | None = writer.get_extra_info("socket")
        if sock is not None:
            for option in socket_options or ():
                sock.setsockopt(*option)
        return AsyncioStream(reader, writer)

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's interface
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("unix sockets are not supported here")

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
