"""The overview of a window from the store's counts: a pure function, so every figure is
tested without a store (and the same counts give the same answer on every backend)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Final, get_args

from .._types import MessageStatus, ProviderCode
from ._buckets import LATENCY_BOUNDS_MS, hour_start, percentile_bound
from ._contributions import FELL_BACK, FOLLOWED, NOT_SENT, TAKEN
from ._models import (
    DeliveryTimes,
    FallbackFigures,
    HistogramBucket,
    ProviderFigures,
    SeriesBucket,
    StatsOverview,
    StatusCounts,
    VerificationFigures,
)
from ._records import StatCount
from ._windows import WindowPlan

__all__ = ["build_overview", "ratio"]

_STATUSES: Final[tuple[MessageStatus, ...]] = get_args(MessageStatus)
#: What each attempt state counts as in :class:`ProviderFigures` (as ``ConnectionStats``).
_ATTEMPT_COLUMN: Final = {
    "delivered": "delivered",
    "expired": "expired",
    "failed": "failed",
    "rejected": "failed",
    "unavailable": "failed",
    "unknown": "unknown",
    "accepted": "pending",
}


def ratio(part: int, whole: int) -> float | None:
    """``part / whole`` to four places; ``None`` for nothing to divide by."""
    return None if whole <= 0 else round(part / whole, 4)


def build_overview(
    plan: WindowPlan, counts: Iterable[StatCount], *, livemode: bool
) -> StatsOverview:
    """The overview of ``plan``'s window from the store's ``counts`` of it."""
    series: list[Counter[str]] = [Counter() for _ in plan.buckets]
    attempts: dict[str, Counter[str]] = {}
    latency: dict[str, Counter[int]] = {}
    sent = fell_back = 0
    verifications: Counter[str] = Counter()
    for count in counts:
        if count.kind == "status" and count.hour is not None:
            index = plan.index_of(count.hour)
            if index is not None:
                series[index][count.status] += count.n
                sent += count.n if count.detail != NOT_SENT else 0
                fell_back += count.n if count.detail == FELL_BACK else 0
        elif count.kind == "attempt":
            _add_attempt(attempts.setdefault(count.provider, Counter()), count)
        elif count.kind == "latency":
            latency.setdefault(count.provider, Counter())[count.detail] += count.n
        elif count.kind == "verification":
            verifications[count.status] += count.n
    total = sum((bucket for bucket in series), Counter())
    providers = sorted(set(attempts) | set(latency))
    return StatsOverview(
        window=plan.window,
        time_zone=plan.zone.key,
        unit=plan.unit,
        start=hour_start(plan.start),
        end=hour_start(plan.end),
        livemode=livemode,
        messages=sum(total.values()),
        by_status=_statuses(total),
        series=[
            SeriesBucket(
                start=hour_start(bucket.start),
                end=hour_start(bucket.end),
                total=sum(counted.values()),
                counts=_statuses(counted),
            )
            for bucket, counted in zip(plan.buckets, series, strict=True)
        ],
        providers=[
            _provider(p, attempts.get(p, Counter()), latency.get(p, Counter()))  # type: ignore[arg-type]
            for p in providers
        ],
        fallback=FallbackFigures(messages=sent, fell_back=fell_back, rate=ratio(fell_back, sent)),
        verifications=VerificationFigures(
            started=sum(verifications.values()),
            approved=verifications["approved"],
            conversion=ratio(verifications["approved"], sum(verifications.values())),
        ),
    )


def _add_attempt(tally: Counter[str], count: StatCount) -> None:
    tally["attempts"] += count.n
    tally[_ATTEMPT_COLUMN.get(count.status, "failed")] += count.n
    if count.detail & TAKEN:
        tally["taken"] += count.n
    if count.detail & FOLLOWED:
        tally["fallbacks"] += count.n


def _statuses(counted: Mapping[str, int]) -> StatusCounts:
    return StatusCounts(**{status: counted.get(status, 0) for status in _STATUSES})


def _provider(
    provider: ProviderCode, tally: Mapping[str, int], times: Mapping[int, int]
) -> ProviderFigures:
    def n(name: str) -> int:
        return tally.get(name, 0)

    settled = n("delivered") + n("failed") + n("expired") + n("unknown")
    return ProviderFigures(
        provider=provider,
        attempts=n("attempts"),
        taken=n("taken"),
        delivered=n("delivered"),
        failed=n("failed"),
        expired=n("expired"),
        unknown=n("unknown"),
        pending=n("pending"),
        fallbacks=n("fallbacks"),
        delivery_rate=ratio(n("delivered"), settled),
        delivery_times=_times(times),
    )


def _times(histogram: Mapping[int, int]) -> DeliveryTimes:
    kept = {bucket: n for bucket, n in histogram.items() if n > 0}
    return DeliveryTimes(
        delivered=sum(kept.values()),
        p50_ms=percentile_bound(kept, 50),
        p95_ms=percentile_bound(kept, 95),
        histogram=[
            HistogramBucket(
                le_ms=LATENCY_BOUNDS_MS[b] if b < len(LATENCY_BOUNDS_MS) else None, count=n
            )
            for b, n in sorted(kept.items())
        ],
    )
