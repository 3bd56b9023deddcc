"""The ``Store`` contract: one suite, run on memory, SQLite and PostgreSQL alike.

Every behaviour the protocol promises is pinned here, so no caller ever depends on which
backend it runs on. (One file on purpose: the suite *is* the contract.)
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from unified_messaging._domain import (
    ApiKey,
    Attempt,
    Connection,
    DeliveryReport,
    ErrorInfo,
    MessageRecord,
    Template,
    Workspace,
)
from unified_messaging._errors import AlreadyExists, ResourceNotFound
from unified_messaging._types import ProviderCode
from unified_messaging.store.base import (
    IdempotencyRecord,
    JsonValue,
    ProviderRef,
    Store,
    WebhookDelivery,
    WebhookEndpoint,
    WorkItem,
)

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
LEASE = timedelta(seconds=30)
INJECTION = "'; DROP TABLE messages; --"
UNICODE = "Merhaba dünya 👋 ĞÜŞİÖÇ ğüşıöç — «τεστ» 漢字 \u200f"
PERIOD = "2026-01"


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def a_workspace(workspace_id: str = "ws_1", **changes: Any) -> Workspace:
    return replace(Workspace(id=workspace_id, name="Acme", created_at=T0), **changes)


def a_key(key_id: str = "key_1", workspace_id: str = "ws_1", **changes: Any) -> ApiKey:
    key = ApiKey(
        id=key_id,
        workspace_id=workspace_id,
        livemode=True,
        key_hash=f"hash-of-{key_id}",
        display_prefix="um_live_abcd",
        created_at=T0,
    )
    return replace(key, **changes)


def a_connection(
    connection_id: str,
    provider: ProviderCode = "sms_a",
    workspace_id: str = "ws_1",
    *,
    created: float = 0,
    **changes: Any,
) -> Connection:
    connection = Connection(
        id=connection_id,
        workspace_id=workspace_id,
        provider=provider,
        created_at=at(created),
        credentials="v1.k1.nonce.ciphertext",
    )
    return replace(connection, **changes)


def a_message(job_id: str = "job_1", workspace_id: str = "ws_1", **changes: Any) -> MessageRecord:
    message = MessageRecord(
        job_id=job_id,
        workspace_id=workspace_id,
        livemode=True,
        status="queued",
        to="+905551234567",
        channel="sms",
        provider="sms_a",
        created_at=T0,
        updated_at=T0,
        text="Hello",
    )
    return replace(message, **changes)


def an_item(item_id: str, *, due: float = 0, kind: str = "dlr_timeout") -> WorkItem:
    return WorkItem(id=item_id, kind=kind, ref=f"job_{item_id}", due_at=at(due), created_at=T0)


def a_record(idem_key: str = "idem-1", **changes: Any) -> IdempotencyRecord:
    record = IdempotencyRecord(
        workspace_id="ws_1",
        key_id="key_1",
        idem_key=idem_key,
        request_hash="sha256:request",
        created_at=T0,
    )
    return replace(record, **changes)


def an_endpoint(endpoint_id: str = "we_1", *, created: float = 0) -> WebhookEndpoint:
    return WebhookEndpoint(
        id=endpoint_id,
        workspace_id="ws_1",
        url="https://hooks.example.com/um",
        events=("message.sent", "message.delivered"),
        secret_ciphertext="v1.k1.nonce.secret",
        created_at=at(created),
    )


def a_delivery(
    delivery_id: str = "wd_1", endpoint_id: str = "we_1", **changes: Any
) -> WebhookDelivery:
    delivery = WebhookDelivery(
        id=delivery_id,
        endpoint_id=endpoint_id,
        event_id=f"evt_{delivery_id}",
        event_type="message.sent",
        payload=b'{"type":"message.sent"}',
        status="pending",
        created_at=T0,
        updated_at=T0,
    )
    return replace(delivery, **changes)


@pytest.fixture
async def ws(store: Store) -> Store:
    """The store with workspace ``ws_1`` in it."""
    await store.create_workspace(a_workspace())
    return store


# -- lifecycle


async def test_open_is_idempotent(store: Store) -> None:
    await store.open()
    await store.open()
    assert await store.list_workspaces() == []


# -- workspaces


async def test_workspace_round_trips_every_field(store: Store) -> None:
    workspace = a_workspace(
        monthly_quota=1000, retry_unavailable=True, queue_ttl=timedelta(minutes=3, seconds=7)
    )
    await store.create_workspace(workspace)
    assert await store.get_workspace("ws_1") == workspace


async def test_unknown_workspace_is_none(store: Store) -> None:
    assert await store.get_workspace("ws_missing") is None


async def test_creating_a_workspace_twice_is_already_exists(ws: Store) -> None:
    with pytest.raises(AlreadyExists):
        await ws.create_workspace(a_workspace())


async def test_workspaces_list_oldest_first(store: Store) -> None:
    await store.create_workspace(a_workspace("ws_b", created_at=at(2)))
    await store.create_workspace(a_workspace("ws_a", created_at=at(1)))
    await store.create_workspace(a_workspace("ws_c", created_at=at(1)))
    assert [w.id for w in await store.list_workspaces()] == ["ws_a", "ws_c", "ws_b"]


async def test_update_workspace_replaces_it(ws: Store) -> None:
    changed = a_workspace(name="Renamed", monthly_quota=5)
    await ws.update_workspace(changed)
    assert await ws.get_workspace("ws_1") == changed


async def test_updating_an_unknown_workspace_is_not_found(store: Store) -> None:
    with pytest.raises(ResourceNotFound):
        await store.update_workspace(a_workspace("ws_missing"))


# -- API keys


async def test_api_key_is_found_by_id_and_by_hash(ws: Store) -> None:
    key = a_key(expires_at=at(3600), rate_limit=12.5, rate_burst=40, name="ci")
    await ws.add_api_key(key)
    assert await ws.get_api_key("key_1") == key
    assert await ws.find_api_key("hash-of-key_1") == key
    assert await ws.find_api_key("hash-of-nothing") is None


async def test_api_key_hash_is_unique(ws: Store) -> None:
    await ws.add_api_key(a_key("key_1"))
    with pytest.raises(AlreadyExists):
        await ws.add_api_key(a_key("key_2", key_hash="hash-of-key_1"))


async def test_api_key_needs_its_workspace(store: Store) -> None:
    with pytest.raises(ResourceNotFound):
        await store.add_api_key(a_key(workspace_id="ws_missing"))


async def test_api_keys_list_per_workspace_oldest_first(ws: Store) -> None:
    await ws.create_workspace(a_workspace("ws_2"))
    await ws.add_api_key(a_key("key_b", created_at=at(2)))
    await ws.add_api_key(a_key("key_a", created_at=at(1)))
    await ws.add_api_key(a_key("key_other", workspace_id="ws_2"))
    assert [k.id for k in await ws.list_api_keys("ws_1")] == ["key_a", "key_b"]


async def test_update_api_key_revokes_it(ws: Store) -> None:
    await ws.add_api_key(a_key())
    await ws.update_api_key(a_key(revoked_at=at(10)))
    stored = await ws.get_api_key("key_1")
    assert stored is not None
    assert stored.revoked_at == at(10)
    with pytest.raises(ResourceNotFound):
        await ws.update_api_key(a_key("key_missing"))


# -- connections


async def test_first_connection_becomes_default(ws: Store) -> None:
    await ws.add_connection(a_connection("c_1", is_default=False))
    stored = await ws.get_connection("c_1")
    assert stored is not None
    assert stored.is_default


async def test_connection_added_as_default_takes_the_default(ws: Store) -> None:
    await ws.add_connection(a_connection("c_1"))
    await ws.add_connection(a_connection("c_2", "sms_b", created=1, is_default=True))
    await ws.add_connection(a_connection("c_3", "sms_c", created=2))
    defaults = {c.id: c.is_default for c in await ws.list_connections("ws_1")}
    assert defaults == {"c_1": False, "c_2": True, "c_3": False}


async def test_second_connection_of_a_provider_is_already_exists(ws: Store) -> None:
    await ws.create_workspace(a_workspace("ws_2"))
    await ws.add_connection(a_connection("c_1", "sms_a"))
    with pytest.raises(AlreadyExists):
        await ws.add_connection(a_connection("c_2", "sms_a"))
    await ws.add_connection(a_connection("c_3", "sms_a", workspace_id="ws_2"))
    assert [c.id for c in await ws.list_connections("ws_1")] == ["c_1"]


async def test_connection_needs_its_workspace(store: Store) -> None:
    with pytest.raises(ResourceNotFound):
        await store.add_connection(a_connection("c_1", workspace_id="ws_missing"))


async def test_connection_round_trips_every_field(ws: Store) -> None:
    connection = a_connection(
        "c_1",
        "sms_c",
        default_sender="ACME",
        approved_senders=("ACME", "ACME INFO", INJECTION),
        iys_mode="commercial_individual",
        is_default=True,
        dlr_timeout=timedelta(hours=2, milliseconds=5),
        turkish_shift=False,
        base_url="http://127.0.0.1:9000",
        dlr_token="tok_secret",
    )
    await ws.add_connection(connection)
    assert await ws.get_connection("c_1") == connection


async def test_update_connection_keeps_the_default_flag(ws: Store) -> None:
    await ws.add_connection(a_connection("c_1"))
    await ws.add_connection(a_connection("c_2", "sms_b", created=1))
    await ws.update_connection(a_connection("c_2", "sms_b", created=1, is_default=True))
    await ws.update_connection(a_connection("c_1", default_sender="NEW", is_default=False))
    c_1, c_2 = await ws.list_connections("ws_1")
    assert (c_1.is_default, c_1.default_sender, c_2.is_default) == (True, "NEW", False)
    with pytest.raises(ResourceNotFound):
        await ws.update_connection(a_connection("c_missing", "sms_e"))


async def test_set_default_connection_moves_the_default(ws: Store) -> None:
    await ws.add_connection(a_connection("c_1"))
    await ws.add_connection(a_connection("c_2", "sms_b", created=1))
    await ws.set_default_connection("ws_1", "c_2")
    defaults = {c.id: c.is_default for c in await ws.list_connections("ws_1")}
    assert defaults == {"c_1": False, "c_2": True}


async def test_set_default_of_another_workspace_is_not_found(ws: Store) -> None:
    await ws.create_workspace(a_workspace("ws_2"))
    await ws.add_connection(a_connection("c_other", workspace_id="ws_2"))
    with pytest.raises(ResourceNotFound):
        await ws.set_default_connection("ws_1", "c_other")
    with pytest.raises(ResourceNotFound):
        await ws.set_default_connection("ws_1", "c_missing")


async def test_removing_the_default_promotes_the_oldest_remaining(ws: Store) -> None:
    await ws.add_connection(a_connection("c_3", "sms_c", created=3))
    await ws.add_connection(a_connection("c_2", "sms_b", created=2))
    await ws.add_connection(a_connection("c_1", "sms_a", created=1))
    assert await ws.remove_connection("c_3")
    defaults = {c.id: c.is_default for c in await ws.list_connections("ws_1")}
    assert defaults == {"c_1": True, "c_2": False}
    assert not await ws.remove_connection("c_3")


# -- templates


async def test_template_put_get_replace_delete(ws: Store) -> None:
    template = Template(
        workspace_id="ws_1",
        key="otp",
        body="Kodunuz: {{ code }}",
        created_at=T0,
        updated_at=T0,
        description="one-time code",
        provider_template="otp_tr",
        provider_language="tr",
    )
    await ws.put_template(template)
    assert await ws.get_template("ws_1", "otp") == template
    changed = replace(template, body="Code: {{code}}", updated_at=at(5), description=None)
    await ws.put_template(changed)
    assert await ws.get_template("ws_1", "otp") == changed
    assert await ws.delete_template("ws_1", "otp")
    assert not await ws.delete_template("ws_1", "otp")
    assert await ws.get_template("ws_1", "otp") is None


async def test_templates_list_by_key_within_the_workspace(ws: Store) -> None:
    await ws.create_workspace(a_workspace("ws_2"))
    for key in ("z_last", "a_b", "ab", "a1", "_x"):
        await ws.put_template(Template("ws_1", key, "body", T0, T0))
    await ws.put_template(Template("ws_2", "other", "body", T0, T0))
    keys = [t.key for t in await ws.list_templates("ws_1")]
    assert keys == sorted(["z_last", "a_b", "ab", "a1", "_x"])


async def test_template_needs_its_workspace(store: Store) -> None:
    with pytest.raises(ResourceNotFound):
        await store.put_template(Template("ws_missing", "otp", "body", T0, T0))


# -- messages


async def test_message_round_trips_every_field(ws: Store) -> None:
    message = a_message(
        status="delivered",
        sender="ACME",
        template_key="otp",
        sent_at=at(1),
        final_at=at(9),
        error=ErrorInfo("PROVIDER_REJECTED", "rejected by sms_a"),
        attempts=(
            Attempt("sms_a", "rejected", at(1), None, ErrorInfo("PROVIDER_REJECTED", "no")),
            Attempt("sms_b", "delivered", at(2), "prov-123"),
        ),
        dlr=DeliveryReport("delivered", at(9), "DELIVRD", None),
        segments=2,
        encoding="gsm7_turkish",
        fallback_left=("sms_c", "sms_d"),
        fallback_requested=True,
        template_params=("1234", UNICODE),
    )
    await ws.insert_messages([message])
    assert await ws.get_message("ws_1", True, "job_1") == message


async def test_message_is_invisible_to_other_workspaces_and_modes(ws: Store) -> None:
    await ws.create_workspace(a_workspace("ws_2"))
    await ws.insert_messages([a_message("job_live"), a_message("job_test", livemode=False)])
    assert await ws.get_message("ws_1", True, "job_live") is not None
    assert await ws.get_message("ws_1", False, "job_live") is None
    assert await ws.get_message("ws_2", True, "job_live") is None
    assert await ws.get_message("ws_1", False, "job_test") is not None
    assert await ws.get_message("ws_1", True, "job_test") is None
    assert await ws.get_message("ws_1", True, "job_missing") is None


async def test_inserting_a_taken_job_id_inserts_nothing(ws: Store) -> None:
    await ws.insert_messages([a_message("job_1")])
    with pytest.raises(AlreadyExists):
        await ws.insert_messages([a_message("job_2"), a_message("job_1")])
    assert await ws.get_message("ws_1", True, "job_2") is None


async def test_message_needs_its_workspace(store: Store) -> None:
    with pytest.raises(ResourceNotFound):
        await store.insert_messages([a_message(workspace_id="ws_missing")])


async def test_update_messages_replaces_them(ws: Store) -> None:
    await ws.insert_messages([a_message("job_1"), a_message("job_2")])
    sent = a_message("job_1", status="sent", sent_at=at(1), updated_at=at(1))
    failed = a_message("job_2", status="failed", error=ErrorInfo("X", "y"), updated_at=at(2))
    await ws.update_messages([sent, failed])
    assert await ws.get_message("ws_1", True, "job_1") == sent
    assert await ws.get_message("ws_1", True, "job_2") == failed


async def test_replace_message_compares_versions(ws: Store) -> None:
    await ws.insert_messages([a_message("job_1")])
    first = a_message("job_1", status="sent", updated_at=at(1), version=1)
    rival = a_message("job_1", status="failed", updated_at=at(1), version=1)
    assert await ws.replace_message(first)
    assert not await ws.replace_message(rival)  # version 0 is gone: the rival re-reads
    assert not await ws.replace_message(a_message("job_1", version=3))
    assert not await ws.replace_message(a_message("job_missing", version=1))
    assert await ws.get_message("ws_1", True, "job_1") == first
    delivered = a_message("job_1", status="delivered", updated_at=at(2), version=2)
    assert await ws.replace_message(delivered)
    assert await ws.get_message("ws_1", True, "job_1") == delivered


async def test_concurrent_replacements_of_one_version_let_exactly_one_win(ws: Store) -> None:
    await ws.insert_messages([a_message("job_1")])
    rivals = [a_message("job_1", sender=f"S{n}", version=1) for n in range(8)]
    wins = await asyncio.gather(*(ws.replace_message(r) for r in rivals))
    assert sum(wins) == 1
    stored = await ws.get_message("ws_1", True, "job_1")
    assert stored == rivals[wins.index(True)]


async def test_provider_refs_find_their_job_and_keep_the_first(ws: Store) -> None:
    first = ProviderRef("conn_1", "17000001", "job_1", "ws_1", True)
    await ws.add_provider_refs([first, ProviderRef("conn_1", UNICODE, "job_2", "ws_1", False)])
    await ws.add_provider_refs([ProviderRef("conn_1", "17000001", "job_9", "ws_1", True)])
    await ws.add_provider_refs([])
    assert await ws.find_provider_ref("conn_1", "17000001") == first
    assert await ws.find_provider_ref("conn_1", UNICODE) == ProviderRef(
        "conn_1", UNICODE, "job_2", "ws_1", False
    )
    assert await ws.find_provider_ref("conn_2", "17000001") is None
    assert await ws.find_provider_ref("conn_1", "'; DROP TABLE um_messages; --") is None


async def test_refs_to_poll_are_live_open_and_due_the_longest_due_first(ws: Store) -> None:
    minute = timedelta(minutes=1)
    refs = [ProviderRef("conn_1", f"p{n}", f"job_{n}", "ws_1", True) for n in range(5)]
    later = ProviderRef("conn_1", "p5", "job_5", "ws_1", True, poll_after=T0 + minute)
    test_mode = [ProviderRef("conn_1", f"t{n}", f"job_0{n}", "ws_1", False) for n in range(3)]
    other = ProviderRef("conn_2", "p0", "job_9", "ws_1", True)
    await ws.add_provider_refs([*refs, later, *test_mode, other])

    assert await ws.refs_to_poll("conn_1", T0, 3) == refs[:3]  # never asked: by job id
    await ws.close_provider_refs("conn_1", ["p0", "p2", "unknown"])
    await ws.close_provider_refs("conn_1", [])
    assert await ws.refs_to_poll("conn_1", T0, 10) == [refs[1], refs[3], refs[4]]
    assert [r.job_id for r in await ws.refs_to_poll("conn_2", T0, 10)] == ["job_9"]
    assert await ws.refs_to_poll("conn_1", T0 + minute, 10) == [refs[1], refs[3], refs[4], later]

    # Asked: due again later, behind what was not asked; the longest due comes first.
    await ws.postpone_refs("conn_1", ["p1", "p3", "unknown"], T0 + 2 * minute)
    await ws.postpone_refs("conn_1", [], T0)
    assert await ws.refs_to_poll("conn_1", T0 + minute, 10) == [refs[4], later]
    due = await ws.refs_to_poll("conn_1", T0 + 2 * minute, 10)
    assert [r.provider_message_id for r in due] == ["p4", "p5", "p1", "p3"]
    assert due[2] == replace(refs[1], poll_after=T0 + 2 * minute)

    closed = await ws.find_provider_ref("conn_1", "p0")
    assert closed == ProviderRef("conn_1", "p0", "job_0", "ws_1", True, open=False)


async def test_test_mode_refs_never_fill_a_poll_page(ws: Store) -> None:
    # 500 open test-mode refs sorted before a live one used to fill the page.
    await ws.add_provider_refs(
        [ProviderRef("conn_1", f"t{n:03d}", f"job_0{n:03d}", "ws_1", False) for n in range(600)]
    )
    live = ProviderRef("conn_1", "p1", "job_9", "ws_1", True)
    await ws.add_provider_refs([live])

    assert await ws.refs_to_poll("conn_1", T0, 500) == [live]


async def test_updating_an_unknown_message_changes_nothing(ws: Store) -> None:
    await ws.insert_messages([a_message("job_1")])
    with pytest.raises(ResourceNotFound):
        await ws.update_messages([a_message("job_1", status="sent"), a_message("job_missing")])
    stored = await ws.get_message("ws_1", True, "job_1")
    assert stored is not None
    assert stored.status == "queued"


async def test_datetimes_come_back_aware_and_equal(ws: Store) -> None:
    istanbul = timezone(timedelta(hours=3))
    moment = datetime(2026, 3, 29, 2, 30, 15, 123456, tzinfo=istanbul)
    await ws.insert_messages([a_message(created_at=moment, sent_at=T0)])
    stored = await ws.get_message("ws_1", True, "job_1")
    assert stored is not None
    assert stored.created_at == moment
    assert stored.created_at.utcoffset() is not None
    assert stored.sent_at == T0
    assert stored.sent_at is not None
    assert stored.sent_at.utcoffset() == timedelta(0)


async def test_unicode_and_injection_strings_are_stored_verbatim(store: Store) -> None:
    await store.create_workspace(a_workspace(INJECTION, name=UNICODE))
    message = a_message(workspace_id=INJECTION, to=INJECTION, text=UNICODE + INJECTION)
    await store.insert_messages([message])
    await store.put_template(Template(INJECTION, "t", INJECTION + UNICODE, T0, T0))
    assert await store.get_message(INJECTION, True, "job_1") == message
    workspace = await store.get_workspace(INJECTION)
    assert workspace is not None
    assert workspace.name == UNICODE
    template = await store.get_template(INJECTION, "t")
    assert template is not None
    assert template.body == INJECTION + UNICODE


# -- quota


async def test_quota_counts_up_to_the_limit(store: Store) -> None:
    assert await store.consume_quota("ws_1", PERIOD, 3, 5)
    assert not await store.consume_quota("ws_1", PERIOD, 3, 5)
    assert await store.consume_quota("ws_1", PERIOD, 2, 5)
    assert await store.quota_used("ws_1", PERIOD) == 5


async def test_quota_without_limit_always_counts(store: Store) -> None:
    assert await store.consume_quota("ws_1", PERIOD, 7, None)
    assert await store.consume_quota("ws_1", PERIOD, 7, None)
    assert await store.quota_used("ws_1", PERIOD) == 14


async def test_quota_refuses_more_units_than_the_limit(store: Store) -> None:
    assert not await store.consume_quota("ws_1", PERIOD, 6, 5)
    assert await store.quota_used("ws_1", PERIOD) == 0


async def test_quota_is_per_workspace_and_period(store: Store) -> None:
    await store.consume_quota("ws_1", PERIOD, 4, 4)
    assert await store.consume_quota("ws_1", "2026-02", 4, 4)
    assert await store.consume_quota("ws_2", PERIOD, 4, 4)
    assert await store.quota_used("ws_1", PERIOD) == 4


async def test_released_quota_never_goes_below_zero(store: Store) -> None:
    await store.consume_quota("ws_1", PERIOD, 3, None)
    await store.release_quota("ws_1", PERIOD, 2)
    assert await store.quota_used("ws_1", PERIOD) == 1
    await store.release_quota("ws_1", PERIOD, 5)
    await store.release_quota("ws_9", PERIOD, 5)
    assert await store.quota_used("ws_1", PERIOD) == 0
    assert await store.quota_used("ws_9", PERIOD) == 0


async def test_concurrent_quota_consumers_get_exactly_the_limit(store: Store) -> None:
    results = await asyncio.gather(*(store.consume_quota("ws_1", PERIOD, 1, 20) for _ in range(50)))
    assert results.count(True) == 20
    assert await store.quota_used("ws_1", PERIOD) == 20


# -- due work


async def test_enqueue_work_many_keeps_items_already_there(store: Store) -> None:
    first = replace(an_item("w1", due=5), payload={"n": 1})
    await store.enqueue_work(first)
    await store.enqueue_work_many([replace(an_item("w1"), payload={"n": 2}), an_item("w2", due=1)])
    await store.enqueue_work_many([])
    claimed = await store.claim_due_work(
        now=at(10), worker_id="w", lease=timedelta(seconds=30), limit=10
    )
    assert [(i.id, dict(i.payload)) for i in claimed] == [("w2", {}), ("w1", {"n": 1})]


async def test_claim_takes_due_items_earliest_first_up_to_the_limit(store: Store) -> None:
    for item_id, due in (("w_3", 3), ("w_1", 1), ("w_2", 2), ("w_later", 60)):
        await store.enqueue_work(an_item(item_id, due=due))
    claimed = await store.claim_due_work(now=at(10), worker_id="A", lease=LEASE, limit=2)
    assert [w.id for w in claimed] == ["w_1", "w_2"]
    assert all(w.claimed_by == "A" and w.lease_until == at(40) for w in claimed)
    assert [w.attempts for w in claimed] == [1, 1]
    rest = await store.claim_due_work(now=at(10), worker_id="B", lease=LEASE, limit=10)
    assert [w.id for w in rest] == ["w_3"]


async def test_work_item_round_trips_its_payload(store: Store) -> None:
    payload: dict[str, JsonValue] = {
        "job_id": "job_1",
        "n": 3,
        "ok": True,
        "list": [1, "two", None],
        "t": UNICODE,
    }
    item = replace(an_item("w_1"), payload=payload)
    await store.enqueue_work(item)
    [claimed] = await store.claim_due_work(now=T0, worker_id="A", lease=LEASE, limit=1)
    assert (claimed.kind, claimed.ref, claimed.payload, claimed.created_at) == (
        "dlr_timeout",
        "job_w_1",
        payload,
        T0,
    )


async def test_enqueueing_a_taken_work_id_is_already_exists(store: Store) -> None:
    await store.enqueue_work(an_item("w_1"))
    with pytest.raises(AlreadyExists):
        await store.enqueue_work(an_item("w_1"))


async def test_concurrent_claimers_never_share_an_item(store: Store) -> None:
    ids = {f"w_{n:02d}" for n in range(30)}
    for item_id in ids:
        await store.enqueue_work(an_item(item_id))

    async def drain(worker: str) -> list[str]:
        got: list[str] = []
        while batch := await store.claim_due_work(now=T0, worker_id=worker, lease=LEASE, limit=3):
            got.extend(w.id for w in batch)
        return got

    claims = await asyncio.gather(*(drain(f"worker-{n}") for n in range(4)))
    every = [item_id for claim in claims for item_id in claim]
    assert sorted(every) == sorted(ids)


async def test_an_expired_lease_is_claimable_again(store: Store) -> None:
    await store.enqueue_work(an_item("w_1"))
    await store.claim_due_work(now=T0, worker_id="dead", lease=LEASE, limit=1)
    assert await store.claim_due_work(now=at(29), worker_id="B", lease=LEASE, limit=1) == []
    [again] = await store.claim_due_work(now=at(30), worker_id="B", lease=LEASE, limit=1)
    assert (again.claimed_by, again.attempts) == ("B", 2)
    assert not await store.complete_work("w_1", "dead")
    assert await store.complete_work("w_1", "B")
    assert await store.claim_due_work(now=at(999), worker_id="C", lease=LEASE, limit=1) == []


async def test_reschedule_releases_the_lease_until_the_new_time(store: Store) -> None:
    await store.enqueue_work(an_item("w_1"))
    await store.claim_due_work(now=T0, worker_id="A", lease=LEASE, limit=1)
    assert not await store.reschedule_work("w_1", "B", at(60))
    assert await store.reschedule_work("w_1", "A", at(5))
    assert await store.claim_due_work(now=at(4), worker_id="B", lease=LEASE, limit=1) == []
    [again] = await store.claim_due_work(now=at(5), worker_id="B", lease=LEASE, limit=1)
    assert (again.due_at, again.claimed_by) == (at(5), "B")


async def test_completing_unknown_or_unclaimed_work_is_false(store: Store) -> None:
    await store.enqueue_work(an_item("w_1"))
    assert not await store.complete_work("w_1", "A")
    assert not await store.complete_work("w_missing", "A")
    assert not await store.reschedule_work("w_missing", "A", T0)


# -- IP allowlist


async def test_allowlist_add_list_remove(ws: Store) -> None:
    await ws.create_workspace(a_workspace("ws_2"))
    for entry in ("203.0.113.0/24", "2001:db8::/32", "198.51.100.7", "203.0.113.0/24"):
        await ws.add_allowlist_entry("ws_1", entry)
    await ws.add_allowlist_entry("ws_2", "10.0.0.0/8")
    assert await ws.list_allowlist("ws_1") == sorted(
        ["203.0.113.0/24", "2001:db8::/32", "198.51.100.7"]
    )
    assert await ws.remove_allowlist_entry("ws_1", "2001:db8::/32")
    assert not await ws.remove_allowlist_entry("ws_1", "2001:db8::/32")
    assert not await ws.remove_allowlist_entry("ws_1", "10.0.0.0/8")
    assert await ws.list_allowlist("ws_1") == ["198.51.100.7", "203.0.113.0/24"]
    assert await ws.list_allowlist("ws_missing") == []


async def test_allowlist_needs_its_workspace(store: Store) -> None:
    with pytest.raises(ResourceNotFound):
        await store.add_allowlist_entry("ws_missing", "10.0.0.0/8")


# -- idempotency


async def test_the_first_begin_owns_the_key_and_later_ones_see_it(store: Store) -> None:
    assert await store.begin_idempotent(a_record()) is None
    seen = await store.begin_idempotent(a_record(request_hash="sha256:other", created_at=at(1)))
    assert seen == a_record()
    assert seen is not None
    assert seen.status_code is None


async def test_a_finished_key_replays_its_response(store: Store) -> None:
    await store.begin_idempotent(a_record())
    body = b'{"job_id": "job_1"}\x00\xff'
    await store.finish_idempotent("ws_1", "key_1", "idem-1", 201, body)
    seen = await store.begin_idempotent(a_record())
    assert seen is not None
    assert (seen.status_code, seen.response_body) == (201, body)


async def test_a_dropped_key_can_be_owned_again(store: Store) -> None:
    await store.begin_idempotent(a_record())
    assert await store.drop_idempotent("ws_1", "key_1", "idem-1")
    assert not await store.drop_idempotent("ws_1", "key_1", "idem-1")
    assert await store.begin_idempotent(a_record()) is None


async def test_finishing_an_unknown_key_is_not_found(store: Store) -> None:
    with pytest.raises(ResourceNotFound):
        await store.finish_idempotent("ws_1", "key_1", "idem-missing", 200, b"")


async def test_idempotency_keys_are_scoped_per_workspace_and_api_key(store: Store) -> None:
    assert await store.begin_idempotent(a_record()) is None
    assert await store.begin_idempotent(a_record(key_id="key_2")) is None
    assert await store.begin_idempotent(a_record(workspace_id="ws_2")) is None


async def test_purge_removes_records_older_than_the_cutoff(store: Store) -> None:
    await store.begin_idempotent(a_record("old", created_at=T0))
    await store.begin_idempotent(a_record("new", created_at=at(86_400)))
    assert await store.purge_idempotent(at(3600)) == 1
    assert await store.begin_idempotent(a_record("old")) is None
    assert await store.begin_idempotent(a_record("new")) is not None


async def test_of_concurrent_begins_exactly_one_owns(store: Store) -> None:
    results = await asyncio.gather(
        *(store.begin_idempotent(a_record(request_hash=f"h{n}")) for n in range(10))
    )
    owners = [r for r in results if r is None]
    assert len(owners) == 1
    hashes = {r.request_hash for r in results if r is not None}
    assert len(hashes) == 1


# -- webhooks


async def test_webhook_endpoint_crud(ws: Store) -> None:
    endpoint = an_endpoint()
    await ws.add_webhook_endpoint(endpoint)
    await ws.add_webhook_endpoint(an_endpoint("we_0", created=-1))
    assert await ws.get_webhook_endpoint("we_1") == endpoint
    assert [e.id for e in await ws.list_webhook_endpoints("ws_1")] == ["we_0", "we_1"]
    disabled = replace(endpoint, enabled=False, disabled_at=at(5), failing_since=at(1))
    await ws.update_webhook_endpoint(disabled)
    assert await ws.get_webhook_endpoint("we_1") == disabled
    rotated = replace(
        disabled,
        secret_ciphertext="v1.k1.nonce.new",
        previous_secret_ciphertext="v1.k1.nonce.secret",
        previous_secret_expires_at=at(7),
    )
    # A whole-row update leaves the sealed secrets as stored: they move by the swap alone
    # (a rotation between a setter's read and its write is never undone).
    await ws.update_webhook_endpoint(rotated)
    assert await ws.get_webhook_endpoint("we_1") == disabled
    swapped = await ws.swap_webhook_secrets(
        "we_1", expected=disabled.sealed_secrets, secret="v1.k1.nonce.new",
        previous="v1.k1.nonce.secret", previous_expires_at=at(7),
    )  # fmt: skip
    assert swapped
    assert await ws.get_webhook_endpoint("we_1") == rotated
    assert await ws.remove_webhook_endpoint("we_1")
    assert not await ws.remove_webhook_endpoint("we_1")
    assert await ws.get_webhook_endpoint("we_1") is None


async def test_endpoint_health_changes_leave_the_secret_alone(ws: Store) -> None:
    await ws.add_webhook_endpoint(an_endpoint())
    rotated = replace(an_endpoint(), secret_ciphertext="v1.k1.nonce.rotated")
    assert await ws.swap_webhook_secrets(  # a rotation lands while a delivery runs …
        "we_1", expected=an_endpoint().sealed_secrets, secret="v1.k1.nonce.rotated",
        previous=None, previous_expires_at=None,
    )  # fmt: skip

    await ws.set_webhook_endpoint_health(  # … and the delivery's outcome, read before it
        "we_1", enabled=False, disabled_at=at(5), failing_since=at(1)
    )
    await ws.set_webhook_endpoint_health(
        "we_gone", enabled=False, disabled_at=at(5), failing_since=None
    )

    stored = await ws.get_webhook_endpoint("we_1")
    assert stored == replace(rotated, enabled=False, disabled_at=at(5), failing_since=at(1))
    assert await ws.get_webhook_endpoint("we_gone") is None


async def test_webhook_endpoint_errors(ws: Store) -> None:
    await ws.add_webhook_endpoint(an_endpoint())
    with pytest.raises(AlreadyExists):
        await ws.add_webhook_endpoint(an_endpoint())
    with pytest.raises(ResourceNotFound):
        await ws.add_webhook_endpoint(replace(an_endpoint("we_2"), workspace_id="ws_missing"))
    with pytest.raises(ResourceNotFound):
        await ws.update_webhook_endpoint(an_endpoint("we_missing"))


async def test_a_delivery_and_its_work_item_are_stored_together(ws: Store) -> None:
    await ws.add_webhook_endpoint(an_endpoint())
    await ws.enqueue_work(an_item("taken"))
    with pytest.raises(AlreadyExists):
        await ws.add_webhook_delivery(a_delivery("wd_1"), an_item("taken"))
    assert await ws.get_webhook_delivery("wd_1") is None  # all or nothing
    await ws.add_webhook_delivery(a_delivery("wd_1"), an_item("fresh", kind="webhook"))
    claimed = await ws.claim_due_work(now=at(10), worker_id="w", lease=timedelta(1), limit=10)
    assert {i.id for i in claimed} == {"taken", "fresh"}
    assert await ws.get_webhook_delivery("wd_1") is not None


async def test_webhook_delivery_crud(ws: Store) -> None:
    await ws.add_webhook_endpoint(an_endpoint())
    delivery = a_delivery(payload=b"\x00raw \xff bytes")
    await ws.add_webhook_delivery(delivery)
    await ws.add_webhook_delivery(a_delivery("wd_0", created_at=at(-1)))
    assert await ws.get_webhook_delivery("wd_1") == delivery
    retried = replace(
        delivery,
        status="failed",
        attempts=3,
        next_attempt_at=at(300),
        last_status_code=503,
        last_error=INJECTION,
        last_answer="Çok yoğunuz 🙃 " + INJECTION,
        updated_at=at(5),
    )
    await ws.update_webhook_delivery(retried)
    assert await ws.get_webhook_delivery("wd_1") == retried
    assert [d.id for d in await ws.list_webhook_deliveries("we_1")] == ["wd_0", "wd_1"]
    with pytest.raises(ResourceNotFound):
        await ws.update_webhook_delivery(a_delivery("wd_missing"))


async def test_one_delivery_per_event_and_endpoint(ws: Store) -> None:
    await ws.add_webhook_endpoint(an_endpoint())
    await ws.add_webhook_delivery(a_delivery("wd_1", event_id="evt_1"))
    with pytest.raises(AlreadyExists):
        await ws.add_webhook_delivery(a_delivery("wd_2", event_id="evt_1"))
    with pytest.raises(ResourceNotFound):
        await ws.add_webhook_delivery(a_delivery("wd_3", endpoint_id="we_missing"))


async def test_removing_an_endpoint_removes_its_deliveries(ws: Store) -> None:
    await ws.add_webhook_endpoint(an_endpoint())
    await ws.add_webhook_delivery(a_delivery())
    await ws.remove_webhook_endpoint("we_1")
    assert await ws.get_webhook_delivery("wd_1") is None
    assert await ws.list_webhook_deliveries("we_1") == []
