"""``Store.stat_counts`` and ``Store.fold_stats`` on memory, SQLite and PostgreSQL.

The oracle is :func:`message_keys` / :func:`verification_keys` over the records as they are
now: whatever path wrote them (insert, a submit's outcome, a compare-and-set, a batch of
reports, an update), the SQL store's triggers must have counted exactly that, folded or not,
and the memory store counts it directly.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import replace
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_store_search import T0, a_message, at, with_workspaces

from unified_messaging._domain import Attempt, MessageRecord
from unified_messaging._types import AttemptStatus, MessageStatus, ProviderCode
from unified_messaging.stats._buckets import hour_of
from unified_messaging.stats._contributions import message_keys, verification_keys
from unified_messaging.stats._records import StatCount
from unified_messaging.store.base import MessageChange, Store, WorkItem
from unified_messaging.verifications._records import Verification

H0 = hour_of(T0)


def oracle(
    records: Iterable[MessageRecord],
    start: int,
    end: int,
    verifications: Iterable[Verification] = (),
) -> list[StatCount]:
    counts: Counter[tuple[str, int | None, str, str, int]] = Counter()
    keys = [k for r in records for k in message_keys(r)]
    keys += [k for v in verifications for k in verification_keys(v)]
    for key in keys:
        if start <= key.hour < end:
            hour = key.hour if key.kind == "status" else None
            counts[(key.kind, hour, key.provider, key.status, key.detail)] += 1
    return sorted(StatCount(*key, n) for key, n in counts.items())  # type: ignore[arg-type]


def delivered(record: MessageRecord, seconds: float, version: int) -> MessageRecord:
    (*earlier, last) = record.attempts
    return replace(
        record,
        status="delivered",
        final_at=(record.sent_at or record.created_at) + timedelta(seconds=seconds),
        attempts=(*earlier, replace(last, status="delivered")),
        version=version,
    )


def sent(record: MessageRecord, *providers: ProviderCode, version: int = 1) -> MessageRecord:
    """``record`` after trying ``providers`` in turn: all but the last refused it."""
    attempts = [Attempt(p, "rejected", at(1)) for p in providers[:-1]]
    attempts.append(Attempt(providers[-1], "accepted", at(2), provider_message_id="pm_1"))
    return replace(
        record,
        status="sent",
        provider=providers[-1],
        attempts=tuple(attempts),
        sent_at=record.created_at + timedelta(seconds=2),
        version=version,
    )


async def test_a_message_counts_by_status_attempt_and_delivery_time(store: Store) -> None:
    await with_workspaces(store, "ws_1")
    queued = a_message("m1", status="queued")
    await store.insert_messages([queued])
    fell_back = sent(queued, "sms_a", "sms_b")
    assert await store.replace_message(fell_back)
    final = delivered(fell_back, 4.5, version=2)
    assert await store.replace_message(final)

    counts = await store.stat_counts("ws_1", True, H0, H0 + 1)

    assert counts == [
        StatCount("attempt", None, "sms_a", "rejected", 1, 1),  # followed by another
        StatCount("attempt", None, "sms_b", "delivered", 2, 1),  # taken, the last
        StatCount("latency", None, "sms_b", "", 10, 1),  # 4.5 s: [4 s, 5 s)
        StatCount("status", H0, "", "delivered", 2, 1),  # fell back
    ]


async def test_counts_stay_within_the_workspace_mode_and_hours(store: Store) -> None:
    await with_workspaces(store, "ws_1", "ws_2")
    records = [
        a_message("m1", status="failed"),
        a_message("m2", created_at=T0 - timedelta(seconds=1)),  # the hour before
        a_message("m3", created_at=T0 + timedelta(hours=1)),  # the hour after
        a_message("m4", livemode=False),
        a_message("m5", workspace_id="ws_2"),
    ]
    await store.insert_messages(records)

    assert await store.stat_counts("ws_1", True, H0, H0 + 1) == [
        StatCount("status", H0, "", "failed", 0, 1)
    ]
    assert await store.stat_counts("ws_1", True, H0 - 1, H0 + 2) == oracle(
        records[:3], H0 - 1, H0 + 2
    )
    assert await store.stat_counts("ws_1", False, H0, H0 + 1) == oracle(records[3:4], H0, H0 + 1)
    assert await store.stat_counts("ws_3", True, H0, H0 + 1) == []
    assert await store.stat_counts("ws_1", True, H0 + 5, H0 + 5) == []


async def test_every_write_path_is_counted(store: Store) -> None:
    await with_workspaces(store, "ws_1")
    first = [a_message(f"m{i}", status="queued", created_at=at(i)) for i in range(6)]
    await store.accept_messages(first, work=[a_work_item("check", "m0")])
    # A submit's outcome: one message alone, then several at once.
    outcome = [sent(first[0], "sms_a")]
    assert await store.finish_messages(outcome) == []
    many = [sent(first[1], "sms_a", "sms_c"), sent(first[2], "sms_b")]
    assert await store.finish_messages(many) == []
    # A batch of reports (the worker's replace_messages), and an update.
    await store.enqueue_work(a_work_item("report", "m1"))
    [claimed] = await store.claim_due_work(
        now=T0, worker_id="w1", lease=timedelta(minutes=1), limit=1
    )
    change = MessageChange(delivered(many[0], 30, version=2), done=claimed.id)
    assert await store.replace_messages([change], worker_id="w1") is not None
    updated = replace(first[3], status="failed", version=1)
    await store.update_messages([updated])
    # A send-phase move changes no count.
    await store.move_send_phase("ws_1", True, ["m4"], source="settled", target="settled")
    now = [outcome[0], change.record, many[1], updated, first[4], first[5]]

    assert await store.stat_counts("ws_1", True, H0, H0 + 1) == oracle(now, H0, H0 + 1)


async def test_fold_keeps_every_count_and_later_changes_add_to_it(store: Store) -> None:
    await with_workspaces(store, "ws_1")
    records = [sent(a_message(f"m{i}", created_at=at(i * 1800)), "sms_a") for i in range(4)]
    await store.insert_messages(records)
    before = await store.stat_counts("ws_1", True, H0, H0 + 2)

    await store.fold_stats()
    assert await store.fold_stats() == 0  # nothing new
    assert await store.stat_counts("ws_1", True, H0, H0 + 2) == before

    later = [delivered(r, 1, version=2) for r in records[:2]]
    for record in later:
        assert await store.replace_message(record)
    expected = oracle([*later, *records[2:]], H0, H0 + 2)
    assert await store.stat_counts("ws_1", True, H0, H0 + 2) == expected
    await store.fold_stats()
    assert await store.stat_counts("ws_1", True, H0, H0 + 2) == expected


async def test_fold_answers_how_many_changes_it_folded(store: Store) -> None:
    await with_workspaces(store, "ws_1")
    await store.insert_messages([a_message("m1"), a_message("m2")])

    folded = await store.fold_stats()

    # SQL: one change per message (its status); memory keeps no log.
    assert folded == (0 if type(store).__name__ == "MemoryStore" else 2)


async def test_verifications_count_by_status_under_the_hour_they_started(store: Store) -> None:
    await with_workspaces(store, "ws_1")
    started = [a_verification(f"ver_{i}", f"+90555000{i:04d}") for i in range(3)]
    for verification in started:
        assert await store.add_verification(verification)
    approved = replace(started[0], status="approved", version=1)
    assert await store.replace_verification(approved)

    counts = await store.stat_counts("ws_1", True, H0, H0 + 1)

    assert counts == [
        StatCount("verification", None, "", "approved", 0, 1),
        StatCount("verification", None, "", "pending", 0, 2),
    ]


def a_work_item(kind: str, ref: str) -> WorkItem:
    return WorkItem(id=f"wk_{kind}_{ref}", kind=kind, ref=ref, due_at=T0, created_at=T0)


def a_verification(verification_id: str, to: str) -> Verification:
    return Verification(
        id=verification_id,
        workspace_id="ws_1",
        livemode=True,
        to=to,
        channel="sms",
        status="pending",
        code_digest="k1.digest",
        code_length=6,
        locale="tr",
        created_at=T0,
        updated_at=T0,
        expires_at=T0 + timedelta(minutes=10),
        max_checks=5,
    )


# --------------------------------------------------------------------------- any history

STATUSES: tuple[MessageStatus, ...] = ("queued", "sent", "delivered", "failed", "expired")
ATTEMPT_STATES: tuple[AttemptStatus, ...] = ("accepted", "rejected", "unavailable", "delivered")
PROVIDERS: tuple[ProviderCode, ...] = ("sms_a", "sms_b", "bizchat")

attempts = st.lists(
    st.builds(
        Attempt,
        provider=st.sampled_from(PROVIDERS),
        status=st.sampled_from(ATTEMPT_STATES),
        at=st.just(T0),
        provider_message_id=st.one_of(st.none(), st.just("pm")),
    ),
    max_size=3,
)
states = st.fixed_dictionaries(
    {
        "status": st.sampled_from(STATUSES),
        "provider": st.sampled_from(PROVIDERS),
        "attempts": attempts.map(tuple),
        # Delivery times from none to days, microseconds included.
        "latency": st.one_of(st.none(), st.integers(-(10**6), 3 * 86_400 * 10**6)),
    }
)
histories = st.lists(
    st.tuples(st.integers(0, 80), st.lists(states, min_size=1, max_size=4)),
    min_size=1,
    max_size=6,
)


def in_state(record: MessageRecord, state: dict[str, object], version: int) -> MessageRecord:
    latency = state["latency"]
    sent_at = record.created_at + timedelta(seconds=1)
    final_at = None if latency is None else sent_at + timedelta(microseconds=latency)  # type: ignore[operator]
    return replace(
        record,
        status=state["status"],  # type: ignore[arg-type]
        provider=state["provider"],  # type: ignore[arg-type]
        attempts=state["attempts"],  # type: ignore[arg-type]
        sent_at=sent_at,
        final_at=final_at,
        version=version,
    )


examples = iter(range(10**6))


@settings(
    max_examples=40,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(history=histories, fold_after=st.integers(0, 4))
async def test_any_history_of_changes_counts_as_its_last_state(
    store: Store, history: list[tuple[int, list[dict[str, object]]]], fold_after: int
) -> None:
    """Messages spread over four days, each through a few states: the counts (any window,
    folded part-way or not) are what the final records count as."""
    workspace = f"ws_h{next(examples)}"
    await with_workspaces(store, workspace)
    final: list[MessageRecord] = []
    for index, (hours, states_) in enumerate(history):
        base = a_message(
            f"{workspace}_m{index}",
            workspace_id=workspace,
            created_at=T0 + timedelta(hours=hours, microseconds=index),
        )
        record = in_state(base, states_[0], 0)
        await store.insert_messages([record])
        for step, state in enumerate(states_[1:], start=1):
            record = in_state(record, state, step)
            assert await store.replace_message(record)
            if step == fold_after:
                await store.fold_stats()
        final.append(record)
    for start, end in ((H0, H0 + 81), (H0 + 5, H0 + 50), (H0 + 23, H0 + 25), (H0 + 30, H0 + 31)):
        assert await store.stat_counts(workspace, True, start, end) == oracle(final, start, end)
    await store.fold_stats()
    assert await store.stat_counts(workspace, True, H0 + 3, H0 + 75) == oracle(
        final, H0 + 3, H0 + 75
    )


@pytest.mark.parametrize("hours", [0, 23, 24, 49])
async def test_a_window_across_whole_days_reads_the_same_as_hour_by_hour(
    store: Store, hours: int
) -> None:
    await with_workspaces(store, "ws_1")
    day_start = T0.replace(hour=0)  # a UTC day bound
    records = [
        sent(a_message(f"m{i}", created_at=day_start + timedelta(hours=i)), "sms_a")
        for i in range(0, 72, 5)
    ]
    await store.insert_messages(records)
    await store.fold_stats()
    start = hour_of(day_start) + hours

    assert await store.stat_counts("ws_1", True, start, start + 30) == oracle(
        records, start, start + 30
    )
