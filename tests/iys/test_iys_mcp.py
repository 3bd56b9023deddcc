"""A consent recorded through the MCP tool ``create_consent`` (the official SDK client) is
registered with İYS by the worker, once; ``get_consent`` shows where it stands. On SQLite
and PostgreSQL."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx2
import pytest
from _iys_support import iys_rig
from _sql_apps import BACKENDS
from mcp.client import ClientSession
from mcp.client.streamable_http import streamable_http_client
from starlette.applications import Starlette

from unified_messaging.asgi import create_app


@contextlib.asynccontextmanager
async def started(app: Starlette) -> AsyncIterator[None]:
    ready, stop = asyncio.Event(), asyncio.Event()

    async def run() -> None:
        async with app.router.lifespan_context(app):
            ready.set()
            await stop.wait()

    task = asyncio.create_task(run())
    await ready.wait()
    try:
        yield
    finally:
        stop.set()
        await task


async def call(app: Starlette, key: str, name: str, arguments: dict[str, object]) -> object:
    headers = {"Authorization": f"Bearer {key}"}
    transport = httpx2.ASGITransport(app=app, client=("127.0.0.1", 40000))
    async with (
        httpx2.AsyncClient(transport=transport, headers=headers) as http,
        streamable_http_client("http://testserver/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        result = await session.call_tool(name, arguments)
    assert not result.is_error, result.content
    (block,) = result.content
    assert block.type == "text"
    return json.loads(block.text)


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_consent_made_through_mcp_is_registered_once(backend: str, tmp_path: Path) -> None:
    async with iys_rig(backend, tmp_path) as r:
        key = await r.messenger.keys.create(r.workspace_id, livemode=True)
        app = create_app(r.messenger, worker=False)
        async with started(app):
            created = await call(app, key.secret, "create_consent",
                                 {"recipient": "0532 100 00 01", "status": "ONAY",
                                  "source": "HS_WEB"})  # fmt: skip
            assert isinstance(created, dict) and created["iys_state"] == "pending"
            await r.work()
            shown = await call(app, key.secret, "get_consent", {"consent_id": created["id"]})

        assert isinstance(shown, dict)
        assert shown["iys_state"] == "registered" and shown["iys_transaction_id"]
        assert r.fake.posts_of("+905321000001") == 1
