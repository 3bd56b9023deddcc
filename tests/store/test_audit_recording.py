"""Every admin change records one audit row (D32), on memory, SQLite and PostgreSQL.

Through the façade's own methods, as the CLI and the dashboard call them: which action and
target each change records, who the actor is, that a refused change records nothing, that a
change and its row commit together, that two changes at once are both recorded, and that no
secret the changes produced is in any row.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from datetime import datetime, timedelta

import pytest

from unified_messaging import (
    Actor,
    ManualClock,
    MessagingError,
    Messenger,
    RequestInvalid,
    ResourceNotFound,
    TargetPolicy,
    Vault,
    acting_as,
    generate_key_spec,
    parse_quiet_hours,
)
from unified_messaging._admin import AdminMixin
from unified_messaging._audit import AuditQuery
from unified_messaging._audit_actions import AUDIT_ACTIONS, audited_action
from unified_messaging._connection_ops import ConnectionOpsMixin
from unified_messaging._suppression_ops import SuppressionMixin
from unified_messaging._users import UserAdminMixin
from unified_messaging.consents import Consents
from unified_messaging.store.base import Store
from unified_messaging.verifications import Verifications
from unified_messaging.webhooks._admin import WebhookAdminMixin
from unified_messaging.webhooks._operations import WebhookOpsMixin

#: Public admin methods that change nothing: reads.
READS = {
    "quota_usage", "find_user", "check_user_password", "connection_of", "webhook_endpoint_of",
    "webhook_delivery_of", "webhook_deliveries_about", "settings", "get", "list",
}  # fmt: skip
#: Public admin methods that change no setting: they send an event again, or a test event, to
#: an endpoint as it is (the delivery log records them), or take a simulated reply as a
#: provider's push is taken (an opt-out that arrives by itself is not an admin change).
SENDS = {"redeliver_webhook", "send_test_webhook", "simulate_inbound"}
#: Public methods of the namespaces that are operations of their resource, not settings
#: (one-time codes, D34: each sends or checks a code, as a send is no admin change).
OPERATIONS = {"start", "check", "cancel", "handle_expiry"}
#: Public admin methods that change state through another audited method, and which.
DELEGATES = {"rotate_credentials": "rotate_vault", "update_settings": "set_settings"}


@pytest.fixture
async def messenger(store: Store) -> Messenger:
    # The store fixture opens and closes the store; the messenger only uses it.
    return Messenger(
        store,
        clock=ManualClock(),
        vault=Vault.from_spec(generate_key_spec("k1")),
        webhook_policy=TargetPolicy(allow_private=True),
    )


async def every_event(messenger: Messenger) -> list[tuple[str, str | None, str]]:
    page = await messenger.list_audit_events(limit=100)
    assert not page.has_more
    return [(e.action, e.workspace_id, e.target) for e in reversed(page.data)]


async def all_rows(store: Store) -> list[str]:
    """Every stored row, as JSON text, as the store gives it back."""
    events = await store.list_audit_events(AuditQuery(limit=10_000))
    return [event.model_dump_json() for event in events]


def admin_methods() -> dict[str, object]:
    found: dict[str, object] = {}
    for mixin in (AdminMixin, WebhookAdminMixin, WebhookOpsMixin, UserAdminMixin,
                  ConnectionOpsMixin, SuppressionMixin, Consents, Verifications):  # fmt: skip
        for name, member in inspect.getmembers(mixin, inspect.iscoroutinefunction):
            if not name.startswith("_"):
                found[name] = member
    return found


def changing_methods() -> list[str]:
    methods = admin_methods()
    return sorted(
        name
        for name in methods
        if not name.startswith(("get_", "list_"))
        and name not in READS
        and name not in DELEGATES
        and name not in SENDS
        and name not in OPERATIONS
    )


def test_every_admin_method_that_changes_state_records_its_own_action() -> None:
    methods = admin_methods()
    actions = {name: audited_action(methods[name]) for name in changing_methods()}

    assert [name for name, action in actions.items() if action is None] == []
    # One method per action and every action named: the closed list is exactly what is used.
    assert sorted(actions.values()) == sorted(AUDIT_ACTIONS)  # type: ignore[type-var]
    # Reads record nothing; a delegate records through the method it calls.
    reads = [name for name in methods if name.startswith(("get_", "list_")) or name in READS]
    assert [name for name in reads if audited_action(methods[name]) is not None] == []
    assert all(audited_action(methods[target]) for target in DELEGATES.values())


async def test_each_change_records_one_row_with_its_action_target_and_no_secret(
    messenger: Messenger, store: Store
) -> None:
    m = messenger
    ws = await m.create_workspace("Acme")
    await m.set_monthly_quota(ws.id, 100)
    await m.set_retry_unavailable(ws.id, True)
    await m.set_queue_ttl(ws.id, timedelta(minutes=5))
    await m.set_recipient_limit(ws.id, "5/1h")
    await m.set_quiet_hours(ws.id, parse_quiet_hours("21:00-09:00"))
    await m.consents.set_policy(ws.id, "local")
    await m.set_text_masking(ws.id, True)
    await m.verifications.update_settings(ws.id, max_checks=3)
    key = await m.create_api_key(ws.id, livemode=True)
    await m.revoke_api_key(key.record.id)
    netgsm = await m.add_connection(
        ws.id, "sms_a", credentials={"usercode": "user-7f3a", "password": "pw-9c1e77"}
    )
    verimor = await m.add_connection(
        ws.id, "sms_c", credentials={"username": "900000000001", "password": "pw-2b8d41"}
    )
    await m.set_default_connection(verimor.id)
    await m.set_breaker_policy(netgsm.id, window=30)
    await m.set_send_rate(netgsm.id, max_rate=5)
    await m.set_senders(netgsm.id, default_sender="ACME", approved_senders=["ACME", "ACME2"])
    await m.set_template(ws.id, "welcome", "Merhaba {{ name }}, kodunuz 481516")
    await m.delete_template(ws.id, "welcome")
    entry = await m.add_allowlist_entry(ws.id, "10.1.2.0/24")
    await m.remove_allowlist_entry(ws.id, entry)
    live = await m.principal(ws.id, livemode=True)
    opted = await m.add_suppression(live, {"channel": "sms", "recipient": "0555 000 00 20"})
    await m.remove_suppression(live, {"channel": "sms", "recipient": "+905550000020"})
    await m.import_suppressions(live, [{"channel": "sms", "recipient": "05550000021"}])
    consent = await m.consents.create(
        live, {"recipient": "05550000022", "status": "ONAY", "source": "HS_WEB"}
    )
    endpoint = await m.create_webhook_endpoint(ws.id, "https://hooks.example.com/um")
    rotated = await m.rotate_webhook_secret(endpoint.endpoint.id)
    await m.disable_webhook_endpoint(endpoint.endpoint.id)
    await m.enable_webhook_endpoint(endpoint.endpoint.id)
    await m.set_webhook_events(endpoint.endpoint.id, ["message.failed"])
    await m.remove_webhook_endpoint(endpoint.endpoint.id)
    await m.remove_connection(netgsm.id)
    member = await m.create_user("ayse@example.com", "correct horse battery", workspace_id=ws.id)
    await m.disable_user("ayse@example.com")
    await m.rotate_vault()
    await m.rotate_credentials()  # through rotate_vault: one row, not two

    hook = endpoint.endpoint.id
    assert await every_event(m) == [
        ("workspace.create", ws.id, ws.id),
        ("workspace.quota", ws.id, ws.id),
        ("workspace.retry_unavailable", ws.id, ws.id),
        ("workspace.queue_ttl", ws.id, ws.id),
        ("workspace.recipient_limit", ws.id, ws.id),
        ("workspace.quiet_hours", ws.id, ws.id),
        ("workspace.consent_policy", ws.id, ws.id),
        ("workspace.text_masking", ws.id, ws.id),
        ("workspace.verify_limits", ws.id, ws.id),
        ("api_key.create", ws.id, key.record.id),
        ("api_key.revoke", ws.id, key.record.id),
        ("connection.add", ws.id, netgsm.id),
        ("connection.add", ws.id, verimor.id),
        ("connection.default", ws.id, verimor.id),
        ("connection.breaker_policy", ws.id, netgsm.id),
        ("connection.send_rate", ws.id, netgsm.id),
        ("connection.senders", ws.id, netgsm.id),
        ("template.set", ws.id, "welcome"),
        ("template.delete", ws.id, "welcome"),
        ("allowlist.add", ws.id, "10.1.2.0/24"),
        ("allowlist.remove", ws.id, "10.1.2.0/24"),
        ("suppression.add", ws.id, opted.id),
        ("suppression.remove", ws.id, opted.id),
        ("suppression.import", ws.id, "1 added, 0 existing"),
        ("consent.record", ws.id, consent.id),
        ("webhook_endpoint.create", ws.id, hook),
        ("webhook_endpoint.rotate_secret", ws.id, hook),
        ("webhook_endpoint.disable", ws.id, hook),
        ("webhook_endpoint.enable", ws.id, hook),
        ("webhook_endpoint.events", ws.id, hook),
        ("webhook_endpoint.remove", ws.id, hook),
        ("connection.remove", ws.id, netgsm.id),
        ("user.create", ws.id, member.id),
        ("user.disable", ws.id, member.id),
        ("vault.rotate", None, "k1"),
        ("vault.rotate", None, "k1"),
    ]
    assert {action for action, _, _ in await every_event(m)} == set(AUDIT_ACTIONS)

    secrets = [
        "correct horse battery",
        member.password_hash,
        key.secret,
        key.record.key_hash,
        "pw-9c1e77",
        "pw-2b8d41",
        "user-7f3a",
        netgsm.credentials,
        netgsm.dlr_token,
        verimor.dlr_token,
        endpoint.secret,
        rotated.secret,
        endpoint.endpoint.secret_ciphertext,
        "kodunuz 481516",
    ]
    rows = "\n".join(await all_rows(store))
    assert [secret for secret in secrets if secret in rows] == []
    assert [secret for secret in secrets if json.dumps(secret)[1:-1] in rows] == []


async def test_a_refused_change_records_nothing(messenger: Messenger) -> None:
    m = messenger
    ws = await m.create_workspace("Acme")
    await m.add_connection(ws.id, "sms_a")
    before = await every_event(m)

    refusals = [
        m.create_workspace(" "),
        m.set_monthly_quota(ws.id, -1),
        m.set_monthly_quota("ws_missing", 5),
        m.revoke_api_key("key_missing"),
        # Refused by the store, inside the transaction the row would have joined.
        m.add_connection(ws.id, "sms_a"),
        m.remove_connection("conn_missing"),
        m.set_template(ws.id, "Bad Key", "x"),
        m.delete_template(ws.id, "missing"),
        m.add_allowlist_entry(ws.id, "not-an-address"),
        m.remove_allowlist_entry(ws.id, "192.0.2.1"),
        m.rotate_webhook_secret("whe_missing"),
    ]
    for refusal in refusals:
        with pytest.raises(MessagingError):
            await refusal

    assert await every_event(m) == before
    assert len(await m.list_connections(ws.id)) == 1


async def test_the_actor_and_client_address_are_the_ones_an_edge_set(
    messenger: Messenger,
) -> None:
    await messenger.create_workspace("By the library")
    with acting_as(Actor("dashboard:ayşe@example.com", "2001:db8::7")):
        await messenger.create_workspace("By the dashboard")

    page = await messenger.list_audit_events()

    assert [(e.actor, e.client_address) for e in page.data] == [
        ("dashboard:ayşe@example.com", "2001:db8::7"),
        ("library", None),
    ]
    mine = await messenger.list_audit_events(actor="dashboard:ayşe@example.com")
    assert [e.target for e in mine.data] == [page.data[0].target]


async def test_two_changes_at_once_are_both_recorded(messenger: Messenger) -> None:
    async def as_someone(name: str) -> str:
        with acting_as(Actor(name)):
            workspace = await messenger.create_workspace(name)
            await messenger.add_allowlist_entry(workspace.id, "198.51.100.0/24")
            return workspace.id

    first, second = await asyncio.gather(as_someone("dashboard:a@x.io"), as_someone("cli"))

    for workspace_id, actor in ((first, "dashboard:a@x.io"), (second, "cli")):
        page = await messenger.list_audit_events(workspace_id=workspace_id)
        assert [(e.action, e.actor) for e in page.data] == [
            ("allowlist.add", actor),
            ("workspace.create", actor),
        ]
        assert await messenger.list_allowlist(workspace_id) == ["198.51.100.0/24"]


async def test_ugly_text_in_an_actor_is_stored_safely_and_never_blocks_the_change(
    messenger: Messenger,
) -> None:
    ugly = "dashboard:'; DROP TABLE um_audit_log; --\x00\ud800\x1b[2J🙂"
    with acting_as(Actor(ugly, "\x00'--")):
        workspace = await messenger.create_workspace("İstanbul şubesi")

    [event] = (await messenger.list_audit_events()).data
    assert event.target == workspace.id
    assert event.actor.startswith("dashboard:'; DROP TABLE um_audit_log; --")
    assert "\x00" not in event.actor and "\ud800" not in event.actor
    assert event.actor.endswith("\x1b[2J🙂")  # kept: the CLI escapes it when it prints


async def test_pages_follow_the_cursor_and_bad_arguments_are_refused(
    messenger: Messenger,
) -> None:
    made = [(await messenger.create_workspace(f"ws {n}")).id for n in range(5)]

    first = await messenger.list_audit_events(limit=2)
    second = await messenger.list_audit_events(limit=2, starting_after=first.data[-1].id)
    last = await messenger.list_audit_events(limit=2, starting_after=second.data[-1].id)

    assert [e.target for e in first.data + second.data + last.data] == made[::-1]
    assert (first.has_more, second.has_more, last.has_more) == (True, True, False)
    assert (await messenger.list_audit_events(action="workspace.create", limit=5)).has_more is False
    for bad in ({"action": "workspace.drop"}, {"limit": 0}, {"limit": 101}):
        with pytest.raises(RequestInvalid):
            await messenger.list_audit_events(**bad)  # type: ignore[arg-type]
    with pytest.raises(RequestInvalid):
        await messenger.list_audit_events(occurred_after=datetime(2026, 1, 1))
    with pytest.raises(ResourceNotFound):
        await messenger.list_audit_events(starting_after="aud_unknown")
    assert (await messenger.list_audit_events(workspace_id="ws\x00")).data == []


async def test_a_change_whose_row_cannot_be_stored_is_not_stored_either(
    messenger: Messenger, store: Store
) -> None:
    # The row and the change are one transaction: a database that refuses the row (a
    # trigger, here) keeps the change out too. The memory store has no transactions.
    from unified_messaging.store.sql import SqlStore

    if not isinstance(store, SqlStore):
        pytest.skip("the memory store applies each write at once (Store.atomic)")
    ws = await messenger.create_workspace("Acme")
    await _refuse_audit_rows(store)
    try:
        with pytest.raises(MessagingError):
            await messenger.add_allowlist_entry(ws.id, "203.0.113.0/24")
        with pytest.raises(MessagingError):
            await messenger.create_workspace("Never")
        assert await messenger.list_allowlist(ws.id) == []
        assert [w.name for w in await messenger.list_workspaces()] == ["Acme"]
    finally:
        await _allow_audit_rows(store)
    assert [e.action for e in (await messenger.list_audit_events()).data] == ["workspace.create"]


async def _refuse_audit_rows(store: object) -> None:
    await _ddl(
        store,
        sqlite=[
            "CREATE TRIGGER um_test_no_audit BEFORE INSERT ON um_audit_log "
            "BEGIN SELECT RAISE(ABORT, 'refused'); END"
        ],
        postgresql=[
            "CREATE FUNCTION um_test_no_audit() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN RAISE EXCEPTION 'refused'; END $$",
            "CREATE TRIGGER um_test_no_audit BEFORE INSERT ON um_audit_log "
            "FOR EACH ROW EXECUTE FUNCTION um_test_no_audit()",
        ],
    )


async def _allow_audit_rows(store: object) -> None:
    await _ddl(
        store,
        sqlite=["DROP TRIGGER um_test_no_audit"],
        postgresql=[
            "DROP TRIGGER um_test_no_audit ON um_audit_log",
            "DROP FUNCTION um_test_no_audit()",
        ],
    )


async def _ddl(store: object, *, sqlite: list[str], postgresql: list[str]) -> None:
    from unified_messaging.store.sql import SqlStore

    assert isinstance(store, SqlStore)
    statements = sqlite if store.dialect == "sqlite" else postgresql
    async with store._get_engines().write.begin() as connection:
        for statement in statements:
            await connection.exec_driver_sql(statement)
