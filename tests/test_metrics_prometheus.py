"""``PrometheusMetrics`` on a fresh ``CollectorRegistry``: names, labels, the scrape text."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from unified_messaging._observability.metrics import CircuitReading, StoreSnapshot
from unified_messaging._observability.prometheus import CONTENT_TYPE, PrometheusMetrics
from unified_messaging.store.base import WorkStats

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def samples(body: bytes) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a scrape, by name and sorted labels (parsing also proves the text
    is valid exposition format)."""
    found = {}
    for family in text_string_to_metric_families(body.decode("utf-8")):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def value(body: bytes, name: str, **labels: str) -> float | None:
    return samples(body).get((name, tuple(sorted(labels.items()))))


def empty() -> StoreSnapshot:
    return StoreSnapshot(NOW, work=[])


def test_counters_and_histograms_carry_their_labels() -> None:
    metrics = PrometheusMetrics(CollectorRegistry())
    metrics.message(
        provider="sms_a", channel="sms", outcome="sent", mode="live", workspace_id="ws_secret"
    )
    metrics.message(
        provider="sms_a", channel="sms", outcome="sent", mode="live", workspace_id="ws_other"
    )
    metrics.attempt(provider="sms_a", result="accepted", mode="live")
    metrics.fallback(from_provider="sms_a", to_provider="sms_b", mode="test")
    metrics.provider_call(provider="sms_c", outcome="accepted", seconds=0.2)
    metrics.delivery(provider="sms_b", status="delivered", mode="live", seconds=42.0)
    metrics.report(provider="sms_b", status="delivered", mode="live")
    metrics.webhook_delivery(result="delivered")
    metrics.rate_limited(code="QUOTA_EXCEEDED")

    body = metrics.exposition(empty())

    assert value(body, "um_messages_total", provider="sms_a", channel="sms", outcome="sent",
                 mode="live") == 2  # fmt: skip
    assert value(body, "um_attempts_total", provider="sms_a", result="accepted",
                 mode="live") == 1  # fmt: skip
    assert value(body, "um_fallbacks_total", from_provider="sms_a", to_provider="sms_b",
                 mode="test") == 1  # fmt: skip
    call = {"provider": "sms_c", "outcome": "accepted"}
    assert value(body, "um_provider_request_seconds_count", **call) == 1
    assert value(body, "um_provider_request_seconds_bucket", **call, le="0.1") == 0
    assert value(body, "um_provider_request_seconds_bucket", **call, le="0.25") == 1
    delivered = {"provider": "sms_b", "status": "delivered", "mode": "live"}
    assert value(body, "um_delivery_seconds_sum", **delivered) == 42.0
    assert value(body, "um_delivery_seconds_bucket", **delivered, le="30.0") == 0
    assert value(body, "um_delivery_seconds_bucket", **delivered, le="60.0") == 1
    assert value(body, "um_reports_total", **delivered) == 1
    assert value(body, "um_webhook_deliveries_total", result="delivered") == 1
    assert value(body, "um_rate_limited_total", code="QUOTA_EXCEEDED") == 1
    assert b"ws_secret" not in body  # D30: no workspace ids unless asked


def test_workspace_labels_only_when_asked() -> None:
    metrics = PrometheusMetrics(CollectorRegistry(), workspace_labels=True)
    metrics.message(
        provider="chatbot", channel="chatbot", outcome="delivered", mode="test", workspace_id="ws_1"
    )

    body = metrics.exposition(empty())

    assert value(body, "um_messages_total", provider="chatbot", channel="chatbot",
                 outcome="delivered", mode="test", workspace="ws_1") == 1  # fmt: skip


def test_store_gauges_come_from_the_snapshot() -> None:
    metrics = PrometheusMetrics(CollectorRegistry())
    snapshot = StoreSnapshot(
        NOW,
        work=[
            WorkStats("dlr_timeout", items=5, due=2, oldest_due_at=NOW - timedelta(seconds=90)),
            WorkStats("webhook", items=3, due=1, oldest_due_at=NOW - timedelta(seconds=4)),
        ],
    )

    body = metrics.exposition(snapshot)

    assert value(body, "um_store_up") == 1
    assert value(body, "um_work_items", kind="dlr_timeout", state="due") == 2
    assert value(body, "um_work_items", kind="dlr_timeout", state="scheduled") == 3
    assert value(body, "um_work_oldest_due_seconds", kind="dlr_timeout") == 90
    assert value(body, "um_work_oldest_due_seconds", kind="webhook") == 4
    assert value(body, "um_webhook_backlog") == 3
    # A kind with nothing queued is 0, not missing: "empty" and "not scraped" differ.
    assert value(body, "um_work_items", kind="fallback", state="due") == 0
    assert value(body, "um_work_oldest_due_seconds", kind="fallback") == 0
    assert value(body, "um_circuit_state", provider="sms_a", connection="con_1",
                 state="open") is None  # fmt: skip


def test_a_store_that_could_not_be_read_leaves_its_gauges_out() -> None:
    metrics = PrometheusMetrics(CollectorRegistry())
    metrics.rate_limited(code="RATE_LIMITED")

    body = metrics.exposition(StoreSnapshot(NOW, work=None))

    assert value(body, "um_store_up") == 0
    assert value(body, "um_rate_limited_total", code="RATE_LIMITED") == 1
    assert b"um_work_items" not in body
    assert b"um_webhook_backlog" not in body


def test_circuits_not_closed_are_one_series_per_state() -> None:
    metrics = PrometheusMetrics(CollectorRegistry())
    circuits = [
        CircuitReading("sms_a", "con_1", "open"),
        CircuitReading("sms_b", "con_2", "closed"),
    ]
    snapshot = StoreSnapshot(NOW, work=[], circuits=circuits)

    body = metrics.exposition(snapshot)

    for state, expected in (("open", 1), ("closed", 0), ("half_open", 0), ("paused", 0)):
        assert value(body, "um_circuit_state", provider="sms_a", connection="con_1",
                     state=state) == expected  # fmt: skip
    # A closed breaker has no series: they grow with trouble, not with the number of tenants.
    assert b"con_2" not in body


def test_two_instances_never_clash_on_their_default_registries() -> None:
    first, second = PrometheusMetrics(), PrometheusMetrics()
    first.rate_limited(code="RATE_LIMITED")

    assert value(first.exposition(empty()), "um_rate_limited_total", code="RATE_LIMITED") == 1
    assert value(second.exposition(empty()), "um_rate_limited_total", code="RATE_LIMITED") is None
    # The default registry also has the process collectors an operator expects.
    assert b"process_cpu_seconds_total" in first.exposition(empty())


def test_the_scrape_is_prometheus_text_format() -> None:
    assert CONTENT_TYPE.startswith("text/plain; version=0.0.4")


def test_without_the_extra_the_error_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "prometheus_client", None)  # as if not installed

    with pytest.raises(ImportError, match=r"pip install '\.\[metrics\]'"):
        PrometheusMetrics()


async def test_a_scrape_of_an_unreachable_store_still_serves_the_counters() -> None:
    from unified_messaging._observability.metrics import take_snapshot
    from unified_messaging.store.sql import SqlStore

    store = SqlStore("postgresql+asyncpg://postgres@127.0.0.1:1/nothing_listens_here")
    metrics = PrometheusMetrics(CollectorRegistry())
    metrics.rate_limited(code="RATE_LIMITED")

    snapshot = await take_snapshot(store, NOW)
    body = metrics.exposition(snapshot)

    assert snapshot.work is None
    assert value(body, "um_store_up") == 0
    assert value(body, "um_rate_limited_total", code="RATE_LIMITED") == 1


def test_provider_balances_are_gauges_with_threshold_low_and_age() -> None:
    from decimal import Decimal

    from unified_messaging.accounts.records import ProviderAccount

    metrics = PrometheusMetrics(CollectorRegistry())
    read = NOW - timedelta(minutes=3)
    accounts = [
        ProviderAccount("con_1", "ws_1", "sms_a", state="read", balance=Decimal("57.86"),
                        unit="TRY", read_at=read, threshold=Decimal("100"), low=True),
        ProviderAccount("con_2", "ws_1", "sms_e", state="not_offered"),
    ]  # fmt: skip
    body = metrics.exposition(StoreSnapshot(NOW, work=[], accounts=accounts))

    key = {"provider": "sms_a", "connection": "con_1", "unit": "TRY"}
    assert value(body, "um_provider_balance", **key) == pytest.approx(57.86)
    assert value(body, "um_provider_balance_threshold", **key) == 100
    assert value(body, "um_provider_balance_low", **key) == 1
    assert value(body, "um_provider_balance_age_seconds", provider="sms_a",
                 connection="con_1") == 180  # fmt: skip
    assert b"con_2" not in body  # never read: no series
