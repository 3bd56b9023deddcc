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
from unified_messaging.accounts._service import Accounts
from unified_messaging.allowlist._service import Allowlist
from unified_messaging.audit._actions import AUDIT_ACTIONS, audited_action
from unified_messaging.audit._events import AuditQuery
from unified_messaging.audit._service import AuditLog
from unified_messaging.connections._service import Connections
from unified_messaging.consents import Consents
from unified_messaging.content import Content
from unified_messaging.dashboard._compose import Composer
from unified_messaging.iys import Iys
from unified_messaging.iys.pull import Puller
from unified_messaging.iys.wire import IysChange
from unified_messaging.keys._service import ApiKeys
from unified_messaging.store.base import Store
from unified_messaging.suppressions._service import SimulationHelpers, Suppressions
from unified_messaging.templates._service import Templates
from unified_messaging.users._service import Users
from unified_messaging.vault._service import VaultAdmin
from unified_messaging.verifications import VerificationFraudSuspected, Verifications
from unified_messaging.verifications._guard import PumpingGuard
from unified_messaging.verifications._guard_rules import Velocity
from unified_messaging.webhooks._service import Webhooks
from unified_messaging.workspaces._service import Workspaces

#: The namespaces whose methods change what an operator set up (D32), by attribute name.
NAMESPACES = {
    "workspaces": Workspaces, "keys": ApiKeys, "connections": Connections,
    "templates": Templates, "allowlist": Allowlist, "webhooks": Webhooks,
    "suppressions": Suppressions, "users": Users, "audit": AuditLog, "vault": VaultAdmin,
    "consents": Consents, "verifications": Verifications, "test_helpers": SimulationHelpers,
    "content": Content, "iys": Iys, "iys.puller": Puller, "accounts": Accounts,
}  # fmt: skip
#: Public admin methods that change nothing: reads.
READS = {
    "workspaces.quota_usage", "users.find", "users.check_password", "connections.of",
    "connections.available", "connections.test", "connections.stats", "connections.health",
    "webhooks.of", "webhooks.delivery_of", "webhooks.deliveries_about",
    "verifications.settings", "content.rules", "content.lint", "verifications.stats",
    "verifications.recent", "verifications.guard.settings", "accounts.senders_of", "iys.state",
}  # fmt: skip
#: Public admin methods that change no setting: they send an event again, or a test event, to
#: an endpoint as it is (the delivery log records them), or take a simulated reply as a
#: provider's push is taken (an opt-out that arrives by itself is not an admin change).
SENDS = {"webhooks.redeliver", "webhooks.send_test", "test_helpers.inbound"}
#: Public methods of the namespaces that are operations of their resource, not settings
#: (one-time codes, D34: each sends or checks a code, as a send is no admin change).
OPERATIONS = {
    "verifications.start", "verifications.check", "verifications.cancel",
    "verifications.handle_expiry",
    # İYS work (D33): a pull applies İYS changes through ``take_in``, which records;
    # ``sync`` runs the work; ``aclose`` closes the client.
    "iys.sync", "iys.handle", "iys.pull", "iys.apply", "iys.aclose",
    "iys.puller.pull", "iys.puller.apply", "iys.puller.sync", "iys.puller.handle",
    # Provider accounts: a reading stores what the provider said (no setting changes).
    "accounts.refresh", "accounts.schedule", "accounts.schedule_all", "accounts.handle",
}  # fmt: skip
#: Public admin methods that change state through another audited method, and which.
DELEGATES = {
    "verifications.update_settings": "verifications.set_settings",
    "content.update_rules": "content.set_rules",
    "verifications.guard.update_settings": "verifications.guard.set_settings",
}  # fmt: skip
#: Actions recorded for an event, not by an admin method: the SMS-pumping guard refusal
#: of a verification start (D34), and a message sent from the dashboard's compose form (its
#: ``Composer``, not a namespace: a send through the façade is not an admin change).
EVENTS = {"verification.fraud_refused", "message.send"}


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
    page = await messenger.audit.list(limit=100)
    assert not page.has_more
    return [(e.action, e.workspace_id, e.target) for e in reversed(page.data)]


async def all_rows(store: Store) -> list[str]:
    """Every stored row, as JSON text, as the store gives it back."""
    events = await store.list_audit_events(AuditQuery(limit=10_000))
    return [event.model_dump_json() for event in events]


def admin_methods() -> dict[str, object]:
    found: dict[str, object] = {}
    for namespace, cls in NAMESPACES.items():
        for name, member in inspect.getmembers(cls, inspect.iscoroutinefunction):
            if not name.startswith("_"):
                found[f"{namespace}.{name}"] = member
    for name, member in inspect.getmembers(PumpingGuard, inspect.iscoroutinefunction):
        if not name.startswith("_") and name != "admit":  # admit: a start own check
            found[f"verifications.guard.{name}"] = member
    return found


def _is_read(name: str) -> bool:
    verb = name.rpartition(".")[2]
    return verb in ("get", "list") or verb.startswith(("get_", "list_"))


def changing_methods() -> list[str]:
    methods = admin_methods()
    return sorted(
        name
        for name in methods
        if not _is_read(name)
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
    assert sorted(actions.values()) == sorted(set(AUDIT_ACTIONS) - EVENTS)  # type: ignore[type-var]
    # Reads record nothing; a delegate records through the method it calls.
    reads = [name for name in methods if _is_read(name) or name in READS]
    assert [name for name in reads if audited_action(methods[name]) is not None] == []
    assert all(audited_action(methods[target]) for target in DELEGATES.values())


async def test_each_change_records_one_row_with_its_action_target_and_no_secret(
    messenger: Messenger, store: Store
) -> None:
    m = messenger
    ws = await m.workspaces.create("Acme")
    await m.workspaces.set_monthly_quota(ws.id, 100)
    await m.workspaces.set_retry_unavailable(ws.id, True)
    await m.workspaces.set_queue_ttl(ws.id, timedelta(minutes=5))
    await m.workspaces.set_recipient_limit(ws.id, "5/1h")
    await m.workspaces.set_quiet_hours(ws.id, parse_quiet_hours("21:00-09:00"))
    await m.consents.set_policy(ws.id, "local")
    await m.workspaces.set_text_masking(ws.id, True)
    await m.verifications.update_settings(ws.id, max_checks=3)
    await m.content.update_rules(ws.id, trade_name="Acme Gıda A.Ş.", refuse=True)
    await m.verifications.guard.update_settings(ws.id, prefix_limit=Velocity(1, timedelta(hours=1)))
    key = await m.keys.create(ws.id, livemode=True)
    await m.keys.revoke(key.record.id)
    netgsm = await m.connections.add(
        ws.id, "sms_a", credentials={"usercode": "user-7f3a", "password": "pw-9c1e77"}
    )
    verimor = await m.connections.add(
        ws.id, "sms_c", credentials={"username": "900000000001", "password": "pw-2b8d41"}
    )
    await m.connections.set_default(verimor.id)
    await m.connections.set_breaker_policy(netgsm.id, window=30)
    await m.connections.set_send_rate(netgsm.id, max_rate=5)
    await m.connections.set_senders(
        netgsm.id, default_sender="ACME", approved_senders=["ACME", "ACME2"]
    )
    await m.accounts.set_threshold(netgsm.id, "250")
    await m.templates.set(ws.id, "welcome", "Merhaba {{ name }}, kodunuz 481516")
    await m.templates.delete(ws.id, "welcome")
    entry = await m.allowlist.add(ws.id, "10.1.2.0/24")
    await m.allowlist.remove(ws.id, entry)
    live = await m.principal(ws.id, livemode=True)
    opted = await m.suppressions.add(live, {"channel": "sms", "recipient": "0555 000 00 20"})
    await m.suppressions.remove(live, {"channel": "sms", "recipient": "+905550000020"})
    await m.suppressions.add_many(live, [{"channel": "sms", "recipient": "05550000021"}])
    test = await m.principal(ws.id, livemode=False)
    await m.verifications.guard.admit(test, "+905550000031", None)
    with pytest.raises(VerificationFraudSuspected):
        await m.verifications.guard.admit(test, "+905550000032", None)
    composed = await Composer(m.store, m.clock, m.send).send(
        test, {"to": "+905550000033", "body": "Kargonuz yolda", "sender": "ACME"}
    )
    consent = await m.consents.create(
        live, {"recipient": "05550000022", "status": "ONAY", "source": "HS_WEB"}
    )
    await m.iys.connect(ws.id, {"iys_code": 710271, "brand_code": 710272, "username": "api",
                                "password": "iys-pw-5e7d"}, verify=False)  # fmt: skip
    citizen = IysChange("tx-3338", "+905550000023", "BIREYSEL", "MESAJ", "ONAY", "IYS_3338",
                        "2026-01-01 02:00:00", None)  # fmt: skip
    assert await m.iys.puller.apply(ws.id, citizen) == "applied"
    pulled = (await m.consents.list(live, {"recipient": "+905550000023"})).data[0]
    await m.iys.disconnect(ws.id)
    endpoint = await m.webhooks.create(ws.id, "https://hooks.example.com/um")
    rotated = await m.webhooks.rotate_secret(endpoint.endpoint.id)
    await m.webhooks.disable(endpoint.endpoint.id)
    await m.webhooks.enable(endpoint.endpoint.id)
    await m.webhooks.set_events(endpoint.endpoint.id, ["message.failed"])
    await m.webhooks.remove(endpoint.endpoint.id)
    await m.connections.remove(netgsm.id)
    member = await m.users.create("ayse@example.com", "correct horse battery", workspace_id=ws.id)
    await m.users.disable("ayse@example.com")
    await m.vault.rotate()
    await m.vault.rotate()  # again: nothing to re-seal, still one row

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
        ("workspace.content_rules", ws.id, ws.id),
        ("workspace.verify_guard", ws.id, ws.id),
        ("api_key.create", ws.id, key.record.id),
        ("api_key.revoke", ws.id, key.record.id),
        ("connection.add", ws.id, netgsm.id),
        ("connection.add", ws.id, verimor.id),
        ("connection.default", ws.id, verimor.id),
        ("connection.breaker_policy", ws.id, netgsm.id),
        ("connection.send_rate", ws.id, netgsm.id),
        ("connection.senders", ws.id, netgsm.id),
        ("connection.balance_threshold", ws.id, netgsm.id),
        ("template.set", ws.id, "welcome"),
        ("template.delete", ws.id, "welcome"),
        ("allowlist.add", ws.id, "10.1.2.0/24"),
        ("allowlist.remove", ws.id, "10.1.2.0/24"),
        ("suppression.add", ws.id, opted.id),
        ("suppression.remove", ws.id, opted.id),
        ("suppression.import", ws.id, "1 added, 0 existing"),
        ("verification.fraud_refused", ws.id, "prefix:+90555000"),
        ("message.send", ws.id, composed.job_id),
        ("consent.record", ws.id, consent.id),
        ("iys.connect", ws.id, ws.id),
        ("consent.iys_change", ws.id, pulled.id),
        ("iys.disconnect", ws.id, ws.id),
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
        "iys-pw-5e7d",
    ]
    rows = "\n".join(await all_rows(store))
    assert [secret for secret in secrets if secret in rows] == []
    assert [secret for secret in secrets if json.dumps(secret)[1:-1] in rows] == []


async def test_a_refused_change_records_nothing(messenger: Messenger) -> None:
    m = messenger
    ws = await m.workspaces.create("Acme")
    await m.connections.add(ws.id, "sms_a")
    before = await every_event(m)

    refusals = [
        m.workspaces.create(" "),
        m.workspaces.set_monthly_quota(ws.id, -1),
        m.workspaces.set_monthly_quota("ws_missing", 5),
        m.keys.revoke("key_missing"),
        # Refused by the store, inside the transaction the row would have joined.
        m.connections.add(ws.id, "sms_a"),
        m.connections.remove("conn_missing"),
        m.templates.set(ws.id, "Bad Key", "x"),
        m.templates.delete(ws.id, "missing"),
        m.allowlist.add(ws.id, "not-an-address"),
        m.allowlist.remove(ws.id, "192.0.2.1"),
        m.webhooks.rotate_secret("whe_missing"),
    ]
    for refusal in refusals:
        with pytest.raises(MessagingError):
            await refusal

    assert await every_event(m) == before
    assert len(await m.connections.list(ws.id)) == 1


async def test_the_actor_and_client_address_are_the_ones_an_edge_set(
    messenger: Messenger,
) -> None:
    await messenger.workspaces.create("By the library")
    with acting_as(Actor("dashboard:ayşe@example.com", "2001:db8::7")):
        await messenger.workspaces.create("By the dashboard")

    page = await messenger.audit.list()

    assert [(e.actor, e.client_address) for e in page.data] == [
        ("dashboard:ayşe@example.com", "2001:db8::7"),
        ("library", None),
    ]
    mine = await messenger.audit.list(actor="dashboard:ayşe@example.com")
    assert [e.target for e in mine.data] == [page.data[0].target]


async def test_two_changes_at_once_are_both_recorded(messenger: Messenger) -> None:
    async def as_someone(name: str) -> str:
        with acting_as(Actor(name)):
            workspace = await messenger.workspaces.create(name)
            await messenger.allowlist.add(workspace.id, "198.51.100.0/24")
            return workspace.id

    first, second = await asyncio.gather(as_someone("dashboard:a@x.io"), as_someone("cli"))

    for workspace_id, actor in ((first, "dashboard:a@x.io"), (second, "cli")):
        page = await messenger.audit.list(workspace_id=workspace_id)
        assert [(e.action, e.actor) for e in page.data] == [
            ("allowlist.add", actor),
            ("workspace.create", actor),
        ]
        assert await messenger.allowlist.list(workspace_id) == ["198.51.100.0/24"]


async def test_ugly_text_in_an_actor_is_stored_safely_and_never_blocks_the_change(
    messenger: Messenger,
) -> None:
    ugly = "dashboard:'; DROP TABLE um_audit_log; --\x00\ud800\x1b[2J🙂"
    with acting_as(Actor(ugly, "\x00'--")):
        workspace = await messenger.workspaces.create("İstanbul şubesi")

    [event] = (await messenger.audit.list()).data
    assert event.target == workspace.id
    assert event.actor.startswith("dashboard:'; DROP TABLE um_audit_log; --")
    assert "\x00" not in event.actor and "\ud800" not in event.actor
    assert event.actor.endswith("\x1b[2J🙂")  # kept: the CLI escapes it when it prints


async def test_pages_follow_the_cursor_and_bad_arguments_are_refused(
    messenger: Messenger,
) -> None:
    made = [(await messenger.workspaces.create(f"ws {n}")).id for n in range(5)]

    first = await messenger.audit.list(limit=2)
    second = await messenger.audit.list(limit=2, starting_after=first.data[-1].id)
    last = await messenger.audit.list(limit=2, starting_after=second.data[-1].id)

    assert [e.target for e in first.data + second.data + last.data] == made[::-1]
    assert (first.has_more, second.has_more, last.has_more) == (True, True, False)
    assert (await messenger.audit.list(action="workspace.create", limit=5)).has_more is False
    for bad in ({"action": "workspace.drop"}, {"limit": 0}, {"limit": 101}):
        with pytest.raises(RequestInvalid):
            await messenger.audit.list(**bad)  # type: ignore[arg-type]
    with pytest.raises(RequestInvalid):
        await messenger.audit.list(occurred_after=datetime(2026, 1, 1))
    with pytest.raises(ResourceNotFound):
        await messenger.audit.list(starting_after="aud_unknown")
    assert (await messenger.audit.list(workspace_id="ws\x00")).data == []


async def test_a_change_whose_row_cannot_be_stored_is_not_stored_either(
    messenger: Messenger, store: Store
) -> None:
    # The row and the change are one transaction: a database that refuses the row (a
    # trigger, here) keeps the change out too. The memory store has no transactions.
    from unified_messaging.store.sql import SqlStore

    if not isinstance(store, SqlStore):
        pytest.skip("the memory store applies each write at once (Store.atomic)")
    ws = await messenger.workspaces.create("Acme")
    await _refuse_audit_rows(store)
    try:
        with pytest.raises(MessagingError):
            await messenger.allowlist.add(ws.id, "203.0.113.0/24")
        with pytest.raises(MessagingError):
            await messenger.workspaces.create("Never")
        assert await messenger.allowlist.list(ws.id) == []
        assert [w.name for w in await messenger.workspaces.list()] == ["Acme"]
    finally:
        await _allow_audit_rows(store)
    assert [e.action for e in (await messenger.audit.list()).data] == ["workspace.create"]


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
