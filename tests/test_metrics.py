"""D30 through the façade: what a ``Messenger(metrics=PrometheusMetrics(...))`` counts.

Each test has a fresh ``CollectorRegistry`` and a ManualClock: delivery times are exact.
Live sends go to simulators standing in for live adapters (the metric of provider calls
counts live calls only); webhook attempts go to a real receiver on loopback.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import timedelta

import pytest
from fakes._server import serve
from prometheus_client import CollectorRegistry
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from unified_messaging import (
    ManualClock,
    Messenger,
    Principal,
    QuotaExceeded,
    RateLimited,
    RecipientRateLimited,
)
from unified_messaging._domain import Connection
from unified_messaging._observability.metrics import take_snapshot
from unified_messaging._observability.prometheus import PrometheusMetrics
from unified_messaging.asgi._metrics import MessengerCircuits
from unified_messaging.providers.base import SubmitOutcome, SubmitRequest
from unified_messaging.providers.simulator import Simulator, SimulatorSettings
from unified_messaging.testing import TestBed, create_testbed
from unified_messaging.webhooks._sender import TargetPolicy

NORMAL = "+905551234567"
REPORT_DELAY = timedelta(seconds=30)


def magic(suffix: int) -> str:
    return f"+9055500000{suffix:02d}"


class Metered:
    """A messenger with Prometheus metrics on a registry of the test's own."""

    def __init__(self, registry: CollectorRegistry, messenger: Messenger) -> None:
        self.registry = registry
        self.messenger = messenger

    def value(self, name: str, **labels: str) -> float:
        found = self.registry.get_sample_value(name, labels)
        return 0.0 if found is None else found

    async def settle(self) -> int:
        return await self.messenger.worker().run_until_idle()


def metered(**options: object) -> Metered:
    registry = CollectorRegistry()
    options.setdefault("clock", ManualClock())
    messenger = Messenger(metrics=PrometheusMetrics(registry), **options)  # type: ignore[arg-type]
    return Metered(registry, messenger)


@pytest.fixture
async def bed() -> AsyncIterator[tuple[Metered, TestBed]]:
    world = metered(simulator_settings=SimulatorSettings(report_delay=REPORT_DELAY))
    test_bed = await create_testbed(messenger=world.messenger, recipient_limit=None)
    yield world, test_bed
    await world.messenger.aclose()


# -- sends --------------------------------------------------------------------------------------


async def test_a_send_counts_its_message_and_its_attempt(bed: tuple[Metered, TestBed]) -> None:
    world, test_bed = bed

    await world.messenger.send(test_bed.principal, {"to": NORMAL, "body": "Merhaba"})

    assert world.value("um_messages_total", provider="sms_a", channel="sms", outcome="sent",
                       mode="test") == 1  # fmt: skip
    assert world.value("um_attempts_total", provider="sms_a", result="accepted", mode="test") == 1
    # Test keys reach the simulator, never a provider: no provider call is timed.
    assert world.value("um_provider_request_seconds_count", provider="sms_a",
                       outcome="accepted") == 0  # fmt: skip


async def test_a_fallback_at_submit_counts_both_attempts_and_the_move(
    bed: tuple[Metered, TestBed],
) -> None:
    world, test_bed = bed

    await world.messenger.send(
        test_bed.principal, {"to": magic(11), "body": "Merhaba", "fallback": ["sms_b"]}
    )

    assert world.value("um_attempts_total", provider="sms_a", result="rejected", mode="test") == 1
    assert world.value("um_attempts_total", provider="sms_b", result="accepted", mode="test") == 1
    assert world.value("um_fallbacks_total", from_provider="sms_a", to_provider="sms_b",
                       mode="test") == 1  # fmt: skip
    assert world.value("um_messages_total", provider="sms_b", channel="sms", outcome="sent",
                       mode="test") == 1  # fmt: skip


async def test_a_chat_message_is_delivered_at_send(bed: tuple[Metered, TestBed]) -> None:
    world, test_bed = bed

    await world.messenger.send(test_bed.principal, {"to": "12345", "body": "hi",
                                                    "provider": "chatbot"})  # fmt: skip

    assert world.value("um_messages_total", provider="chatbot", channel="chatbot",
                       outcome="delivered", mode="test") == 1  # fmt: skip


async def test_bulk_items_refused_before_any_provider_are_rejected(
    bed: tuple[Metered, TestBed],
) -> None:
    world, test_bed = bed

    await world.messenger.send_bulk(
        test_bed.principal,
        {"items": [{"to": to, "body": "Merhaba"} for to in (NORMAL, "not a number", magic(1))]},
    )

    sms = {"provider": "sms_a", "channel": "sms", "mode": "test"}
    assert world.value("um_messages_total", **sms, outcome="sent") == 1
    assert world.value("um_messages_total", **sms, outcome="rejected") == 1  # bad recipient
    assert world.value("um_messages_total", **sms, outcome="failed") == 1  # provider refused
    assert world.value("um_attempts_total", provider="sms_a", result="rejected", mode="test") == 1


# -- reports and the time to a final state ------------------------------------------------------


async def test_a_report_settles_the_message_and_its_delivery_time_is_observed(
    bed: tuple[Metered, TestBed],
) -> None:
    world, test_bed = bed
    await world.messenger.send(test_bed.principal, {"to": NORMAL, "body": "Merhaba"})
    await world.messenger.send(test_bed.principal, {"to": magic(4), "body": "Merhaba"})
    test_bed.clock.advance(REPORT_DELAY)  # type: ignore[attr-defined]

    await world.settle()

    delivered = {"provider": "sms_a", "status": "delivered", "mode": "test"}
    expired = {"provider": "sms_a", "status": "expired", "mode": "test"}
    assert world.value("um_reports_total", **delivered) == 1
    assert world.value("um_reports_total", **expired) == 1
    assert world.value("um_delivery_seconds_count", **delivered) == 1
    assert world.value("um_delivery_seconds_sum", **delivered) == REPORT_DELAY.total_seconds()
    assert world.value("um_delivery_seconds_bucket", **delivered, le="30.0") == 1
    assert world.value("um_delivery_seconds_bucket", **delivered, le="10.0") == 0
    assert world.value("um_delivery_seconds_sum", **expired) == REPORT_DELAY.total_seconds()


async def test_a_failed_report_with_fallback_left_counts_the_later_fallback(
    bed: tuple[Metered, TestBed],
) -> None:
    world, test_bed = bed
    await world.messenger.send(
        test_bed.principal, {"to": magic(6), "body": "Merhaba", "fallback": ["sms_b"]}
    )
    test_bed.clock.advance(REPORT_DELAY)  # type: ignore[attr-defined]

    await world.settle()  # sms_a reports failed: the worker hands the message to sms_b

    assert world.value("um_reports_total", provider="sms_a", status="failed", mode="test") == 1
    assert world.value("um_fallbacks_total", from_provider="sms_a", to_provider="sms_b",
                       mode="test") == 1  # fmt: skip
    assert world.value("um_attempts_total", provider="sms_b", result="accepted", mode="test") == 1
    # Not final yet: it went on to sms_b, so no delivery time is observed for sms_a.
    assert world.value("um_delivery_seconds_count", provider="sms_a", status="failed",
                       mode="test") == 0  # fmt: skip


# -- refusals -----------------------------------------------------------------------------------


async def test_flood_guard_refusals_count_per_request_and_per_bulk_item() -> None:
    world = metered()
    test_bed = await create_testbed(messenger=world.messenger, recipient_limit="1/1h")  # type: ignore[arg-type]
    auth = test_bed.principal
    await world.messenger.send(auth, {"to": NORMAL, "body": "one"})

    with pytest.raises(RecipientRateLimited):
        await world.messenger.send(auth, {"to": NORMAL, "body": "two"})
    await world.messenger.send_bulk(
        auth, {"items": [{"to": "+905551111111", "body": text} for text in ("x", "y")]}
    )

    assert world.value("um_rate_limited_total", code="RECIPIENT_RATE_LIMITED") == 2
    assert world.value("um_messages_total", provider="sms_a", channel="sms", outcome="rejected",
                       mode="test") == 1  # fmt: skip
    await world.messenger.aclose()


async def test_rate_limited_keys_are_counted() -> None:
    world = metered()
    test_bed = await create_testbed(messenger=world.messenger)
    key = await world.messenger.keys.create(test_bed.workspace.id, rate_limit=1, rate_burst=1)

    await world.messenger.access.authorize(key.secret, "127.0.0.1")
    with pytest.raises(RateLimited):
        await world.messenger.access.authorize(key.secret, "127.0.0.1")

    assert world.value("um_rate_limited_total", code="RATE_LIMITED") == 1
    await world.messenger.aclose()


# -- live sends: provider calls, quota, the circuit breaker -------------------------------------


class Switchable(Simulator):
    """A live adapter standing in for a provider that is up or down."""

    def __init__(self, connection: Connection, clock: ManualClock) -> None:
        super().__init__(connection.provider, clock=clock, settings=SimulatorSettings())
        self.up = True

    async def submit(self, request: SubmitRequest) -> SubmitOutcome:
        if not self.up:
            return SubmitOutcome.unavailable("The provider did not answer in time.")
        return await super().submit(request)

    async def submit_batch(self, requests: Sequence[SubmitRequest]) -> list[SubmitOutcome]:
        return [await self.submit(r) for r in requests]


class Live:
    def __init__(self) -> None:
        self.clock = ManualClock()
        self.adapters: dict[str, Switchable] = {}

        def build(connection: Connection, credentials: Mapping[str, str]) -> Switchable:
            return self.adapters.setdefault(connection.provider, Switchable(connection, self.clock))

        self.world = metered(clock=self.clock, live_adapters={"sms_a": build, "sms_b": build})

    async def principal(self, *, quota: int | None = None) -> Principal:
        m = self.world.messenger
        workspace = await m.workspaces.create("Acme", recipient_limit=None)
        await m.workspaces.set_monthly_quota(workspace.id, quota)
        for code in ("sms_a", "sms_b"):
            await m.connections.add(workspace.id, code, default_sender="ACME",
                                   credentials={"any": "thing"})  # fmt: skip
        return await m.principal(workspace.id, livemode=True)


@pytest.fixture
async def live() -> AsyncIterator[Live]:
    world = Live()
    yield world
    await world.world.messenger.aclose()


async def test_live_provider_calls_are_timed_by_outcome(live: Live) -> None:
    auth = await live.principal()
    await live.world.messenger.send(auth, {"to": NORMAL, "body": "x"})
    live.adapters["sms_a"].up = False

    await live.world.messenger.send(auth, {"to": NORMAL, "body": "x", "fallback": ["sms_b"]})

    value = live.world.value
    assert value("um_provider_request_seconds_count", provider="sms_a", outcome="accepted") == 1
    assert value("um_provider_request_seconds_count", provider="sms_a", outcome="unavailable") == 1
    assert value("um_provider_request_seconds_count", provider="sms_b", outcome="accepted") == 1
    assert value("um_attempts_total", provider="sms_a", result="unavailable", mode="live") == 1
    assert value("um_messages_total", provider="sms_b", channel="sms", outcome="sent",
                 mode="live") == 1  # fmt: skip


async def test_an_exhausted_quota_is_counted(live: Live) -> None:
    auth = await live.principal(quota=1)
    await live.world.messenger.send(auth, {"to": NORMAL, "body": "x"})

    with pytest.raises(QuotaExceeded):
        await live.world.messenger.send(auth, {"to": NORMAL, "body": "x"})

    assert live.world.value("um_rate_limited_total", code="QUOTA_EXCEEDED") == 1


async def test_a_hop_skipped_by_an_open_circuit_is_counted_as_such(live: Live) -> None:
    auth = await live.principal()
    await live.world.messenger.send(auth, {"to": NORMAL, "body": "x", "provider": "sms_b"})
    await live.world.messenger.send(auth, {"to": NORMAL, "body": "x"})
    live.adapters["sms_a"].up = False
    for _ in range(5):  # enough unavailable calls to open sms_a's circuit
        await live.world.messenger.send(auth, {"to": NORMAL, "body": "x", "fallback": ["sms_b"]})
    calls = {"provider": "sms_a", "outcome": "unavailable"}
    skipped = {"provider": "sms_a", "result": "circuit_open", "mode": "live"}
    before = live.world.value("um_provider_request_seconds_count", **calls)
    skipped_before = live.world.value("um_attempts_total", **skipped)

    await live.world.messenger.send(auth, {"to": NORMAL, "body": "x", "fallback": ["sms_b"]})

    assert live.world.value("um_attempts_total", **skipped) == skipped_before + 1
    assert live.world.value("um_provider_request_seconds_count", **calls) == before  # no call
    assert live.world.value("um_attempts_total", provider="sms_a", result="unavailable",
                            mode="live") == before  # fmt: skip
    # And a scrape shows the open circuit (only it: sms_b's is closed).
    messenger = live.world.messenger
    snapshot = await take_snapshot(
        messenger.store, messenger.clock.now(), MessengerCircuits(messenger)
    )
    exposition = messenger.metrics
    assert isinstance(exposition, PrometheusMetrics)
    text = exposition.exposition(snapshot).decode()
    assert re.search(
        r'um_circuit_state\{connection="conn_\w+",provider="sms_a",state="open"\} 1', text
    )
    assert 'provider="sms_b"' not in text.split("um_circuit_state", 1)[1]


# -- webhooks -----------------------------------------------------------------------------------


async def test_webhook_attempts_are_counted_by_result() -> None:
    answers = [500, 200]

    async def hook(request: Request) -> Response:
        return Response(status_code=answers.pop(0) if answers else 200)

    app = Starlette(routes=[Route("/hook", hook, methods=["POST"])])
    world = metered(
        webhook_policy=TargetPolicy(allow_private=True),
        webhook_schedule=(timedelta(seconds=1),),
        simulator_settings=SimulatorSettings(report_delay=timedelta(0)),
    )
    async with serve(app) as base_url:
        test_bed = await create_testbed(messenger=world.messenger, recipient_limit=None)
        await world.messenger.webhooks.create(
            test_bed.workspace.id, f"{base_url}/hook", events=["message.sent"]
        )
        await world.messenger.send(test_bed.principal, {"to": NORMAL, "body": "x"})
        await world.settle()  # the first attempt gets a 500
        test_bed.clock.advance(timedelta(seconds=1))  # type: ignore[attr-defined]
        await world.settle()  # the retry gets a 200

    assert world.value("um_webhook_deliveries_total", result="failed") == 1
    assert world.value("um_webhook_deliveries_total", result="delivered") == 1
    await world.messenger.aclose()


def test_the_default_messenger_keeps_no_metrics() -> None:
    from unified_messaging._observability.metrics import NO_METRICS

    assert Messenger().metrics is NO_METRICS


def test_the_package_runs_without_the_metrics_extra() -> None:
    import subprocess
    import sys

    code = """
import asyncio, sys
sys.modules["prometheus_client"] = None  # as if the extra were not installed
from unified_messaging import PrometheusMetrics
from unified_messaging.asgi import create_app
from unified_messaging.testing import create_testbed

async def main() -> None:
    bed = await create_testbed()
    create_app(bed.messenger, mcp=False)
    sent = await bed.messenger.send(bed.principal, {"to": "+905551234567", "body": "x"})
    print(sent.status)
    try:
        PrometheusMetrics()
    except ImportError as exc:
        print(exc)

asyncio.run(main())
"""
    result = subprocess.run(  # noqa: S603 - our own interpreter and a fixed script
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "sent",
        "Metrics needs the 'metrics' extra, which is not installed: pip install '.[metrics]'"
        " in a clone of unified-messaging (or its wheel with [metrics])",
    ]
