"""Prometheus metrics (D30, the ``metrics`` extra): :class:`PrometheusMetrics`.

It implements :class:`~._metrics.Metrics` with ``prometheus_client`` counters and histograms
named by Prometheus' conventions (``_total``, ``_seconds``, base units), and renders the
text exposition for ``GET /metrics``: those, plus gauges read from the store at scrape time
(:class:`~._metrics.StoreSnapshot`), which are never kept in the process.

``prometheus_client`` is imported when a :class:`PrometheusMetrics` is made, not when this
module is: without the extra the package imports and runs with metrics off.

Several processes (uvicorn workers, ``serve`` beside ``worker``): set
``PROMETHEUS_MULTIPROC_DIR`` to an empty directory shared by them before they start;
``prometheus_client`` then keeps every process's values in files there, and a scrape of
any of them sums them all (``MultiProcessCollector``). The store's gauges are read at
scrape time, so they are the same whichever process answers.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Final

from .metrics import CircuitReading, Mode, StoreSnapshot

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry
    from prometheus_client.metrics_core import Metric

__all__ = ["CONTENT_TYPE", "MULTIPROC_ENV", "PrometheusMetrics"]

#: The text exposition format ``generate_latest`` writes.
CONTENT_TYPE: Final = "text/plain; version=0.0.4; charset=utf-8"
#: prometheus_client's multi-process mode is on when this names a directory.
MULTIPROC_ENV: Final = "PROMETHEUS_MULTIPROC_DIR"

#: A provider request: tens of milliseconds to the 30 s an adapter waits at most.
PROVIDER_BUCKETS: Final = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
#: Acceptance to final state: seconds (chat) to the 24 h default DLR time-out.
DELIVERY_BUCKETS: Final = (
    1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0,
    3600.0, 10800.0, 21600.0, 43200.0, 86400.0,
)  # fmt: skip
#: Start to approval of a one-time code: a few seconds (a copied code) to the hour a code
#: lives at most (D34).
APPROVE_BUCKETS: Final = (2.0, 5.0, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0, 90.0, 120.0, 300.0,
                          600.0, 1800.0, 3600.0)  # fmt: skip
_CIRCUIT_STATES: Final = ("closed", "half_open", "open", "paused")


def _require_client() -> None:
    try:
        import prometheus_client  # noqa: F401
    except ImportError:
        from .._errors import MissingExtra

        raise MissingExtra("Metrics", extra="metrics", setting="metrics") from None


class PrometheusMetrics:
    """:class:`~unified_messaging.Messenger` metrics in ``prometheus_client``.

    ``registry``: where the metrics are registered (default: a registry of their own, with
    the process and garbage-collector collectors, so two messengers never clash).
    ``workspace_labels``: add a ``workspace`` label (the workspace id) to
    ``um_messages_total``; off by default, since the scrape must not tell who the
    customers are (D30).
    """

    def __init__(
        self, registry: CollectorRegistry | None = None, *, workspace_labels: bool = False
    ) -> None:
        _require_client()  # the one-line hint, before anything else fails
        from prometheus_client import (
            GC_COLLECTOR,
            PLATFORM_COLLECTOR,
            PROCESS_COLLECTOR,
            CollectorRegistry,
            Counter,
            Histogram,
        )

        if registry is None:
            registry = CollectorRegistry(auto_describe=True)
            if not multiprocess_dir():
                for collector in (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR):
                    registry.register(collector)
        self.registry = registry
        self._workspace_labels = workspace_labels
        message_labels = ["provider", "channel", "outcome", "mode"]
        if workspace_labels:
            message_labels.append("workspace")
        self._messages = Counter(
            "um_messages_total",
            "Messages by provider, channel and outcome at send time "
            "(sent, queued, failed, delivered, rejected: refused before any provider).",
            message_labels,
            registry=registry,
        )
        self._attempts = Counter(
            "um_attempts_total",
            "Tries of a message at a provider, by result (accepted, rejected, "
            "recipient_failed, unavailable, circuit_open).",
            ["provider", "result", "mode"],
            registry=registry,
        )
        self._fallbacks = Counter(
            "um_fallbacks_total",
            "Messages moved on from one provider to the next.",
            ["from_provider", "to_provider", "mode"],
            registry=registry,
        )
        self._calls = Histogram(
            "um_provider_request_seconds",
            "Live provider requests (submit and batch submit), by outcome.",
            ["provider", "outcome"],
            buckets=PROVIDER_BUCKETS,
            registry=registry,
        )
        self._delivery = Histogram(
            "um_delivery_seconds",
            "From the provider's acceptance to the message's final state, by final state.",
            ["provider", "status", "mode"],
            buckets=DELIVERY_BUCKETS,
            registry=registry,
        )
        self._reports = Counter(
            "um_reports_total",
            "Delivery reports received, by the status they carry.",
            ["provider", "status", "mode"],
            registry=registry,
        )
        self._webhooks = Counter(
            "um_webhook_deliveries_total",
            "Webhook delivery attempts, by result (delivered, failed, gone, refused).",
            ["result"],
            registry=registry,
        )
        self._rate_limited = Counter(
            "um_rate_limited_total",
            "Requests and bulk items refused with 429, by code.",
            ["code"],
            registry=registry,
        )
        self._verifications = Counter(
            "um_verifications_total",
            "One-time code verifications by channel and event (started, approved, failed, "
            "expired, canceled); conversion is approved over started.",
            ["channel", "event", "mode"],
            registry=registry,
        )
        self._approve_time = Histogram(
            "um_verification_approve_seconds",
            "From a verification's start to its approval.",
            ["channel", "mode"],
            buckets=APPROVE_BUCKETS,
            registry=registry,
        )
        self._verification_refusals = Counter(
            "um_verification_refusals_total",
            "Verification starts refused by the SMS-pumping guard, by reason (prefix, address).",
            ["reason"],
            registry=registry,
        )

    def __repr__(self) -> str:
        return f"PrometheusMetrics(workspace_labels={self._workspace_labels})"

    # ------------------------------------------------------------------ recording

    def message(
        self, *, provider: str, channel: str, outcome: str, mode: Mode, workspace_id: str
    ) -> None:
        if self._workspace_labels:
            self._messages.labels(provider, channel, outcome, mode, workspace_id).inc()
        else:
            self._messages.labels(provider, channel, outcome, mode).inc()

    def attempt(self, *, provider: str, result: str, mode: Mode) -> None:
        self._attempts.labels(provider, result, mode).inc()

    def fallback(self, *, from_provider: str, to_provider: str, mode: Mode) -> None:
        self._fallbacks.labels(from_provider, to_provider, mode).inc()

    def provider_call(self, *, provider: str, outcome: str, seconds: float) -> None:
        self._calls.labels(provider, outcome).observe(seconds)

    def delivery(self, *, provider: str, status: str, mode: Mode, seconds: float) -> None:
        self._delivery.labels(provider, status, mode).observe(seconds)

    def report(self, *, provider: str, status: str, mode: Mode) -> None:
        self._reports.labels(provider, status, mode).inc()

    def webhook_delivery(self, *, result: str) -> None:
        self._webhooks.labels(result).inc()

    def rate_limited(self, *, code: str) -> None:
        self._rate_limited.labels(code).inc()

    def verification(self, *, channel: str, event: str, mode: Mode) -> None:
        self._verifications.labels(channel, event, mode).inc()

    def verification_approved(self, *, channel: str, mode: Mode, seconds: float) -> None:
        self._approve_time.labels(channel, mode).observe(seconds)

    def verification_refused(self, *, reason: str) -> None:
        self._verification_refusals.labels(reason).inc()

    # ------------------------------------------------------------------ the scrape

    @property
    def content_type(self) -> str:
        return CONTENT_TYPE

    def exposition(self, snapshot: StoreSnapshot) -> bytes:
        """The text a scrape gets: this process's metrics (or, in multi-process mode, every
        process's, summed), then the store's gauges as of ``snapshot``."""
        from prometheus_client import CollectorRegistry, generate_latest
        from prometheus_client.multiprocess import MultiProcessCollector

        source = self.registry
        if multiprocess_dir():
            # A fresh registry per scrape, as prometheus_client's documentation asks.
            source = CollectorRegistry()
            MultiProcessCollector(source)  # type: ignore[no-untyped-call]
        return generate_latest(source) + generate_latest(_SnapshotCollector(snapshot))


def multiprocess_dir() -> str | None:
    """The multi-process directory, when prometheus_client's multi-process mode is on."""
    path = os.environ.get(MULTIPROC_ENV, "").strip()
    return path if path and os.path.isdir(path) else None


def known_work_kinds() -> tuple[str, ...]:
    """The kinds of work the library stores, reported at 0 when none is queued (an absent
    series would make "queue empty" and "metric missing" look alike)."""
    from .._lifecycle.runtime import (
        WORK_EVENT,
        WORK_FALLBACK,
        WORK_ORPHAN,
        WORK_POLL,
        WORK_RETRY,
        WORK_SIMULATED,
        WORK_SUBMIT_CHECK,
        WORK_TIMEOUT,
    )
    from ..webhooks._outbox import WORK_KIND

    return (WORK_EVENT, WORK_FALLBACK, WORK_ORPHAN, WORK_POLL, WORK_RETRY, WORK_SIMULATED,
            WORK_SUBMIT_CHECK, WORK_TIMEOUT, WORK_KIND)  # fmt: skip


class _SnapshotCollector:
    """The store's gauges, as of one snapshot (a collector made per scrape)."""

    def __init__(self, snapshot: StoreSnapshot) -> None:
        self._snapshot = snapshot

    def collect(self) -> Iterator[Metric]:
        from prometheus_client.core import GaugeMetricFamily

        snapshot = self._snapshot
        up = GaugeMetricFamily("um_store_up", "1 if the scrape could read the store, else 0.")
        up.add_metric([], 0.0 if snapshot.work is None else 1.0)
        yield up
        if snapshot.work is not None:
            yield from self._work(snapshot)
        if snapshot.circuits is not None:
            yield self._circuits(snapshot.circuits)
        if snapshot.accounts is not None:
            yield from self._accounts(snapshot)

    def _work(self, snapshot: StoreSnapshot) -> Iterator[Metric]:
        from prometheus_client.core import GaugeMetricFamily

        stats = {entry.kind: entry for entry in snapshot.work or ()}
        items = GaugeMetricFamily(
            "um_work_items",
            "Background work items by kind: due now (the queue) or scheduled for later.",
            labels=["kind", "state"],
        )
        oldest = GaugeMetricFamily(
            "um_work_oldest_due_seconds",
            "How long the oldest due work item of each kind has been waiting (0: none due).",
            labels=["kind"],
        )
        for kind in sorted({*known_work_kinds(), *stats}):
            entry = stats.get(kind)
            due = entry.due if entry is not None else 0
            items.add_metric([kind, "due"], float(due))
            items.add_metric([kind, "scheduled"], float(entry.items - due if entry else 0))
            waited = 0.0
            if entry is not None and entry.oldest_due_at is not None:
                waited = max(0.0, (snapshot.now - entry.oldest_due_at).total_seconds())
            oldest.add_metric([kind], waited)
        yield items
        yield oldest
        from ..webhooks._outbox import WORK_KIND

        backlog = GaugeMetricFamily(
            "um_webhook_backlog",
            "Webhook deliveries not finished yet (due now or waiting for a retry).",
        )
        webhook = stats.get(WORK_KIND)
        backlog.add_metric([], float(webhook.items if webhook is not None else 0))
        yield backlog

    @staticmethod
    def _accounts(snapshot: StoreSnapshot) -> Iterator[Metric]:
        """Each connection's provider balance as last read, its threshold, whether it is
        below it, and how old the reading is: one series per connection that has one."""
        from prometheus_client.core import GaugeMetricFamily

        labels = ["provider", "connection", "unit"]
        balance = GaugeMetricFamily(
            "um_provider_balance",
            "A connection's provider balance or credit as last read (unit: TRY, SMS, credit).",
            labels=labels,
        )
        threshold = GaugeMetricFamily(
            "um_provider_balance_threshold",
            "The balance below which connection.balance_low fires.",
            labels=labels,
        )
        low = GaugeMetricFamily(
            "um_provider_balance_low",
            "1 while the balance is below its threshold.",
            labels=labels,
        )
        age = GaugeMetricFamily(
            "um_provider_balance_age_seconds",
            "How long ago the balance was read.",
            labels=["provider", "connection"],
        )
        for account in snapshot.accounts or ():
            if account.balance is None or account.read_at is None:
                continue
            key = [account.provider, account.connection_id, account.unit or ""]
            balance.add_metric(key, float(account.balance))
            low.add_metric(key, 1.0 if account.low else 0.0)
            if account.threshold is not None:
                threshold.add_metric(key, float(account.threshold))
            waited = max(0.0, (snapshot.now - account.read_at).total_seconds())
            age.add_metric([account.provider, account.connection_id], waited)
        yield from (balance, threshold, low, age)

    @staticmethod
    def _circuits(readings: Sequence[CircuitReading]) -> Metric:
        """The breakers that are not closed, each as one series per state (1 for its own):
        a healthy connection has none, so the series grow with trouble, not with tenants."""
        from prometheus_client.core import GaugeMetricFamily

        family = GaugeMetricFamily(
            "um_circuit_state",
            "Connections whose circuit breaker is not closed: 1 for its state, 0 for the others.",
            labels=["provider", "connection", "state"],
        )
        for reading in readings:
            if reading.state == "closed":
                continue
            for state in _CIRCUIT_STATES:
                value = 1.0 if reading.state == state else 0.0
                family.add_metric([reading.provider, reading.connection_id, state], value)
        return family
