"""``GET /v1/stats``: the figures of known traffic (``_stats_traffic``) over REST on the memory
store, SQLite and PostgreSQL; the key decides workspace and mode; bad queries are 400s; the
OpenAPI document describes it; and ``AsyncClient.stats`` reads the same answer."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from _asgi_support import ClientFactory, bearer, code_of, error_of
from _sql_apps import BACKENDS
from _stats_traffic import send_traffic, stats_bed

from unified_messaging import AsyncClient
from unified_messaging._errors import RequestInvalid
from unified_messaging.asgi import create_app
from unified_messaging.testing import TestBed


@pytest.fixture(params=["memory", *BACKENDS])
async def bed(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[TestBed]:
    async with stats_bed(request.param, tmp_path) as bed:
        await send_traffic(bed)
        yield bed


@pytest.fixture
async def api(bed: TestBed, make_client: ClientFactory) -> httpx.AsyncClient:
    app = create_app(bed.messenger, mcp=False, worker=False)
    return await make_client(app, headers=bearer(bed.api_key))


async def stats(api: httpx.AsyncClient, **params: str) -> dict[str, Any]:
    response = await api.get("/v1/stats", params=params)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    assert "ratelimit" in response.headers  # the same frame as every /v1 route
    body: dict[str, Any] = response.json()
    return body


async def test_the_last_24_hours_as_json(api: httpx.AsyncClient) -> None:
    body = await stats(api)

    assert {k: body[k] for k in ("window", "time_zone", "unit", "start", "end", "livemode")} == {
        "window": "24h",
        "time_zone": "UTC",
        "unit": "hour",
        "start": "2026-03-01T07:00:00Z",
        "end": "2026-03-02T07:00:00Z",
        "livemode": False,
    }
    assert body["messages"] == 8 and len(body["series"]) == 24
    assert body["series"][-1] == {
        "start": "2026-03-02T06:00:00Z",
        "end": "2026-03-02T07:00:00Z",
        "total": 2,
        "counts": {"queued": 0, "sent": 0, "delivered": 2, "expired": 0, "rejected": 0,
                   "failed": 0, "unknown": 0},
    }  # fmt: skip
    sms_a = body["providers"][0]
    assert sms_a["provider"] == "sms_a" and sms_a["delivery_rate"] == 0.625
    assert sms_a["delivery_times"] == {
        "delivered": 5,
        "p50_ms": 4000,
        "p95_ms": 4000,
        "histogram": [{"le_ms": 4000, "count": 5}],
    }
    assert body["fallback"] == {"messages": 8, "fell_back": 1, "rate": 0.125}
    assert body["verifications"] == {"started": 2, "approved": 1, "conversion": 0.5}


async def test_thirty_days_by_day_in_istanbul(api: httpx.AsyncClient) -> None:
    body = await stats(api, window="30d", time_zone="Europe/Istanbul")

    assert (body["unit"], len(body["series"]), body["messages"]) == ("day", 30, 10)
    assert body["start"] == "2026-01-31T21:00:00Z"  # 1 February, 00:00 in Istanbul
    assert [b["start"] for b in body["series"] if b["total"]] == [
        "2026-02-27T21:00:00Z",
        "2026-03-01T21:00:00Z",
    ]


async def test_a_live_key_sees_only_live_figures(bed: TestBed, make_client: ClientFactory) -> None:
    key = await bed.messenger.keys.create(bed.workspace.id, livemode=True)
    app = create_app(bed.messenger, mcp=False, worker=False)
    live = await make_client(app, headers=bearer(key.secret))

    body = await stats(live, window="7d")

    assert (body["livemode"], body["messages"], body["providers"]) == (True, 0, [])
    assert body["fallback"]["rate"] is None and body["verifications"]["conversion"] is None


async def test_another_workspaces_key_sees_none_of_it(
    bed: TestBed, make_client: ClientFactory
) -> None:
    other = await bed.messenger.workspaces.create("other")
    key = await bed.messenger.keys.create(other.id, livemode=False)
    app = create_app(bed.messenger, mcp=False, worker=False)

    body = await stats(await make_client(app, headers=bearer(key.secret)), window="30d")

    assert body["messages"] == 0


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("window=1y", "window"),
        ("window=", "window"),
        ("window=24H", "window"),
        ("time_zone=Mars%2FOlympus", "time_zone"),
        ("time_zone=..%2F..%2Fetc%2Fpasswd", "time_zone"),
        ("time_zone=%00", "time_zone"),
        ("time_zone=" + "A" * 5000, "time_zone"),
        ("window=7d&window=30d", "window"),
        ("since=2026-01-01", "since"),
        ("%ff=1", "\ufffd"),
    ],
)
async def test_a_bad_query_is_a_400_naming_the_parameter(
    api: httpx.AsyncClient, query: str, field: str
) -> None:
    response = await api.get(f"/v1/stats?{query}")

    assert code_of(response) == "VALIDATION_ERROR", response.text
    assert response.status_code == 400
    details = error_of(response)["details"]
    assert isinstance(details, list) and [d["field"] for d in details] == [field]


async def test_no_key_is_a_401_and_only_get_is_allowed(
    bed: TestBed, make_client: ClientFactory, api: httpx.AsyncClient
) -> None:
    app = create_app(bed.messenger, mcp=False, worker=False)
    anonymous = await make_client(app)

    assert code_of(await anonymous.get("/v1/stats")) == "UNAUTHORIZED"
    assert (await api.post("/v1/stats", json={})).status_code == 405


async def test_the_openapi_document_describes_it(api: httpx.AsyncClient) -> None:
    document = (await api.get("/v1/openapi.json")).json()
    operation = document["paths"]["/v1/stats"]["get"]

    assert operation["operationId"] == "getStats"
    parameters = {p["name"]: p["schema"] for p in operation["parameters"] if p["in"] == "query"}
    assert parameters["window"] == {"enum": ["24h", "7d", "30d"], "type": "string",
                                    "default": "24h"}  # fmt: skip
    assert parameters["time_zone"]["default"] == "UTC"
    ok = operation["responses"]["200"]["content"]["application/json"]["schema"]
    assert ok == {"$ref": "#/components/schemas/StatsOverview"}
    assert set(operation["responses"]) >= {"200", "400", "401", "429"}
    schema = document["components"]["schemas"]["StatsOverview"]
    assert {"series", "providers", "fallback", "verifications"} <= set(schema["required"])


async def test_the_async_client_reads_the_same_figures(
    bed: TestBed, api: httpx.AsyncClient
) -> None:
    app = create_app(bed.messenger, mcp=False, worker=False)
    transport = httpx.ASGITransport(app=app)
    http = httpx.AsyncClient(
        transport=transport, base_url="http://test", headers=bearer(bed.api_key)
    )
    async with AsyncClient("http://test", bed.api_key, http_client=http) as client:
        figures = await client.stats.overview(window="7d", time_zone="Europe/Istanbul")
        with pytest.raises(RequestInvalid):
            await client.stats.overview(time_zone="Nowhere/Land")  # before any request

    assert figures.model_dump(mode="json") == await stats(
        api, window="7d", time_zone="Europe/Istanbul"
    )
