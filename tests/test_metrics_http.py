"""``GET /metrics`` over a real socket (D30): off unless configured, guarded by its own token
on the app, or plain on a listener of its own; what a scrape shows and never shows."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta

import httpx
import pytest
from fakes._server import serve
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from unified_messaging import ManualClock, Messenger
from unified_messaging._observability.prometheus import PrometheusMetrics
from unified_messaging.asgi import create_app, create_metrics_app
from unified_messaging.providers.simulator import SimulatorSettings
from unified_messaging.testing import TestBed, create_testbed

TOKEN = "scrape-token-0123456789abcdef"
NUMBER = "+905551234567"
BODY = "Gizli mesaj: kod 4242"


def sample(text: str, name: str, **labels: str) -> float | None:
    for family in text_string_to_metric_families(text):
        for found in family.samples:
            if found.name == name and found.labels == labels:
                return found.value
    return None


@pytest.fixture
async def bed() -> AsyncIterator[TestBed]:
    messenger = Messenger(
        clock=ManualClock(),
        metrics=PrometheusMetrics(CollectorRegistry()),
        simulator_settings=SimulatorSettings(report_delay=timedelta(hours=1)),
    )
    test_bed = await create_testbed(messenger=messenger, recipient_limit=None)
    yield test_bed
    await messenger.aclose()


async def get(url: str, **options: object) -> httpx.Response:
    async with httpx.AsyncClient() as client:  # the servers run on this test's event loop
        return await client.get(url, **options)  # type: ignore[arg-type]


async def post(url: str, **options: object) -> httpx.Response:
    async with httpx.AsyncClient() as client:
        return await client.post(url, **options)  # type: ignore[arg-type]


async def send(base_url: str, bed: TestBed) -> None:
    async with httpx.AsyncClient(base_url=base_url) as client:
        answer = await client.post(
            "/v1/messages",
            headers={"Authorization": f"Bearer {bed.api_key}"},
            json={"to": NUMBER, "body": BODY},
        )
    assert answer.status_code == 201, answer.text


async def test_without_a_token_the_app_has_no_metrics_route(bed: TestBed) -> None:
    async with serve(create_app(bed.messenger, mcp=False)) as url:
        answer = await get(f"{url}/metrics", headers={"Authorization": f"Bearer {TOKEN}"})

    assert answer.status_code == 404
    assert answer.json()["error"]["code"] == "NOT_FOUND"


async def test_the_token_guards_the_scrape(bed: TestBed) -> None:
    async with serve(create_app(bed.messenger, mcp=False, metrics_token=TOKEN)) as url:
        await send(url, bed)
        missing = await get(f"{url}/metrics")
        wrong = await get(f"{url}/metrics", headers={"Authorization": f"Bearer {TOKEN}x"})
        api_key = await get(f"{url}/metrics", headers={"Authorization": f"Bearer {bed.api_key}"})
        basic = await get(f"{url}/metrics", headers={"Authorization": f"Basic {TOKEN}"})
        right = await get(f"{url}/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
        posted = await post(f"{url}/metrics", headers={"Authorization": f"Bearer {TOKEN}"})

    for refused in (missing, wrong, api_key, basic):
        assert refused.status_code == 401
        assert refused.json()["error"]["code"] == "UNAUTHORIZED"
        assert refused.headers["www-authenticate"] == "Bearer"
        assert "metrics token" in refused.json()["error"]["message"]
        assert "API key" not in refused.json()["error"]["message"]
        assert "um_messages_total" not in refused.text
    assert right.status_code == 200
    assert right.headers["content-type"].startswith("text/plain; version=0.0.4")
    assert sample(right.text, "um_messages_total", provider="sms_a", channel="sms",
                  outcome="sent", mode="test") == 1  # fmt: skip
    # The send's simulated report is an hour away: one scheduled DLR item, none due yet.
    assert sample(right.text, "um_work_items", kind="dlr_simulated", state="scheduled") == 1
    assert sample(right.text, "um_work_items", kind="dlr_simulated", state="due") == 0
    assert sample(right.text, "um_store_up") == 1
    assert "um_circuit_state{" not in right.text  # every breaker closed: no series
    assert posted.status_code == 405


async def test_a_listener_of_its_own_serves_only_metrics(bed: TestBed) -> None:
    async with (
        serve(create_app(bed.messenger, mcp=False)) as api,
        serve(create_metrics_app(bed.messenger)) as metrics,
    ):
        await send(api, bed)
        scrape = await get(f"{metrics}/metrics")
        on_api = await get(f"{api}/metrics")
        other = await get(f"{metrics}/v1/health")

    assert scrape.status_code == 200
    assert sample(scrape.text, "um_attempts_total", provider="sms_a", result="accepted",
                  mode="test") == 1  # fmt: skip
    assert on_api.status_code == 404
    assert other.status_code == 404
    assert other.json()["error"]["code"] == "NOT_FOUND"


async def test_a_listener_of_its_own_may_want_the_token_too(bed: TestBed) -> None:
    async with serve(create_metrics_app(bed.messenger, token=TOKEN)) as metrics:
        missing = await get(f"{metrics}/metrics")
        right = await get(f"{metrics}/metrics", headers={"Authorization": f"Bearer {TOKEN}"})

    assert missing.status_code == 401
    assert right.status_code == 200


async def test_the_scrape_holds_no_secret_number_body_or_workspace(bed: TestBed) -> None:
    webhook = await bed.messenger.webhooks.create(bed.workspace.id, "https://hooks.example.com/um")
    async with serve(create_app(bed.messenger, mcp=False, metrics_token=TOKEN)) as url:
        await send(url, bed)
        text = (await get(f"{url}/metrics", headers={"Authorization": f"Bearer {TOKEN}"})).text

    assert "um_messages_total" in text
    for secret in (TOKEN, bed.api_key, webhook.secret, NUMBER, NUMBER[1:], NUMBER[-10:], BODY,
                   "4242", bed.workspace.id):  # fmt: skip
        assert secret not in text


def test_a_token_needs_prometheus_metrics_and_a_decent_length(bed: TestBed) -> None:
    with pytest.raises(ValueError, match=r"PrometheusMetrics"):
        create_app(Messenger(), metrics_token=TOKEN)
    for bad in ("short", "x" * 257, "has space in it ok", "ünïcödé-token-0123456"):
        with pytest.raises(ValueError, match="16 to 256 characters") as caught:
            create_app(bed.messenger, metrics_token=bad)
        assert bad not in str(caught.value)
