"""Fixtures of the REST edge's tests: the app over a testbed, HTTP clients, a live setup."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack

import httpx
import pytest
from _asgi_support import ClientFactory, FakeLiveAdapter, LiveSetup, bearer
from starlette.applications import Starlette

from unified_messaging import Connection, ManualClock, Messenger
from unified_messaging.asgi import create_app
from unified_messaging.providers import ProviderAdapter
from unified_messaging.testing import TestBed


@pytest.fixture
def app(bed: TestBed) -> Starlette:
    return create_app(bed.messenger)


@pytest.fixture
async def make_client() -> AsyncIterator[ClientFactory]:
    """``await make_client(app, peer=("203.0.113.5", 4000), headers=...)``: an in-process client."""
    async with AsyncExitStack() as stack:

        async def factory(
            app: Starlette,
            *,
            peer: tuple[str, int] = ("127.0.0.1", 40000),
            headers: Mapping[str, str] | None = None,
            base_url: str = "http://test",
        ) -> httpx.AsyncClient:
            transport = httpx.ASGITransport(app=app, client=peer)
            client = httpx.AsyncClient(transport=transport, base_url=base_url, headers=headers)
            return await stack.enter_async_context(client)

        yield factory


@pytest.fixture
async def client(app: Starlette, bed: TestBed, make_client: ClientFactory) -> httpx.AsyncClient:
    """Authenticated with the testbed's test key."""
    return await make_client(app, headers=bearer(bed.api_key))


@pytest.fixture
async def anonymous(app: Starlette, make_client: ClientFactory) -> httpx.AsyncClient:
    return await make_client(app)


@pytest.fixture
async def live() -> AsyncIterator[LiveSetup]:
    """A live workspace on one SMS connection whose provider is a :class:`FakeLiveAdapter`."""
    adapter = FakeLiveAdapter()

    def factory(connection: Connection, credentials: Mapping[str, str]) -> ProviderAdapter:
        return adapter  # type: ignore[return-value]

    clock = ManualClock()
    messenger = Messenger(clock=clock, live_adapters={"sms_a": factory})
    async with messenger:
        workspace = await messenger.workspaces.create("live")
        await messenger.connections.add(
            workspace.id, "sms_a", credentials={"username": "u", "password": "p"},
            default_sender="ACME",
        )  # fmt: skip
        key = await messenger.keys.create(workspace.id, livemode=True)
        yield LiveSetup(messenger, workspace, key.secret, adapter, clock)
