"""Campaign runs in this process: resuming, pacing, stopping, and status from the store.

A test-mode testbed (in-memory store, simulator, a manual clock). Every provider hand-over
lands in the testbed's outbox, so "no row sent twice" is counted where it matters: at the
provider. The run's waits go through ``sleep``, which moves the manual clock.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from _campaign_bed import TEMPLATE, TEMPLATE_BODY, numbers

from unified_messaging import ManualClock, Messenger
from unified_messaging._access.idempotency import IdempotencyKeys
from unified_messaging._access.ratelimit import MemoryRateLimiter
from unified_messaging._messenger import Principal
from unified_messaging.campaigns._runner import (
    Campaign,
    CampaignSettings,
    CampaignSummary,
    RowResult,
    campaign_status,
)
from unified_messaging.testing import TestBed, create_testbed


@pytest.fixture
async def bed() -> TestBed:
    bed = await create_testbed()
    await bed.messenger.templates.set(bed.workspace.id, TEMPLATE, TEMPLATE_BODY)
    return bed


def _csv(tmp_path: Path, count: int, *, name: str = "list.csv") -> Path:
    lines = ["phone,name,order"]
    lines += [f"{to},Ayşe {i},A-{i}" for i, to in enumerate(numbers(count))]
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


class Run:
    """One campaign run on the bed: its results by row and the seconds it waited."""

    def __init__(self, bed: TestBed, path: Path, **settings: object) -> None:
        self.bed = bed
        self.results: list[RowResult] = []
        self.slept: list[float] = []
        defaults: dict[str, object] = {"name": path.name, "template": TEMPLATE, "chunk": 10}
        self.settings = CampaignSettings(
            workspace_id=bed.workspace.id, livemode=False, **{**defaults, **settings}
        )
        clock = bed.clock
        assert isinstance(clock, ManualClock)
        self.clock = clock

        async def sleep(seconds: float) -> None:
            self.slept.append(seconds)
            clock.advance(seconds)

        self.campaign = Campaign(
            bed.messenger, self.settings, path, limiter=MemoryRateLimiter(clock), sleep=sleep
        )

    async def __call__(self, *, stop_after: int | None = None) -> CampaignSummary:
        chunks = 0

        async def on_chunk(results: Sequence[RowResult]) -> None:
            nonlocal chunks
            self.results += results
            chunks += 1
            if stop_after is not None and chunks == stop_after:
                raise KeyboardInterrupt  # the operator's Ctrl-C, between two chunks

        return await self.campaign.run(on_chunk)


def _handed_over(bed: TestBed) -> Counter[str]:
    return Counter(submission.to for submission in bed.outbox)


async def test_a_campaign_sends_each_row_with_its_cells_as_variables(
    bed: TestBed, tmp_path: Path
) -> None:
    run = Run(bed, _csv(tmp_path, 25))

    summary = await run()

    assert (summary.rows, summary.done, summary.by_status) == (25, 25, {"sent": 25})
    assert [r.row for r in run.results] == list(range(2, 27))  # the header is row 1
    assert len({r.job_id for r in run.results}) == 25
    first = bed.outbox[0]
    assert (first.to, first.text) == ("+905321000000", "Merhaba Ayşe 0, siparişiniz A-0 yolda.")
    assert set(_handed_over(bed).values()) == {1}


async def test_a_run_stopped_between_chunks_resumes_without_sending_a_row_twice(
    bed: TestBed, tmp_path: Path
) -> None:
    path = _csv(tmp_path, 45)
    first = Run(bed, path)
    with pytest.raises(KeyboardInterrupt):
        await first(stop_after=2)
    assert len(bed.outbox) == 20

    second = Run(bed, path)
    summary = await second()

    counts = _handed_over(bed)
    assert len(counts) == 45
    assert set(counts.values()) == {1}  # every number reached the provider exactly once
    assert summary.replayed == 20
    # The rows an earlier run sent keep their jobs in the second run's results.
    assert [r.job_id for r in second.results[:20]] == [r.job_id for r in first.results]
    status = await campaign_status(bed.messenger, bed.workspace.id, path.name, livemode=False)
    assert status.messages == {"sent": 45}
    assert status.manifest["rows_done"] == 45
    assert status.manifest["finished_at"] is not None


async def test_a_run_that_died_before_storing_a_chunks_answer_resumes_from_its_jobs(
    bed: TestBed, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _csv(tmp_path, 30)
    finish = IdempotencyKeys.finish

    async def dies_storing_chunk_2(
        self: IdempotencyKeys, auth: Principal, idem_key: str, status: int, body: bytes
    ) -> None:
        # The process ends after chunk 2's write-ahead and provider calls, before its
        # answer is stored (SystemExit: nothing in the run catches it).
        if idem_key.endswith(":1"):
            raise SystemExit("killed")
        await finish(self, auth, idem_key, status, body)

    monkeypatch.setattr(IdempotencyKeys, "finish", dies_storing_chunk_2)
    with pytest.raises(SystemExit):
        await Run(bed, path)()
    monkeypatch.undo()
    assert len(bed.outbox) == 20  # chunk 2 went out; its answer was never stored

    second = Run(bed, path)
    await second()

    assert set(_handed_over(bed).values()) == {1}
    assert len(bed.outbox) == 30
    # Chunk 2's rows are answered with the jobs the dead run made, as they are now.
    stored = {s.to: s.job_id for s in bed.outbox}
    assert all(stored[r.to] == r.job_id for r in second.results)
    assert [r.replayed for r in second.results] == [True] * 20 + [False] * 10


async def test_a_changed_chunk_is_refused_and_nothing_is_sent_twice(
    bed: TestBed, tmp_path: Path
) -> None:
    path = _csv(tmp_path, 20)
    await Run(bed, path)()
    text = path.read_text(encoding="utf-8").replace("Ayşe 12,", "Ayşe Yılmaz,")
    path.write_text(text, encoding="utf-8")

    run = Run(bed, path)
    summary = await run()

    assert summary.stopped is not None
    assert summary.stopped.code == "IDEMPOTENCY_CONFLICT"
    assert "chunk 2 was sent by an earlier run with other rows" in summary.stopped.message
    assert summary.stopped_at_row == 12
    assert len(bed.outbox) == 20


async def test_other_settings_under_the_same_name_are_refused(bed: TestBed, tmp_path: Path) -> None:
    from unified_messaging import IdempotencyConflict

    path = _csv(tmp_path, 5)
    await Run(bed, path)()

    with pytest.raises(IdempotencyConflict, match="started with other settings"):
        await Run(bed, path, template=None, body="Selam {{ name }}")()
    # Another name is another campaign: it sends.
    await Run(bed, path, name="second", template=None, body="Selam {{ name }}")()
    assert len(bed.outbox) == 10


async def test_bad_rows_fail_alone_and_the_rest_go_out(bed: TestBed, tmp_path: Path) -> None:
    path = tmp_path / "mixed.csv"
    path.write_text(
        "phone,name,order\n"
        "05321000001,Ali,A-1\n"
        "12345,Veli,A-2\n"  # not a mobile number
        "05321000003,,A-3\n"  # the template's variable is empty
        ",Nobody,A-4\n"  # no number
        "05321000005,Can,A-5,surplus\n"  # a cell past the header
        "05321000006,Ece,A-6\n",
        encoding="utf-8",
    )
    run = Run(bed, path, chunk=4)

    summary = await run()

    outcome = {r.row: (r.status, r.error_code) for r in run.results}
    assert outcome == {
        2: ("sent", None),
        3: ("failed", "INVALID_RECIPIENT"),
        4: ("failed", "TEMPLATE_VARIABLE_MISSING"),
        5: ("failed", "INVALID_RECIPIENT"),
        6: ("failed", "VALIDATION_ERROR"),
        7: ("sent", None),
    }
    assert sorted(_handed_over(bed)) == ["+905321000001", "+905321000006"]
    assert summary.stopped is None
    # Rows the bulk itself refused keep a job (stored failed, as over REST); rows refused
    # before the bulk have none.
    assert [r.row for r in run.results if r.job_id is None] == [5, 6]


async def test_body_mode_fills_columns_into_the_text(bed: TestBed, tmp_path: Path) -> None:
    path = tmp_path / "body.csv"
    path.write_text("phone,name\n05321000001,Ali\n05321000002,\n", encoding="utf-8")
    run = Run(bed, path, template=None, body="Selam {{ name }}!")

    await run()

    assert [s.text for s in bed.outbox] == ["Selam Ali!"]
    assert (run.results[1].status, run.results[1].error_code) == (
        "failed",
        "TEMPLATE_VARIABLE_MISSING",
    )


async def test_the_rate_paces_the_chunks_on_the_clock(bed: TestBed, tmp_path: Path) -> None:
    run = Run(bed, _csv(tmp_path, 50), rate=10.0)

    await run()

    # A bucket of 10 (one chunk) refilling at 10 a second: the first chunk goes at once,
    # each of the other four waits the refusal's Retry-After, one second.
    assert run.slept == [pytest.approx(1.0)] * 4
    assert len(bed.outbox) == 50


async def test_a_request_level_refusal_stops_the_run_and_a_rerun_resumes(
    bed: TestBed, tmp_path: Path
) -> None:
    path = _csv(tmp_path, 30)
    run = Run(bed, path)
    deleted = False

    async def on_chunk(results: Sequence[RowResult]) -> None:
        nonlocal deleted
        if not deleted:
            deleted = True
            await bed.messenger.templates.delete(bed.workspace.id, TEMPLATE)

    summary = await run.campaign.run(on_chunk)

    assert summary.stopped is not None
    assert summary.stopped.code == "TEMPLATE_NOT_FOUND"
    assert (summary.done, summary.stopped_at_row) == (10, 12)
    assert len(bed.outbox) == 10

    await bed.messenger.templates.set(bed.workspace.id, TEMPLATE, TEMPLATE_BODY)
    resumed = await Run(bed, path)()
    assert resumed.stopped is None
    assert set(_handed_over(bed).values()) == {1}
    assert len(bed.outbox) == 30


async def test_status_follows_the_messages_as_reports_arrive(bed: TestBed, tmp_path: Path) -> None:
    path = tmp_path / "s.csv"
    path.write_text(
        "phone,name,order\n"
        "05321000001,A,1\n"
        "+905550000004,B,2\n"  # the simulator reports it expired
        "12345,C,3\n"  # refused by the bulk: failed, with a job
        ",D,4\n",  # refused before the bulk: no job
        encoding="utf-8",
    )
    await Run(bed, path)()
    before = await campaign_status(bed.messenger, bed.workspace.id, "s.csv", livemode=False)
    await bed.settle(timedelta(seconds=5))
    after = await campaign_status(bed.messenger, bed.workspace.id, "s.csv", livemode=False)

    assert before.messages == {"sent": 2, "failed": 1}
    assert after.messages == {"delivered": 1, "expired": 1, "failed": 1}
    assert after.errors == {"INVALID_RECIPIENT": 1}
    assert after.manifest["rows"] == after.manifest["rows_done"] == 4


async def test_status_of_an_unknown_campaign_is_not_found(bed: TestBed) -> None:
    from unified_messaging import ResourceNotFound

    with pytest.raises(ResourceNotFound, match="No campaign 'nope'"):
        await campaign_status(bed.messenger, bed.workspace.id, "nope", livemode=False)
    # Asking left nothing behind: the campaign still does not exist.
    with pytest.raises(ResourceNotFound):
        await campaign_status(bed.messenger, bed.workspace.id, "nope", livemode=False)


async def test_rows_whose_hand_over_was_cut_off_are_unknown_not_sent(
    bed: TestBed, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run dies after chunk 2 was handed to the provider and before
    its outcome was stored; its check settles those rows ``unknown`` (``SUBMIT_INTERRUPTED``).
    A re-run and ``campaign status`` count them as that, never as ``sent``."""
    path = _csv(tmp_path, 30)
    store_outcome = Messenger._store_outcome
    calls = 0

    async def dies_storing_chunk_2(self: Messenger, *args: Any, **kwargs: Any) -> None:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise SystemExit("killed")
        await store_outcome(self, *args, **kwargs)

    monkeypatch.setattr(Messenger, "_store_outcome", dies_storing_chunk_2)
    with pytest.raises(SystemExit):
        await Run(bed, path)()
    monkeypatch.undo()
    assert len(bed.outbox) == 20
    clock = bed.clock
    assert isinstance(clock, ManualClock)
    clock.advance(timedelta(minutes=3))  # past the submit time-out: the checks are due
    await bed.messenger.worker().run_until_idle()

    summary = await Run(bed, path)()

    assert summary.by_status == {"sent": 20, "unknown": 10}
    assert summary.errors == {"SUBMIT_INTERRUPTED": 10}
    assert len(bed.outbox) == 30  # chunk 2 was not sent again
    status = await campaign_status(bed.messenger, bed.workspace.id, path.name, livemode=False)
    # Chunk 1's reports came in while the worker ran; chunk 3 was sent just now.
    assert status.messages == {"delivered": 10, "sent": 10, "unknown": 10}
