"""Campaigns on every store: resuming rests on the idempotency keys' compare-and-set and on
jobs bound in the write-ahead transaction, which each backend implements on its own.

Memory, SQLite and PostgreSQL (with ``UM_TEST_POSTGRES_URL``); the simulator sends, a manual
clock keeps time, and the outbox counts every hand-over to a provider.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

import pytest

from unified_messaging import ManualClock, Messenger, Vault
from unified_messaging.campaigns._runner import (
    Campaign,
    CampaignSettings,
    RowResult,
    campaign_status,
)
from unified_messaging.store.base import Store
from unified_messaging.testing import Outbox, TestBed, create_testbed

TEMPLATE = "order_shipped"


@pytest.fixture
async def bed(store: Store) -> TestBed:
    outbox = Outbox()
    messenger = Messenger(
        store, clock=ManualClock(), vault=Vault.generate(), on_simulated=outbox.record
    )
    bed = await create_testbed(messenger=messenger, outbox=outbox)
    await messenger.templates.set(bed.workspace.id, TEMPLATE, "Merhaba {{ name }}")
    return bed


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "list.csv"
    rows = [f"0532{1000000 + i:07d},N{i}" for i in range(30)]
    path.write_text("phone,name\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


def _campaign(bed: TestBed, source: Path) -> Campaign:
    settings = CampaignSettings(
        "spring", bed.workspace.id, livemode=False, template=TEMPLATE, chunk=10
    )
    clock = bed.clock
    assert isinstance(clock, ManualClock)

    async def sleep(seconds: float) -> None:
        clock.advance(seconds)

    return Campaign(bed.messenger, settings, source, sleep=sleep)


async def _ignore(results: Sequence[RowResult]) -> None:
    pass


async def test_a_stopped_campaign_resumes_and_each_row_reaches_a_provider_once(
    bed: TestBed, source: Path
) -> None:
    stopped = 0

    async def stop_after_two(results: Sequence[RowResult]) -> None:
        nonlocal stopped
        stopped += 1
        if stopped == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        await _campaign(bed, source).run(stop_after_two)
    summary = await _campaign(bed, source).run(_ignore)

    assert (summary.done, summary.replayed) == (30, 20)
    assert set(Counter(s.to for s in bed.outbox).values()) == {1}
    assert len(bed.outbox) == 30
    status = await campaign_status(bed.messenger, bed.workspace.id, "spring", livemode=False)
    assert status.messages == {"sent": 30}


async def test_a_chunk_whose_run_died_mid_send_is_pending_then_settled_never_resent(
    bed: TestBed, source: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The run dies after chunk 2's write-ahead and provider calls, before their outcome is
    # stored: its rows are in the store as written ahead, the key bound to their jobs.
    store_outcome = Messenger._store_outcome
    calls = 0

    async def dies_at_chunk_2(self: Messenger, *args: object) -> None:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise SystemExit("killed")
        await store_outcome(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(Messenger, "_store_outcome", dies_at_chunk_2)
    with pytest.raises(SystemExit):
        await _campaign(bed, source).run(_ignore)
    monkeypatch.undo()

    pending: list[RowResult] = []

    async def keep(results: Sequence[RowResult]) -> None:
        pending.extend(results)

    await _campaign(bed, source).run(keep)
    chunk_2 = pending[10:20]
    assert {(r.status, r.error_code, r.replayed) for r in chunk_2} == {
        ("pending", "IDEMPOTENCY_IN_PROGRESS", True)
    }
    assert len(bed.outbox) == 30  # chunk 2 was handed over once, by the run that died

    # The submit check written ahead settles them (D22); a third run reports that state.
    await bed.settle(timedelta(minutes=10))
    settled: list[RowResult] = []

    async def keep_settled(results: Sequence[RowResult]) -> None:
        settled.extend(results)

    await _campaign(bed, source).run(keep_settled)
    assert [r.job_id for r in settled[10:20]] == [r.job_id for r in chunk_2]
    assert "pending" not in {r.status for r in settled}
    assert len(bed.outbox) == 30
