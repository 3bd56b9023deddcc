"""``messenger.stats``: the delivery figures of known traffic (``_stats_traffic``) through the
library on the memory store; its refusals; its blocking twin; the fold and ``keep_folded``.

tests/store/test_stats_on_sql.py runs the figures' tests here on SQLite and PostgreSQL, and
the fold that ``run_worker`` keeps doing beside the worker."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from _stats_traffic import NOW, send_traffic, stats_bed

from unified_messaging import ManualClock, Messenger, SyncMessenger
from unified_messaging._errors import RequestInvalid, ResourceNotFound
from unified_messaging.testing import TestBed


@pytest.fixture
async def bed(tmp_path: Path) -> AsyncIterator[TestBed]:
    async with stats_bed("memory", tmp_path) as bed:
        await send_traffic(bed)
        yield bed


async def test_the_last_24_hours_by_hour(bed: TestBed) -> None:
    figures = await bed.messenger.stats.overview(bed.workspace.id, livemode=False)

    assert (figures.window, figures.unit, figures.time_zone) == ("24h", "hour", "UTC")
    assert (figures.start, figures.end) == (
        datetime(2026, 3, 1, 7, tzinfo=UTC),
        datetime(2026, 3, 2, 7, tzinfo=UTC),
    )
    assert len(figures.series) == 24
    busy = {b.start.hour: (b.total, b.counts.delivered) for b in figures.series if b.total}
    assert busy == {3: (3, 3), 5: (3, 1), 6: (2, 2)}
    assert figures.messages == 8
    assert figures.by_status.model_dump() == {
        "queued": 0, "sent": 0, "delivered": 6, "expired": 1, "rejected": 0, "failed": 1,
        "unknown": 0,
    }  # fmt: skip


async def test_each_providers_rate_and_delivery_times_count_every_attempt(bed: TestBed) -> None:
    figures = await bed.messenger.stats.overview(bed.workspace.id, livemode=False)

    sms_a, sms_b = figures.providers
    # sms_a: 8 attempts, 6 taken, 2 refused at submit (one followed by sms_b), 1 expired.
    assert (sms_a.provider, sms_a.attempts, sms_a.taken, sms_a.delivered) == ("sms_a", 8, 6, 5)
    assert (sms_a.failed, sms_a.expired, sms_a.pending, sms_a.fallbacks) == (2, 1, 0, 1)
    assert sms_a.delivery_rate == 0.625  # 5 of 8 settled
    # Every report came 3 s after the hand-over: the bucket [3 s, 4 s).
    assert (sms_a.delivery_times.p50_ms, sms_a.delivery_times.p95_ms) == (4000, 4000)
    assert [(h.le_ms, h.count) for h in sms_a.delivery_times.histogram] == [(4000, 5)]
    assert (sms_b.provider, sms_b.attempts, sms_b.delivered, sms_b.delivery_rate) == (
        "sms_b", 1, 1, 1.0,
    )  # fmt: skip


async def test_fallback_rate_and_verification_conversion(bed: TestBed) -> None:
    figures = await bed.messenger.stats.overview(bed.workspace.id, livemode=False)

    assert figures.fallback.model_dump() == {"messages": 8, "fell_back": 1, "rate": 0.125}
    assert figures.verifications.model_dump() == {"started": 2, "approved": 1, "conversion": 0.5}


async def test_seven_days_by_calendar_day_in_the_time_zone_asked_for(bed: TestBed) -> None:
    figures = await bed.messenger.stats.overview(
        bed.workspace.id, window="7d", livemode=False, time_zone="Europe/Istanbul"
    )

    assert (figures.unit, figures.time_zone, len(figures.series)) == ("day", "Europe/Istanbul", 7)
    assert figures.start == datetime(2026, 2, 23, 21, tzinfo=UTC)  # midnight in Istanbul
    days = {b.start.isoformat(): b.total for b in figures.series if b.total}
    assert days == {"2026-02-27T21:00:00+00:00": 2, "2026-03-01T21:00:00+00:00": 8}
    assert figures.messages == 10
    assert figures.providers[0].delivered == 7
    thirty = await bed.messenger.stats.overview(bed.workspace.id, window="30d", livemode=False)
    assert (len(thirty.series), thirty.messages) == (30, 10)


async def test_live_figures_leave_test_traffic_out(bed: TestBed) -> None:
    figures = await bed.messenger.stats.overview(bed.workspace.id, livemode=True)

    assert (figures.messages, figures.providers, figures.livemode) == (0, [], True)
    assert figures.fallback.rate is None and figures.verifications.conversion is None
    assert all(bucket.total == 0 for bucket in figures.series)


async def test_the_key_sees_its_own_workspace_and_mode(bed: TestBed) -> None:
    mine = await bed.messenger.stats.overview_for(bed.principal, {"window": "7d"})
    other = await bed.messenger.workspaces.create("other")

    assert mine.messages == 10 and mine.livemode is False
    assert (await bed.messenger.stats.overview(other.id, livemode=False)).messages == 0


async def test_the_figures_are_the_same_folded_or_not(bed: TestBed) -> None:
    assert isinstance(bed.clock, ManualClock)
    before = await bed.messenger.stats.overview(bed.workspace.id, window="7d", livemode=False)
    await bed.messenger.send(bed.principal, {"to": "+905550000004", "body": "geç"})
    bed.clock.advance(timedelta(seconds=3))
    await bed.messenger.worker().run_until_idle()

    after = await bed.messenger.stats.overview(bed.workspace.id, window="7d", livemode=False)

    assert after.messages == before.messages + 1
    assert after.by_status.expired == before.by_status.expired + 1
    assert await bed.messenger.stats.fold() == 0  # the read folded it already
    again = await bed.messenger.stats.overview(bed.workspace.id, window="7d", livemode=False)
    assert again == after


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"window": "1y"}, "window"),
        ({"window": ""}, "window"),
        ({"time_zone": "Mars/Olympus"}, "time_zone"),
        ({"time_zone": "../../etc/passwd"}, "time_zone"),
        ({"time_zone": "x" * 500}, "time_zone"),
        ({"time_zone": "Europe/Istanbul\x00"}, "time_zone"),
    ],
)
async def test_a_window_or_zone_not_known_is_refused(
    bed: TestBed, changes: dict[str, str], field: str
) -> None:
    with pytest.raises(RequestInvalid) as refused:
        await bed.messenger.stats.overview(bed.workspace.id, **changes)  # type: ignore[arg-type]
    assert [d.field for d in refused.value.details] == [field]


async def test_an_unknown_workspace_is_not_found(bed: TestBed) -> None:
    with pytest.raises(ResourceNotFound):
        await bed.messenger.stats.overview("ws_nope")


def test_the_blocking_twin_answers_the_same() -> None:
    messenger = Messenger(clock=ManualClock(NOW))
    with SyncMessenger(messenger) as sync:
        workspace = sync.workspaces.create("sync")
        figures = sync.stats.overview(workspace.id, window="30d", time_zone="Asia/Kolkata")
        assert (figures.window, len(figures.series), figures.messages) == ("30d", 30, 0)
        assert sync.stats.fold() == 0


async def test_keep_folded_ends_when_told_to_stop() -> None:
    messenger = Messenger(clock=ManualClock(NOW))
    stop = asyncio.Event()
    folding = asyncio.create_task(messenger.stats.keep_folded(stop, every=3600))
    await asyncio.sleep(0)
    stop.set()
    await asyncio.wait_for(folding, timeout=10)  # not an hour
    assert folding.done() and folding.exception() is None
