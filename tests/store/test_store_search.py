"""``Store.list_messages`` and ``Store.connection_stats`` on memory, SQLite and PostgreSQL.

The same records go into every backend and the same answers must come out: the SQL store
computes in SQL what the memory store computes in Python, and these tests are what holds
the two together (the filters, the order, the cursor, the counts and the percentiles).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from unified_messaging._domain import Attempt, MessageRecord, Workspace
from unified_messaging._types import MessageStatus, ProviderCode
from unified_messaging.store.base import ConnectionStats, MessageQuery, Store

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
INJECTION = "'; DROP TABLE um_messages; --"


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def a_message(job_id: str, **changes: Any) -> MessageRecord:
    message = MessageRecord(
        job_id=job_id,
        workspace_id="ws_1",
        livemode=True,
        status="sent",
        to="+905551234567",
        channel="sms",
        provider="sms_a",
        created_at=T0,
        updated_at=T0,
        text="Merhaba",
    )
    return replace(message, **changes)


async def with_workspaces(store: Store, *ids: str) -> None:
    for workspace_id in ids:
        await store.create_workspace(Workspace(id=workspace_id, name=workspace_id, created_at=T0))


def ids(records: list[MessageRecord]) -> list[str]:
    return [record.job_id for record in records]


# --------------------------------------------------------------------------- the list


async def test_lists_newest_first_and_breaks_ties_by_job_id_descending(store: Store) -> None:
    await with_workspaces(store, "ws_1")
    await store.insert_messages(
        [
            a_message("msg_b", created_at=at(1)),
            a_message("msg_a", created_at=at(2)),
            a_message("msg_d", created_at=at(1)),
            a_message("msg_c", created_at=at(0)),
        ]
    )

    found = await store.list_messages(MessageQuery("ws_1", True))

    assert ids(found) == ["msg_a", "msg_d", "msg_b", "msg_c"]


async def test_limit_bounds_the_answer(store: Store) -> None:
    await with_workspaces(store, "ws_1")
    await store.insert_messages([a_message(f"msg_{i}", created_at=at(i)) for i in range(5)])

    found = await store.list_messages(MessageQuery("ws_1", True, limit=2))

    assert ids(found) == ["msg_4", "msg_3"]


async def test_only_the_queried_workspace_and_mode_are_listed(store: Store) -> None:
    await with_workspaces(store, "ws_1", "ws_2")
    await store.insert_messages(
        [
            a_message("msg_live"),
            a_message("msg_test", livemode=False),
            a_message("msg_other", workspace_id="ws_2"),
        ]
    )

    assert ids(await store.list_messages(MessageQuery("ws_1", True))) == ["msg_live"]
    assert ids(await store.list_messages(MessageQuery("ws_1", False))) == ["msg_test"]
    assert ids(await store.list_messages(MessageQuery("ws_2", True))) == ["msg_other"]
    assert await store.list_messages(MessageQuery("ws_nope", True)) == []


async def test_each_filter_keeps_only_its_messages(store: Store) -> None:
    await with_workspaces(store, "ws_1")
    await store.insert_messages(
        [
            a_message("msg_1", to="+905550000001", status="delivered", provider="sms_a"),
            a_message("msg_2", to="+905550000002", status="failed", provider="sms_b"),
            a_message("msg_3", to="+905550000001", status="failed", provider="sms_b"),
            a_message("msg_4", to="@channel", status="delivered", provider="chatbot"),
        ]
    )

    async def listed(**filters: Any) -> list[str]:
        return sorted(ids(await store.list_messages(MessageQuery("ws_1", True, **filters))))

    assert await listed(to=("+905550000001",)) == ["msg_1", "msg_3"]
    assert await listed(to=("@channel", "+905550000002")) == ["msg_2", "msg_4"]
    assert await listed(status="failed") == ["msg_2", "msg_3"]
    assert await listed(provider="sms_b") == ["msg_2", "msg_3"]
    assert await listed(status="failed", to=("+905550000001",)) == ["msg_3"]
    assert await listed(status="delivered", provider="sms_b") == []


async def test_created_after_is_inclusive_and_created_before_exclusive(store: Store) -> None:
    await with_workspaces(store, "ws_1")
    await store.insert_messages([a_message(f"msg_{i}", created_at=at(i)) for i in range(4)])

    found = await store.list_messages(
        MessageQuery("ws_1", True, created_after=at(1), created_before=at(3))
    )

    assert ids(found) == ["msg_2", "msg_1"]


async def test_bounds_in_other_time_zones_mean_the_same_instant(store: Store) -> None:
    await with_workspaces(store, "ws_1")
    await store.insert_messages([a_message(f"msg_{i}", created_at=at(i)) for i in range(3)])
    istanbul = timezone(timedelta(hours=3))

    found = await store.list_messages(
        MessageQuery("ws_1", True, created_after=at(1).astimezone(istanbul))
    )

    assert ids(found) == ["msg_2", "msg_1"]


async def test_the_cursor_continues_after_a_message_sharing_its_time(store: Store) -> None:
    await with_workspaces(store, "ws_1")
    await store.insert_messages(
        [
            a_message("msg_a", created_at=at(1)),
            a_message("msg_b", created_at=at(1)),
            a_message("msg_c", created_at=at(1)),
            a_message("msg_z", created_at=at(0)),
        ]
    )

    found = await store.list_messages(MessageQuery("ws_1", True, older_than=(at(1), "msg_b")))

    assert ids(found) == ["msg_a", "msg_z"]


async def test_hostile_text_is_a_value_to_compare_never_sql(store: Store) -> None:
    await with_workspaces(store, "ws_1")
    await store.insert_messages(
        [a_message("msg_1", to=INJECTION, channel="chatbot"), a_message("msg_2")]
    )

    found = await store.list_messages(MessageQuery("ws_1", True, to=(INJECTION,)))

    assert ids(found) == ["msg_1"]
    assert len(await store.list_messages(MessageQuery("ws_1", True))) == 2


# --------------------------------------------------------------------------- paging, any filter

STATUSES: list[MessageStatus] = ["queued", "sent", "delivered", "failed", "unknown"]
PROVIDERS: list[ProviderCode] = ["sms_a", "sms_b", "chatbot"]
RECIPIENTS = ["+905550000001", "+905550000002", "@channel"]


def dataset() -> list[MessageRecord]:
    """60 messages over two workspaces and both modes, with many ``created_at`` ties."""
    records = []
    for i in range(60):
        records.append(
            a_message(
                f"msg_{i:03d}_{(i * 7) % 11}",
                workspace_id="ws_1" if i % 5 else "ws_2",
                livemode=i % 4 != 0,
                to=RECIPIENTS[i % 3],
                status=STATUSES[(i // 2) % len(STATUSES)],
                provider=PROVIDERS[(i // 3) % len(PROVIDERS)],
                created_at=at((i * 13) % 9),  # nine distinct times
            )
        )
    return records


def expected(records: list[MessageRecord], query: MessageQuery) -> list[str]:
    """The answer by definition, written out plainly (not the store's code)."""
    kept = [
        r
        for r in records
        if r.workspace_id == query.workspace_id
        and r.livemode == query.livemode
        and (not query.to or r.to in query.to)
        and (query.status is None or r.status == query.status)
        and (query.provider is None or r.provider == query.provider)
        and (query.created_after is None or r.created_at >= query.created_after)
        and (query.created_before is None or r.created_at < query.created_before)
    ]
    kept.sort(key=lambda r: (r.created_at, r.job_id), reverse=True)
    return [r.job_id for r in kept]


queries = st.builds(
    MessageQuery,
    workspace_id=st.sampled_from(["ws_1", "ws_2"]),
    livemode=st.booleans(),
    to=st.one_of(st.just(()), st.lists(st.sampled_from(RECIPIENTS), max_size=2).map(tuple)),
    status=st.one_of(st.none(), st.sampled_from(STATUSES)),
    provider=st.one_of(st.none(), st.sampled_from(PROVIDERS)),
    created_after=st.one_of(st.none(), st.integers(0, 9).map(at)),
    created_before=st.one_of(st.none(), st.integers(0, 9).map(at)),
    limit=st.integers(1, 7),
)


@pytest.fixture
async def stocked(store: Store) -> Store:
    await with_workspaces(store, "ws_1", "ws_2")
    await store.insert_messages(dataset())
    return store


@settings(
    max_examples=60,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(query=queries)
async def test_paging_through_any_filter_gives_the_filtered_set_newest_first_once(
    stocked: Store, query: MessageQuery
) -> None:
    seen: list[str] = []
    cursor = query
    for _ in range(100):
        page = await stocked.list_messages(cursor)
        assert len(page) <= query.limit
        seen += ids(page)
        if len(page) < query.limit:
            break
        last = page[-1]
        cursor = replace(query, older_than=(last.created_at, last.job_id))

    assert seen == expected(dataset(), query)
    assert len(seen) == len(set(seen))


# --------------------------------------------------------------------------- the scorecard


def attempt(
    provider: ProviderCode, status: str, *, pmid: str | None = "pm", at_: float = 0
) -> Attempt:
    return Attempt(provider, status, at(at_), pmid)  # type: ignore[arg-type]


def scorecard_dataset() -> list[MessageRecord]:
    delivered_a = [
        a_message(
            f"msg_da{i}",
            status="delivered",
            attempts=(attempt("sms_a", "delivered"),),
            sent_at=at(10),
            final_at=at(10) + timedelta(milliseconds=100 * (i + 1)),
        )
        for i in range(10)  # 100 ms, 200 ms ... 1000 ms
    ]
    return [
        *delivered_a,
        # sms_a refuses at submit, sms_b takes it and delivers it in 2.5 s.
        a_message(
            "msg_fb",
            status="delivered",
            provider="sms_b",
            attempts=(attempt("sms_a", "rejected", pmid=None), attempt("sms_b", "delivered")),
            sent_at=at(10),
            final_at=at(12.5),
        ),
        # sms_a reports failed, sms_b's report is still to come.
        a_message(
            "msg_pending",
            provider="sms_b",
            attempts=(attempt("sms_a", "failed"), attempt("sms_b", "accepted")),
            sent_at=at(10),
        ),
        a_message("msg_exp", status="expired", attempts=(attempt("sms_a", "expired"),)),
        a_message("msg_unk", status="unknown", attempts=(attempt("sms_a", "unknown"),)),
        a_message("msg_write_ahead", status="queued"),  # no attempt yet: counts nowhere
        # Outside what is asked: too old, another workspace, the other mode.
        a_message("msg_old", created_at=at(-1), attempts=(attempt("sms_c", "accepted"),)),
        a_message("msg_ws2", workspace_id="ws_2", attempts=(attempt("sms_c", "accepted"),)),
        a_message("msg_test", livemode=False, attempts=(attempt("sms_c", "accepted"),)),
    ]


async def test_the_scorecard_counts_every_attempt_of_each_provider(store: Store) -> None:
    await with_workspaces(store, "ws_1", "ws_2")
    await store.insert_messages(scorecard_dataset())

    stats = await store.connection_stats("ws_1", True, T0)

    assert stats == [
        ConnectionStats(
            provider="sms_a",
            sent=13,  # 10 delivered, failed, expired, unknown: not the refusal at submit
            delivered=10,
            failed=2,
            expired=1,
            unknown=1,
            pending=0,
            fallbacks=2,
            p50_ms=500,
            p95_ms=1000,
        ),
        ConnectionStats(
            provider="sms_b",
            sent=2,
            delivered=1,
            pending=1,
            p50_ms=2500,
            p95_ms=2500,
        ),
    ]
    assert stats[0].delivery_rate == pytest.approx(10 / 14)
    assert stats[1].delivery_rate == 1.0


async def test_the_scorecard_reads_only_the_workspace_mode_and_window(store: Store) -> None:
    await with_workspaces(store, "ws_1", "ws_2")
    await store.insert_messages(scorecard_dataset())

    assert [s.provider for s in await store.connection_stats("ws_2", True, T0)] == ["sms_c"]
    assert [s.provider for s in await store.connection_stats("ws_1", False, T0)] == ["sms_c"]
    assert await store.connection_stats("ws_1", True, at(1)) == []
    older = await store.connection_stats("ws_1", True, at(-1))
    assert [s.provider for s in older] == ["sms_a", "sms_b", "sms_c"]


@pytest.mark.parametrize(
    ("millis", "p50", "p95"),
    [
        ([7], 7, 7),
        ([1, 2], 1, 2),
        ([3, 1, 2], 2, 3),
        (list(range(1, 21)), 10, 19),
        (list(range(1, 101)), 50, 95),
    ],
)
async def test_delivery_time_percentiles_are_nearest_rank(
    store: Store, millis: list[int], p50: int, p95: int
) -> None:
    await with_workspaces(store, "ws_1")
    await store.insert_messages(
        [
            a_message(
                f"msg_{i}",
                status="delivered",
                attempts=(attempt("sms_a", "delivered"),),
                sent_at=at(0),
                final_at=at(0) + timedelta(milliseconds=ms),
            )
            for i, ms in enumerate(millis)
        ]
    )

    [stats] = await store.connection_stats("ws_1", True, T0)

    assert (stats.p50_ms, stats.p95_ms) == (p50, p95)


async def test_delivery_times_round_half_a_millisecond_up(store: Store) -> None:
    await with_workspaces(store, "ws_1")
    sent = at(0) + timedelta(microseconds=999_900)  # across a second's boundary
    await store.insert_messages(
        [
            a_message(
                f"msg_{i}",
                status="delivered",
                attempts=(attempt("sms_a", "delivered"),),
                sent_at=sent,
                final_at=sent + timedelta(microseconds=micros),
            )
            for i, micros in enumerate([1_499, 1_500])
        ]
    )

    [stats] = await store.connection_stats("ws_1", True, T0)

    assert (stats.p50_ms, stats.p95_ms) == (1, 2)
