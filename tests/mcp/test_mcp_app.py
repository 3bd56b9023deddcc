"""/mcp in the app: mounting under a host, the lifespan that runs the SDK's session manager,
and the app without the endpoint."""

from __future__ import annotations

import logging

import httpx
import pytest
from _mcp_support import NORMAL, Harness, bearer, data_of, rpc, started
from starlette.applications import Starlette
from starlette.routing import Mount

from unified_messaging import Messenger
from unified_messaging.asgi import app_lifespan, create_app, messenger_lifespan
from unified_messaging.store.memory import MemoryStore
from unified_messaging.testing import TestBed

# --------------------------------------------------------------------------- mounting


@pytest.fixture
def host(bed: TestBed) -> Starlette:
    messaging = create_app(bed.messenger)
    return Starlette(routes=[Mount("/messaging", app=messaging)], lifespan=app_lifespan(messaging))


async def test_mounted_under_a_prefix_the_sdk_client_works(host: Starlette, bed: TestBed) -> None:
    async with started(host):
        mcp = Harness(bed, "http://testserver", host, path="/messaging/mcp")
        async with mcp.session() as session:
            sent = await session.call_tool("send_message", {"to": NORMAL, "body": "x"})
            assert not sent.is_error
            job_id = data_of(sent)["job_id"]
            record = await session.call_tool("get_message", {"job_id": job_id})
    assert data_of(record)["status"] == "sent"


async def test_mounted_trailing_slash_redirects_within_the_prefix(
    host: Starlette, bed: TestBed
) -> None:
    async with started(host):
        mcp = Harness(bed, "http://testserver", host, path="/messaging/mcp/")
        response = await mcp.post(rpc("tools/list"))
    assert response.status_code == 307
    assert response.headers["location"] == "http://testserver/messaging/mcp"


async def test_a_host_that_only_opens_the_messenger_still_gets_mcp(
    bed: TestBed, caplog: pytest.LogCaptureFixture
) -> None:
    # It was a 500: the mounted app's lifespan never ran. Now the first request starts /mcp
    # and says once how to start it with the host instead.
    host = Starlette(
        routes=[Mount("/messaging", app=create_app(bed.messenger))],
        lifespan=messenger_lifespan(bed.messenger),
    )
    async with started(host):
        mcp = Harness(bed, "http://testserver", host, path="/messaging/mcp")
        with caplog.at_level(logging.WARNING, logger="unified_messaging.asgi"):
            first = await mcp.post(rpc("tools/list"))
            second = await mcp.post(rpc("tools/list"))
    assert (first.status_code, second.status_code) == (200, 200)
    (record,) = caplog.records
    assert "app_lifespan" in record.getMessage()


# --------------------------------------------------------------------------- lifespan


class CountingStore(MemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.opened = self.closed = 0

    async def open(self) -> None:
        self.opened += 1

    async def close(self) -> None:
        self.closed += 1


async def test_app_lifespan_opens_and_closes_the_messenger() -> None:
    store = CountingStore()
    app = create_app(Messenger(store))
    async with app_lifespan(app)(app):
        assert (store.opened, store.closed) == (1, 0)
    assert (store.opened, store.closed) == (1, 1)


async def test_the_app_can_be_started_again(app: Starlette, bed: TestBed) -> None:
    for _ in range(2):
        async with started(app):
            response = await Harness(bed, "http://testserver", app).post(rpc("tools/list"))
            assert response.status_code == 200


async def test_one_app_runs_in_one_lifespan_at_a_time(app: Starlette) -> None:
    async with started(app):
        with pytest.raises(RuntimeError, match="already running"):
            async with app_lifespan(app)(app):
                pass


async def test_app_lifespan_takes_only_apps_from_create_app() -> None:
    with pytest.raises(TypeError, match="create_app"):
        app_lifespan(Starlette())


async def test_without_a_running_lifespan_mcp_starts_on_the_first_request(
    app: Starlette, bed: TestBed
) -> None:
    response = await Harness(bed, "http://testserver", app).post(rpc("tools/list"))
    assert response.status_code == 200
    assert response.headers["x-request-id"]


# --------------------------------------------------------------------------- without /mcp


async def test_an_app_without_mcp_answers_404_there(bed: TestBed) -> None:
    app = create_app(bed.messenger, mcp=False)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        response = await client.post("/mcp", json=rpc("tools/list"), headers=bearer(bed.api_key))
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "NOT_FOUND"


async def test_rest_and_mcp_share_one_app(bed: TestBed) -> None:
    app = create_app(bed.messenger, mcp=True)
    async with started(app):
        mcp = Harness(bed, "http://testserver", app)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as rest:
            sent = await rest.post(
                "/v1/messages", json={"to": NORMAL, "body": "x"}, headers=bearer(bed.api_key)
            )
        record = data_of(await mcp.call("get_message", {"job_id": sent.json()["job_id"]}))
    assert record["job_id"] == sent.json()["job_id"]
