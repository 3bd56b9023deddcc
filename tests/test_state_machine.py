"""The state machine is code: every status change goes through ``check_move``.

Each lifecycle below runs the real code (messenger, worker, store) with the table replaced by
a recording copy, and asserts the exact moves it made: so a move the table lacked would
raise ``IllegalTransition`` here, and a path that changed a status without asking the table
would be missing from the recording. The pure cases check what is refused.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from unified_messaging._domain import Attempt, MessageRecord
from unified_messaging._lifecycle import rules
from unified_messaging._lifecycle.rules import (
    INITIAL_STATUSES,
    SUBMIT_INTERRUPTED,
    TRANSITIONS,
    IllegalTransition,
    begin,
    check_move,
    move,
)
from unified_messaging.providers.base import InboundCallback
from unified_messaging.testing import TestBed, create_testbed

NORMAL = "+905551234567"
FAILS_BY_REPORT = "+905550000006"
NO_REPORT = "+905550000008"
UNREACHABLE = "+905550000003"
MINUTE = timedelta(minutes=1)
NEW = "(new)"  # the "from" of a record being created

Move = tuple[str, str]


class _Recording(frozenset[tuple[str, str]]):
    """The table, remembering every move asked of it (in order)."""

    seen: list[Move]

    def __contains__(self, pair: object) -> bool:
        assert isinstance(pair, tuple)
        self.seen.append(pair)
        return super().__contains__(pair)


class _RecordingStarts(frozenset[str]):
    seen: list[Move]

    def __contains__(self, status: object) -> bool:
        assert isinstance(status, str)
        self.seen.append((NEW, status))
        return super().__contains__(status)


@pytest.fixture
def moves(monkeypatch: pytest.MonkeyPatch) -> list[Move]:
    seen: list[Move] = []
    table = _Recording(TRANSITIONS)
    table.seen = seen
    starts = _RecordingStarts(INITIAL_STATUSES)
    starts.seen = seen
    monkeypatch.setattr(rules, "TRANSITIONS", table)
    monkeypatch.setattr(rules, "INITIAL_STATUSES", starts)
    return seen


@pytest.fixture
async def bed() -> TestBed:
    bed = await create_testbed(recipient_limit=None)
    store = bed.messenger.store
    for connection in await store.list_connections(bed.workspace.id):
        await store.update_connection(replace(connection, dlr_timeout=MINUTE))
    return bed


async def send(bed: TestBed, to: str, **extra: object) -> str:
    response = await bed.messenger.send(bed.principal, {"to": to, "body": "Merhaba", **extra})
    return response.job_id


async def status(bed: TestBed, job_id: str) -> str:
    return (await bed.messenger.get_message(bed.principal, job_id)).status


def _push(message_id: str, report: str) -> InboundCallback:
    body = f'{{"provider_message_id": "{message_id}", "status": "{report}"}}'.encode()
    return InboundCallback("POST", {"content-type": "application/json"}, {}, body)


# -- the moves the code makes, lifecycle by lifecycle ------------------------------------------


async def test_a_report_ends_a_sent_message(bed: TestBed, moves: list[Move]) -> None:
    job_id = await send(bed, NORMAL)
    await bed.settle()
    assert await status(bed, job_id) == "delivered"
    assert moves == [(NEW, "queued"), ("queued", "sent"), ("sent", "delivered")]


async def test_fallback_by_report_stays_sent_then_ends(bed: TestBed, moves: list[Move]) -> None:
    job_id = await send(bed, FAILS_BY_REPORT, fallback=["sms_b"])
    await bed.settle()
    assert await status(bed, job_id) == "failed"
    # The failed report with fallback left moves nothing; sms_b taking it is sent -> sent.
    assert moves == [(NEW, "queued"), ("queued", "sent"), ("sent", "sent"), ("sent", "failed")]


async def test_a_time_out_ends_unknown_and_a_late_report_replaces_it(
    bed: TestBed, moves: list[Move]
) -> None:
    job_id = await send(bed, NO_REPORT)
    first = (await bed.messenger.get_message(bed.principal, job_id)).attempts[0]
    await bed.settle(MINUTE)
    assert await status(bed, job_id) == "unknown"
    connection = next(
        c for c in await bed.messenger.connections.list(bed.workspace.id) if c.provider == "sms_a"
    )
    pushed = _push(str(first.provider_message_id), "delivered")

    await bed.messenger.reports.ingest(connection.id, connection.dlr_token, pushed)

    assert await status(bed, job_id) == "delivered"
    assert moves == [
        (NEW, "queued"),
        ("queued", "sent"),
        ("sent", "unknown"),
        ("unknown", "delivered"),
    ]


async def test_chatbot_success_is_queued_to_delivered(bed: TestBed, moves: list[Move]) -> None:
    response = await bed.messenger.send(
        bed.principal, {"to": "@acme_channel", "body": "Selam", "provider": "chatbot"}
    )
    assert await status(bed, response.job_id) == "delivered"
    assert moves == [(NEW, "queued"), ("queued", "delivered")]


async def test_a_queued_message_fails_at_its_ttl(bed: TestBed, moves: list[Move]) -> None:
    await bed.messenger.workspaces.set_retry_unavailable(bed.workspace.id, True)
    principal = await bed.messenger.principal(bed.workspace.id, livemode=False)
    sent = await bed.messenger.send(principal, {"to": UNREACHABLE, "body": "x"})
    for _ in range(30):
        if (await bed.messenger.get_message(principal, sent.job_id)).status != "queued":
            break
        await bed.settle(timedelta(seconds=30))
    assert (await bed.messenger.get_message(principal, sent.job_id)).status == "failed"
    # Queued at the send and again after each retry round that found no provider, then failed.
    assert moves[0] == (NEW, "queued")
    assert moves[-1] == ("queued", "failed")
    rounds = moves[1:-1]
    assert len(rounds) >= 2
    assert set(rounds) == {("queued", "queued")}


async def test_a_submit_whose_outcome_was_never_stored_ends_unknown(
    bed: TestBed, moves: list[Move], monkeypatch: pytest.MonkeyPatch
) -> None:
    from unified_messaging._errors import StorageUnavailable

    store = bed.messenger.store

    async def down(*args: object, **kwargs: object) -> list[str]:
        raise StorageUnavailable("The message store is unavailable: down for the test")

    with monkeypatch.context() as patch:
        patch.setattr(store, "finish_messages", down)
        job_id = await send(bed, NO_REPORT)
    await bed.settle(timedelta(minutes=3))  # past the submit time-out: the check runs

    record = await bed.messenger.get_message(bed.principal, job_id)
    assert record.status == "unknown"
    assert record.error is not None and record.error.code == SUBMIT_INTERRUPTED.code
    # The send's outcome (queued -> sent) was worked out but never stored.
    assert moves == [(NEW, "queued"), ("queued", "sent"), ("queued", "unknown")]


async def test_an_outcome_after_its_check_replaces_submit_interrupted(
    bed: TestBed, moves: list[Move], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = bed.messenger.store
    kept = store.finish_messages

    async def check_runs_first(*args: object, **kwargs: object) -> list[str]:
        monkeypatch.setattr(store, "finish_messages", kept)
        await bed.settle(timedelta(minutes=3))
        return await kept(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(store, "finish_messages", check_runs_first)
    job_id = await send(bed, NORMAL)

    assert await status(bed, job_id) == "sent"
    assert moves == [
        (NEW, "queued"),
        ("queued", "sent"),
        ("queued", "unknown"),
        ("unknown", "sent"),  # the outcome, checked over the stored SUBMIT_INTERRUPTED
    ]


async def test_a_bulk_item_refused_before_any_provider_starts_failed(
    bed: TestBed, moves: list[Move]
) -> None:
    answer = await bed.messenger.send_bulk(
        bed.principal, {"items": [{"to": NORMAL, "body": "a"}, {"to": "not a number", "body": "b"}]}
    )
    assert [r.status for r in answer.results] == ["sent", "failed"]
    assert set(moves) == {(NEW, "queued"), (NEW, "failed"), ("queued", "sent")}


# -- what the table refuses ---------------------------------------------------------------------

T0 = datetime(2026, 3, 1, tzinfo=UTC)


def _record(status: str, **changes: object) -> MessageRecord:
    base = MessageRecord(
        job_id="msg_1",
        workspace_id="ws_1",
        livemode=True,
        status=status,  # type: ignore[arg-type]
        to=NORMAL,
        channel="sms",
        provider="sms_a",
        created_at=T0,
        updated_at=T0,
        text="hi",
        attempts=(Attempt("sms_a", "accepted", T0, "pm-0"),),
    )
    return replace(base, **changes)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("source", "target"),
    [
        ("delivered", "sent"),
        ("delivered", "failed"),
        ("failed", "sent"),
        ("expired", "queued"),
        ("rejected", "delivered"),
        ("queued", "expired"),
        ("queued", "rejected"),
    ],
)
def test_a_move_outside_the_table_raises(source: str, target: str) -> None:
    with pytest.raises(IllegalTransition, match=f"{source} -> {target}"):
        move(_record(source), target)  # type: ignore[arg-type]


def test_unknown_goes_back_to_sent_or_queued_only_over_submit_interrupted() -> None:
    timed_out = _record("unknown")  # ended by its DLR time-out
    for target in ("sent", "queued"):
        with pytest.raises(IllegalTransition):
            check_move(timed_out, target)
        check_move(replace(timed_out, error=SUBMIT_INTERRUPTED), target)


def test_a_legal_move_changes_the_status_and_the_fields_given() -> None:
    moved = move(_record("sent"), "delivered", final_at=T0)
    assert (moved.status, moved.final_at) == ("delivered", T0)


@pytest.mark.parametrize("status", ["sent", "delivered", "unknown", "expired", "rejected"])
def test_a_record_cannot_start_in_a_later_status(status: str) -> None:
    with pytest.raises(IllegalTransition):
        begin(status)  # type: ignore[arg-type]


def test_an_illegal_move_is_an_assertion_not_a_messaging_error() -> None:
    from unified_messaging import MessagingError

    assert issubclass(IllegalTransition, AssertionError)
    assert not issubclass(IllegalTransition, MessagingError)


def test_the_documented_table_is_the_code_table() -> None:
    """docs/lifecycle.md's state block lists exactly TRANSITIONS (and the initial statuses)."""
    from pathlib import Path

    text = (Path(__file__).parent.parent / "docs" / "lifecycle.md").read_text(encoding="utf-8")
    block = text.split("## States", 1)[1].split("```", 2)[1]
    documented: set[tuple[str, str]] = set()
    for line in block.splitlines():
        if "─►" not in line:
            continue  # the continuation of a comment
        source, rest = (part.strip() for part in line.split("─►", 1))
        targets = rest.split("(", 1)[0]
        documented |= {(source, target.strip()) for target in targets.split("|")}
    starts = {target for source, target in documented if source == NEW}
    assert starts == set(INITIAL_STATUSES)
    assert documented - {(NEW, s) for s in starts} == set(TRANSITIONS)
