"""Helpers of the MCP edge's tests: the SDK's own client, in process or over a socket.

No ``__init__.py`` in this folder, on purpose: as a package, ``tests/mcp`` would shadow the
``mcp`` SDK itself (``tests`` is on ``sys.path``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Final

import httpx
import httpx2
import uvicorn
from mcp.client import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types import CallToolResult
from starlette.applications import Starlette

from unified_messaging.testing import TestBed

NORMAL: Final = "+905551234567"
PEER: Final = ("127.0.0.1", 40000)
#: What a streamable HTTP client sends with every POST.
ACCEPT: Final = {"Accept": "application/json, text/event-stream"}
#: Stands for "the testbed's test key" where ``None`` means "no key at all".
BED_KEY: Final = "<bed key>"


def bearer(key: str | None) -> dict[str, str]:
    return {} if key is None else {"Authorization": f"Bearer {key}"}


def rpc(method: str, params: Mapping[str, object] | None = None, id: int = 1) -> dict[str, object]:
    message: dict[str, object] = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def data_of(result: CallToolResult) -> dict[str, object]:
    """The structured content of a successful call, checked against its text twin."""
    assert not result.is_error, result.content
    assert result.structured_content is not None
    (block,) = result.content
    assert block.type == "text"
    assert json.loads(block.text) == result.structured_content
    return result.structured_content


def error_of(result: CallToolResult) -> dict[str, object]:
    """The D13 error object of a failed call; its code also opens the text."""
    assert result.is_error
    assert result.structured_content is not None
    assert set(result.structured_content) == {"error"}
    error = result.structured_content["error"]
    assert isinstance(error, dict)
    assert {"code", "message"} <= set(error)
    assert ("details" in error) == (error["code"] == "VALIDATION_ERROR")
    (block,) = result.content
    assert block.type == "text"
    assert block.text.startswith(f"{error['code']}: {error['message']}")
    return error


def code_of(result: CallToolResult) -> object:
    return error_of(result)["code"]


@dataclass
class Harness:
    """Reaches one running app: in process (``app`` given) or over a socket (``base_url``)."""

    bed: TestBed
    base_url: str
    app: Starlette | None = None
    path: str = "/mcp"

    def _key(self, key: str | None) -> str | None:
        return self.bed.api_key if key == BED_KEY else key

    def _sdk_http(self, key: str | None, peer: tuple[str, int]) -> httpx2.AsyncClient:
        headers = bearer(self._key(key))
        if self.app is None:
            return create_mcp_http_client(headers=headers)
        transport = httpx2.ASGITransport(app=self.app, client=peer)
        return httpx2.AsyncClient(transport=transport, headers=headers)

    @asynccontextmanager
    async def session(
        self, key: str | None = BED_KEY, *, peer: tuple[str, int] = PEER, path: str | None = None
    ) -> AsyncIterator[ClientSession]:
        """An initialized SDK session; ``path`` overrides the endpoint's path."""
        url = self.base_url + (path or self.path)
        async with (
            self._sdk_http(key, peer) as http,
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session

    async def call(
        self, name: str, arguments: Mapping[str, object], *, key: str | None = BED_KEY
    ) -> CallToolResult:
        async with self.session(key) as session:
            result = await session.call_tool(name, dict(arguments))
        assert isinstance(result, CallToolResult)
        return result

    async def post(
        self,
        body: bytes | Mapping[str, object],
        *,
        key: str | None = BED_KEY,
        headers: Mapping[str, str] | None = None,
        peer: tuple[str, int] = PEER,
        path: str | None = None,
    ) -> httpx.Response:
        """One raw HTTP POST, the way a streamable HTTP client sends it unless told otherwise."""
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        all_headers = {"Content-Type": "application/json", **ACCEPT, **bearer(self._key(key))}
        all_headers.update(headers or {})
        transport = None if self.app is None else httpx.ASGITransport(app=self.app, client=peer)
        async with httpx.AsyncClient(transport=transport, base_url=self.base_url) as client:
            return await client.post(path or self.path, content=content, headers=all_headers)


@asynccontextmanager
async def started(app: Starlette) -> AsyncIterator[Starlette]:
    """Run ``app``'s own lifespan (as a server would) in a task of its own while the context lasts.

    The lifespan holds the SDK's task group, which must be left in the task that entered it;
    pytest-asyncio sets a fixture up and tears it down in different tasks.
    """
    ready, stop = asyncio.Event(), asyncio.Event()

    async def run() -> None:
        async with app.router.lifespan_context(app):
            ready.set()
            await stop.wait()

    task = asyncio.create_task(run())
    waiter = asyncio.create_task(ready.wait())
    await asyncio.wait([task, waiter], return_when=asyncio.FIRST_COMPLETED)
    if task.done():
        waiter.cancel()
        task.result()  # startup failed: raise why
    try:
        yield app
    finally:
        stop.set()
        await task


@asynccontextmanager
async def serving(app: Starlette) -> AsyncIterator[str]:
    """Run ``app`` under uvicorn on a free loopback port; the base URL while it runs."""
    config = uvicorn.Config(
        app, host="127.0.0.1", port=0, lifespan="on", ws="none", log_config=None, access_log=False
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task
