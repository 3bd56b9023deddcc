"""The app mounted in a Starlette or a FastAPI host, as docs/rest.md shows, over real uvicorn.

A mounted app gets no lifespan events, so before the app started what it runs beside its
requests on its first request, ``/mcp`` answered 500 and no delivery report ever arrived.
Here the host runs nothing of the app's: a send with a test key gets its simulated report
through the worker, the MCP SDK's client calls a tool, and the app says once (a warning) that
it started them itself. A host that runs ``app_lifespan`` gets no such warning. The last test
runs a host in a process of its own and stops it as a person would (SIGINT): what the first
request started stops when the event loop ends, cleanly.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import httpx
import pytest
import uvicorn
from fastapi import FastAPI
from mcp.client import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from starlette.applications import Starlette
from starlette.routing import Mount

from unified_messaging import ManualClock, Messenger, Vault, generate_key_spec
from unified_messaging.asgi import app_lifespan, create_app
from unified_messaging.store.sql import store_from_url
from unified_messaging.testing import create_testbed

NORMAL: Final = "+905551234567"
HOSTS: Final = ["starlette", "fastapi"]
HOST_SCRIPT: Final = Path(__file__).with_name("_mounted_host.py")
#: Bounds for waiting on the worker and on a subprocess; never a pass/fail timing.
PATIENCE: Final = 30.0
#: One master key for every messenger on the test's file, the host process's too: a durable
#: store needs one (D21), and what one messenger seals the next must open.
MASTER_KEYS: Final = generate_key_spec("k1")
VAULT: Final = Vault.from_spec(MASTER_KEYS)


def mounted(kind: str, messaging: Starlette, *, with_lifespan: bool = False) -> Any:
    """A host of ``kind`` with the app at ``/messaging``, as docs/rest.md shows it."""
    lifespan = app_lifespan(messaging) if with_lifespan else None
    if kind == "fastapi":
        api = FastAPI(lifespan=lifespan)
        api.mount("/messaging", messaging)
        return api
    return Starlette(routes=[Mount("/messaging", app=messaging)], lifespan=lifespan)


@asynccontextmanager
async def serving(app: Any) -> AsyncIterator[str]:
    """``app`` under uvicorn on a free loopback port (its lifespan on); the base URL."""
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


async def eventually(get: Callable[[], Awaitable[Any]], done: Callable[[Any], bool]) -> Any:
    """``get()`` until ``done`` holds; fails after PATIENCE seconds."""
    deadline = asyncio.get_running_loop().time() + PATIENCE
    while True:
        value = await get()
        if done(value) or asyncio.get_running_loop().time() > deadline:
            return value
        await asyncio.sleep(0.05)


@pytest.fixture
async def sqlite_workspace(tmp_path: Path) -> tuple[str, str]:
    """A migrated SQLite file with a test-mode workspace on every provider: (URL, test key).

    Made by a messenger of its own, closed again: the host's messenger starts unopened.
    """
    url = f"sqlite+aiosqlite:///{tmp_path / 'um.db'}"
    bed = await create_testbed(messenger=Messenger(store_from_url(url), vault=VAULT))
    await bed.messenger.aclose()
    return url, bed.api_key


async def call_tools(base_url: str, key: str) -> tuple[list[str], dict[str, Any]]:
    """tools/list and a send_message call, through the MCP SDK's own client."""
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {key}"})
    async with (
        http,
        streamable_http_client(f"{base_url}/messaging/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        names = [tool.name for tool in (await session.list_tools()).tools]
        result = await session.call_tool("send_message", {"to": NORMAL, "body": "Selam"})
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return names, result.structured_content


@pytest.mark.parametrize("kind", HOSTS)
async def test_mounted_without_its_lifespan_the_worker_and_mcp_run(
    kind: str, sqlite_workspace: tuple[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    url, key = sqlite_workspace
    clock = ManualClock(datetime.now(UTC).replace(microsecond=0))
    messenger = Messenger(store_from_url(url), clock=clock, vault=VAULT)  # the app opens it
    host = mounted(kind, create_app(messenger))
    with caplog.at_level(logging.WARNING, logger="unified_messaging.asgi"):
        async with serving(host) as base_url:
            names, sent_by_mcp = await call_tools(base_url, key)
            async with httpx.AsyncClient(
                base_url=f"{base_url}/messaging", headers={"Authorization": f"Bearer {key}"}
            ) as client:
                sent = await client.post("/v1/messages", json={"to": NORMAL, "body": "Merhaba"})
                assert sent.status_code == 201, sent.text
                assert sent.json()["status"] == "sent"
                job_id = sent.json()["job_id"]
                clock.advance(3)  # DESIGN: the simulated report is due 2.1-2.5 s after a send

                async def record() -> dict[str, Any]:
                    response = await client.get(f"/v1/messages/{job_id}")
                    assert response.status_code == 200, response.text
                    body: dict[str, Any] = response.json()
                    return body

                final = await eventually(record, lambda r: r["status"] == "delivered")
    assert "send_message" in names
    assert sent_by_mcp["status"] == "sent"
    assert final["status"] == "delivered"
    assert final["dlr"]["status"] == "delivered"
    # Said once, however many requests came, and it names the clean way.
    (warning,) = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert "app_lifespan(app)" in warning.getMessage()


@pytest.mark.parametrize("kind", HOSTS)
async def test_a_host_that_runs_app_lifespan_gets_no_warning(
    kind: str, sqlite_workspace: tuple[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    url, key = sqlite_workspace
    messaging = create_app(Messenger(store_from_url(url), vault=VAULT))
    with caplog.at_level(logging.WARNING, logger="unified_messaging.asgi"):
        async with serving(mounted(kind, messaging, with_lifespan=True)) as base_url:
            names, sent = await call_tools(base_url, key)
    assert "send_message" in names
    assert sent["status"] == "sent"
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []


@pytest.mark.parametrize("kind", HOSTS)
def test_what_a_request_started_stops_when_the_host_stops(
    kind: str, sqlite_workspace: tuple[str, str]
) -> None:
    url, key = sqlite_workspace
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "UM_MASTER_KEYS": MASTER_KEYS}
    process = subprocess.Popen(  # noqa: S603 - our own interpreter and fixed arguments
        [sys.executable, str(HOST_SCRIPT), kind, url],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert process.stdout is not None
        ready = json.loads(process.stdout.readline())
        base_url = f"http://127.0.0.1:{ready['port']}/messaging"
        sent = httpx.post(
            f"{base_url}/v1/messages",
            json={"to": NORMAL, "body": "Merhaba"},
            headers={"Authorization": f"Bearer {key}"},
            timeout=PATIENCE,
        )
        assert sent.status_code == 201, sent.text
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=PATIENCE)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, stderr
    assert stderr.count("started the messenger, the worker and /mcp itself") == 1, stderr
    stopped = "stopped the messenger, the worker and /mcp, which a request had started"
    assert stopped in stderr, stderr
    assert "Traceback" not in stderr, stderr
    assert "was destroyed but it is pending" not in stderr, stderr
