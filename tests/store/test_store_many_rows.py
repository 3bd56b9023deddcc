"""A bulk's many rows, written in one go, on every backend.

PostgreSQL writes more than a few rows of one statement as **one** statement over arrays
(``unnest``: ``Hot.executemany``) and a bulk's outcome as one compare-and-set statement
(``Hot.compare_and_set_many``); SQLite runs its ``executemany``. These check that every
typed column (JSON, timestamps with time zone, booleans, NULLs, text with quotes and
non-ASCII) comes back exactly as written by those paths, that the compare-and-set still
skips the rows that moved on or are gone, and that a batch naming one message twice is
written as the rows one by one were (the last one wins). Sizes above 16 rows, the point
where PostgreSQL stops combining a send's few writes into one ``WITH``.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, timedelta, timezone

import pytest
from test_store_contract import LEASE, T0, UNICODE, a_message, a_workspace, at

from unified_messaging._domain import Attempt, DeliveryReport, ErrorInfo, MessageRecord
from unified_messaging._errors import AlreadyExists
from unified_messaging.store.base import ProviderRef, Store, WorkItem

MANY = 40
ODD = 'it\'s "quoted", {braces}, [1,2], NULL, \\back\\, tab\tnew\nline, ' + UNICODE


@pytest.fixture
async def ws(store: Store) -> Store:
    await store.create_workspace(a_workspace())
    return store


def _varied(n: int) -> MessageRecord:
    """Message ``n`` of a bulk: every nullable column set on odd ``n``, NULL on even."""
    full = n % 2 == 1
    when = T0 + timedelta(days=n, microseconds=n * 7 + 1)
    return a_message(
        f"job_{n:03d}",
        livemode=n % 3 != 0,
        to=f"+90555{n:07d}",
        text=f"{ODD} #{n}",
        created_at=when,
        updated_at=when + timedelta(seconds=1),
        sender=f"SENDER{n}" if full else None,
        template_key="otp" if full else None,
        sent_at=when.astimezone(timezone(timedelta(hours=3))) if full else None,
        final_at=when + timedelta(hours=1) if full else None,
        error=ErrorInfo("E_ODD", ODD) if full else None,
        attempts=(
            (Attempt("sms_a", "accepted", when, f"pm_{n}", ErrorInfo("x", ODD)),) if full else ()
        ),
        dlr=DeliveryReport("delivered", when, ODD, None) if full else None,
        segments=n if full else None,
        encoding="ucs2" if full else None,
        fallback_left=("sms_b", "sms_c") if full else (),
        fallback_requested=full,
        template_params=(ODD, "", "0") if full else (),
        requested_sender="ASKED" if full else None,
        template_name="tpl" if full else None,
        template_language="tr" if full else None,
        phase="submitting",
        send_at=when + timedelta(minutes=5) if full else None,
    )


def _as_stored(message: MessageRecord) -> MessageRecord:
    """Timestamps come back in UTC: the same instant, the zone normalized."""
    sent_at = message.sent_at.astimezone(UTC) if message.sent_at is not None else None
    return replace(message, sent_at=sent_at)


def _flipped(message: MessageRecord) -> MessageRecord:
    """The outcome: every nullable column the other way round (NULL ↔ a value)."""
    other = _varied(int(message.job_id[4:]) + 1)
    return replace(
        other,
        job_id=message.job_id,
        created_at=message.created_at,
        status="sent",
        phase="settled",
        version=message.version + 1,
    )


async def _read(ws: Store, message: MessageRecord) -> MessageRecord | None:
    return await ws.get_message("ws_1", message.livemode, message.job_id)


async def test_a_bulks_typed_columns_round_trip_exactly(ws: Store) -> None:
    bulk = [_varied(n) for n in range(MANY)]
    checks = [
        WorkItem(f"chk_{m.job_id}", "check", m.job_id, at(300 + n), T0, payload={"n": n, "s": ODD})
        for n, m in enumerate(bulk)
    ]
    assert await ws.accept_messages(bulk, work=checks)
    for message in bulk:
        assert await _read(ws, message) == _as_stored(message)

    outcome = [_flipped(m) for m in bulk]
    refs = [
        ProviderRef("conn_1", f"pm_{m.job_id}", m.job_id, "ws_1", m.livemode, open=n % 2 == 0)
        for n, m in enumerate(bulk)
    ]
    timeouts = [
        WorkItem(f"tmo_{m.job_id}", "dlr_timeout", m.job_id, at(3600), T0, payload={"c": None})
        for m in bulk
    ]
    moved = await ws.finish_messages(outcome, work=timeouts, refs=refs, done=[c.id for c in checks])
    assert moved == []
    for message in outcome:
        assert await _read(ws, message) == _as_stored(message)
    for n, ref in enumerate(refs):
        found = await ws.find_provider_ref("conn_1", ref.provider_message_id)
        assert found == ref, n
    due = await ws.claim_due_work(now=at(10_000), worker_id="w", lease=LEASE, limit=10 * MANY)
    assert sorted(item.id for item in due) == sorted(t.id for t in timeouts)  # checks gone
    assert {item.id: item.payload for item in due} == {t.id: {"c": None} for t in timeouts}


async def test_a_bulks_outcome_skips_the_rows_that_moved_on_or_are_gone(ws: Store) -> None:
    bulk = [_varied(n) for n in range(MANY)]
    assert await ws.accept_messages(bulk)
    # Meanwhile something else (a report, the submit check) moved two on.
    for n in (3, 17):
        assert await ws.replace_message(replace(bulk[n], status="unknown", version=1))
    outcome = [_flipped(m) for m in bulk]
    gone = replace(_flipped(_varied(MANY + 1)), job_id="job_999")  # never written
    moved = await ws.finish_messages(
        [*outcome, gone],
        work=[WorkItem(f"tmo_{m.job_id}", "dlr_timeout", m.job_id, at(9), T0) for m in outcome],
    )
    assert sorted(moved) == ["job_003", "job_017", "job_999"]
    for n, message in enumerate(outcome):
        if n in (3, 17):
            kept = replace(bulk[n], status="unknown", version=1)
            assert await _read(ws, kept) == _as_stored(kept)
        else:
            assert await _read(ws, message) == _as_stored(message)
    assert await ws.get_message("ws_1", True, "job_999") is None
    due = await ws.claim_due_work(now=at(100), worker_id="w", lease=LEASE, limit=10 * MANY)
    assert "tmo_job_003" not in {item.id for item in due}  # a moved row's follow-ups dropped
    assert len(due) == MANY - 2


async def test_an_update_naming_one_message_twice_keeps_the_last(ws: Store) -> None:
    bulk = [_varied(n) for n in range(MANY)]
    assert await ws.accept_messages(bulk)
    changed = [replace(m, status="sent", version=1) for m in bulk]
    twice = replace(bulk[5], status="failed", text="second", version=2)
    await ws.update_messages([*changed, twice])
    assert await _read(ws, bulk[5]) == _as_stored(twice)
    assert await _read(ws, bulk[6]) == _as_stored(changed[6])


async def test_a_bulk_whose_job_id_is_taken_stores_nothing(ws: Store) -> None:
    bulk = [_varied(n) for n in range(MANY)]
    assert await ws.accept_messages(bulk[:1])
    with pytest.raises(AlreadyExists):
        await ws.accept_messages(bulk[1:] + bulk[:1])
    assert await _read(ws, bulk[1]) is None
