"""The app's first request starts what no lifespan started (``asgi/_runtime``): once, however
many requests come at once; a start-up that fails is the contract's 503 and the next request
tries again; a lifespan that begins later takes over."""

from __future__ import annotations

import asyncio

import httpx
from _asgi_support import bearer

from unified_messaging import Messenger, StorageUnavailable
from unified_messaging.asgi import app_lifespan, create_app
from unified_messaging.store.memory import MemoryStore
from unified_messaging.testing import create_testbed


class FlakyStore(MemoryStore):
    """A memory store whose first ``fail`` opens raise, as a database that is not up yet."""

    def __init__(self) -> None:
        super().__init__()
        self.fail = self.opened = self.closed = 0

    async def open(self) -> None:
        self.opened += 1
        if self.opened <= self.fail:
            raise StorageUnavailable

    async def close(self) -> None:
        self.closed += 1


async def client_for(store: FlakyStore, *, fail: int = 0) -> httpx.AsyncClient:
    bed = await create_testbed(messenger=Messenger(store))
    # The testbed opened it once: count (and fail) the app's opens only.
    store.opened, store.fail = 0, fail
    transport = httpx.ASGITransport(app=create_app(bed.messenger, worker=False))
    return httpx.AsyncClient(transport=transport, base_url="http://t", headers=bearer(bed.api_key))


async def test_concurrent_first_requests_start_it_once() -> None:
    store = FlakyStore()
    client = await client_for(store)
    async with client:
        answers = await asyncio.gather(*(client.get("/v1/messages/msg_x") for _ in range(8)))
    assert {answer.status_code for answer in answers} == {404}
    assert store.opened == 1


async def test_a_start_that_fails_is_a_503_and_the_next_request_tries_again() -> None:
    store = FlakyStore()
    client = await client_for(store, fail=1)
    async with client:
        first = await client.get("/v1/messages/msg_x")
        second = await client.get("/v1/messages/msg_x")
    assert first.status_code == 503
    assert first.json()["error"]["code"] == "STORAGE_UNAVAILABLE"
    assert first.headers["x-request-id"]
    assert second.status_code == 404
    assert store.opened == 2


async def test_a_lifespan_that_begins_later_takes_over() -> None:
    store = FlakyStore()
    bed = await create_testbed(messenger=Messenger(store))
    app = create_app(bed.messenger)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        assert (await client.get("/v1/health")).status_code == 200  # started by the request
        closed_before = store.closed
        async with app_lifespan(app)(app):
            # The request's run was stopped (closing the messenger), the lifespan's started.
            assert store.closed == closed_before + 1
            assert (await client.get("/v1/health")).status_code == 200
        assert store.closed == closed_before + 2
