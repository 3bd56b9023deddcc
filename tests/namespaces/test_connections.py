"""``messenger.connections``: add, read (get, of, list, available), the setters, remove,
credential_fields, test, stats and health; refusals and audit rows."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

import pytest

from namespaces._audit import audit_rows
from unified_messaging import (
    InvalidCredentials,
    ManualClock,
    Messenger,
    RequestInvalid,
    ResourceNotFound,
)
from unified_messaging.providers.base import PROFILES
from unified_messaging.testing import TestBed, create_testbed

NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)


async def test_add_read_set_default_and_remove_each_audited() -> None:
    messenger = Messenger(clock=ManualClock(NOW))
    ws = (await messenger.workspaces.create("acme")).id
    key = await messenger.keys.create(ws)
    principal = await messenger.authenticate(key.secret)

    first = await messenger.connections.add(ws, "sms_a", default_sender="ACME")
    second = await messenger.connections.add(ws, "chatbot")

    assert (first.is_default, second.is_default) == (True, False)  # the first is the default
    assert await messenger.connections.get(first.id) == first
    assert await messenger.connections.of(ws, second.id) == second
    assert [c.id for c in await messenger.connections.list(ws)] == [first.id, second.id]
    assert await messenger.connections.available(principal) == await messenger.connections.list(ws)
    assert (await messenger.connections.set_default(second.id)).is_default
    removed = await messenger.connections.remove(second.id)
    assert removed.id == second.id
    assert (await messenger.connections.get(first.id)).is_default  # the oldest left
    assert [row for row in await audit_rows(messenger) if row[0].startswith("connection")] == [
        ("connection.remove", ws, second.id),
        ("connection.default", ws, second.id),
        ("connection.add", ws, second.id),
        ("connection.add", ws, first.id),
    ]


async def test_the_setters_change_breaker_send_rate_and_senders() -> None:
    messenger = Messenger()
    ws = (await messenger.workspaces.create("acme")).id
    connection = await messenger.connections.add(ws, "sms_a")

    breaker = await messenger.connections.set_breaker_policy(connection.id, min_calls=9)
    rate = await messenger.connections.set_send_rate(connection.id, max_rate=5, max_calls="off")
    senders = await messenger.connections.set_senders(
        connection.id, default_sender="ACME", approved_senders=["SHOP"]
    )

    assert (breaker.breaker.min_calls, breaker.breaker.consecutive) == (9, 5)
    assert (rate.max_rate, rate.max_calls) == (5, None)
    assert (senders.default_sender, set(senders.approved_senders)) == ("ACME", {"ACME", "SHOP"})
    actions = [row[0] for row in await audit_rows(messenger)][:3]
    assert actions == ["connection.senders", "connection.send_rate", "connection.breaker_policy"]


async def test_refusals_name_the_field_and_write_no_row() -> None:
    messenger = Messenger()
    ws = (await messenger.workspaces.create("acme")).id
    connection = await messenger.connections.add(ws, "sms_a")
    rows = await audit_rows(messenger)
    refusals = {
        "provider": messenger.connections.add(ws, "sms_z"),  # type: ignore[arg-type]
        "speed": messenger.connections.set_send_rate(connection.id, speed=1),
        "default_sender": messenger.connections.set_senders(connection.id, default_sender="A\x00"),
        "since": messenger.connections.stats(ws, since=datetime(2026, 3, 1)),
    }
    for field, call in refusals.items():
        with pytest.raises(RequestInvalid) as refused:
            await call
        assert refused.value.code == "VALIDATION_ERROR"
        assert [d.field for d in refused.value.details] == [field]
    with pytest.raises(ResourceNotFound):
        await messenger.connections.of("ws_other", connection.id)  # another workspace's
    with pytest.raises(ResourceNotFound):
        await messenger.connections.health("ws_nope")
    assert await audit_rows(messenger) == rows


def test_credential_fields_read_the_providers_schema() -> None:
    fields = Messenger().connections.credential_fields("chatbot")
    assert [(f.name, f.secret, f.required) for f in fields] == [("bot_token", True, True)]
    assert (fields[0].label, fields[0].hint) == (
        "Bot token", "The token @BotFather gave the bot (123456:ABC…).",
    )  # fmt: skip
    # Every field of every provider has words of its own, not its request name.
    for code in ("sms_a", "sms_b", "sms_c", "sms_d", "sms_e", "chatbot", "bizchat"):
        for field in Messenger().connections.credential_fields(code):
            assert field.label != field.name and field.hint, (code, field.name)
    with pytest.raises(RequestInvalid):
        Messenger().connections.credential_fields("sms_z")


class _Checked:
    """A host's live adapter that answers a credentials check."""

    code = "sms_a"
    max_batch = 1
    checked = 0

    async def check(self) -> None:
        _Checked.checked += 1

    async def aclose(self) -> None:
        return None


async def test_test_asks_the_provider_and_refuses_a_connection_without_credentials() -> None:
    def adapter(connection: object, credentials: Mapping[str, str]) -> _Checked:
        return _Checked()

    messenger = Messenger(live_adapters={"sms_a": adapter})  # type: ignore[dict-item]
    ws = (await messenger.workspaces.create("acme")).id
    live = await messenger.connections.add(ws, "sms_a", credentials={"username": "acme"})
    parts = await messenger.connections.test(live.id)
    assert _Checked.checked == 1
    assert parts == PROFILES["sms_a"].max_parts  # the provider's limit: a host adapter sets none

    bed = await create_testbed()
    simulated = (await bed.messenger.connections.list(bed.workspace.id))[0]
    with pytest.raises(InvalidCredentials) as refused:
        await bed.messenger.connections.test(simulated.id)  # added for test keys only
    assert (refused.value.code, refused.value.http_status) == ("INVALID_CREDENTIALS", 422)


async def test_stats_and_health_of_the_workspaces_connections(bed: TestBed) -> None:
    await bed.messenger.send(bed.principal, {"to": "+905321234567", "body": "x"})
    await bed.settle()
    since = bed.clock.now() - timedelta(hours=1)

    stats = await bed.messenger.connections.stats(bed.workspace.id, since=since, livemode=False)
    health = await bed.messenger.connections.health(bed.workspace.id)

    assert [(s.sent, s.delivered) for s in stats] == [(1, 1)]
    assert await bed.messenger.connections.stats(bed.workspace.id, since=since) == []  # live
    assert len(health) == len(await bed.messenger.connections.list(bed.workspace.id))
    assert {h.state for h in health} == {"closed"}
