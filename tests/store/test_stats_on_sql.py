"""``messenger.stats`` on SQLite and PostgreSQL: the figures' tests of
tests/namespaces/test_stats.py again on each SQL store (the fold and the figures are the
store's SQL), and the fold that ``run_worker`` keeps doing beside the worker."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
import sqlalchemy as sa
from _sql_apps import BACKENDS
from _stats_traffic import send_traffic, stats_bed
from namespaces.test_stats import (  # noqa: F401  (collected again here, on the SQL beds)
    test_a_window_or_zone_not_known_is_refused,
    test_an_unknown_workspace_is_not_found,
    test_each_providers_rate_and_delivery_times_count_every_attempt,
    test_fallback_rate_and_verification_conversion,
    test_live_figures_leave_test_traffic_out,
    test_seven_days_by_calendar_day_in_the_time_zone_asked_for,
    test_the_figures_are_the_same_folded_or_not,
    test_the_key_sees_its_own_workspace_and_mode,
    test_the_last_24_hours_by_hour,
)

from unified_messaging.store.sql import SqlStore
from unified_messaging.testing import TestBed


@pytest.fixture(params=BACKENDS)
async def bed(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[TestBed]:
    async with stats_bed(request.param, tmp_path) as bed:
        await send_traffic(bed)
        yield bed


async def test_run_worker_folds_the_counts_beside_the_worker(tmp_path: Path) -> None:
    async with stats_bed("sqlite", tmp_path) as bed:
        await bed.messenger.send(bed.principal, {"to": "+905551234567", "body": "x"})
        assert await _logged(bed)
        stop = asyncio.Event()
        running = asyncio.create_task(bed.messenger.run_worker(stop, idle_interval=0.01))
        try:
            await _until(lambda: _logged(bed), False)
        finally:
            stop.set()
            await asyncio.wait_for(running, timeout=10)
        assert (await bed.messenger.stats.overview(bed.workspace.id, livemode=False)).messages


async def _until(check: Callable[[], Awaitable[bool]], wanted: bool) -> None:
    """Wait (10 s at most) until ``check()`` answers ``wanted``: the worker runs on its own."""
    for _ in range(1000):
        if await check() == wanted:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("never happened")


async def _logged(bed: TestBed) -> bool:
    """Whether the SQL store's change log still holds a row."""
    store = bed.messenger.store
    assert isinstance(store, SqlStore)
    rows = await store._all(sa.text("SELECT count(*) AS n FROM um_stat_changes"))
    return bool(rows[0]["n"])
