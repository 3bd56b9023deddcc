"""A connection's send rate (D27) through the library: the provider's documented limit by
default, set or turned off per connection, and every bad value refused naming its field."""

from __future__ import annotations

import math

import pytest

from unified_messaging import Messenger, RequestInvalid, SyncMessenger, Vault
from unified_messaging._domain import Connection
from unified_messaging._errors import field_sentence
from unified_messaging.providers.base import PROFILES


@pytest.fixture
async def messenger() -> Messenger:
    return Messenger(vault=Vault.generate())


async def a_connection(
    messenger: Messenger, provider: str = "sms_a", **rates: object
) -> Connection:
    workspace = await messenger.workspaces.create("acme")
    return await messenger.connections.add(workspace.id, provider, **rates)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("provider", "max_rate", "max_calls"),
    [("sms_c", None, 4), ("chatbot", 30, None), ("bizchat", 80, None),
     ("sms_a", None, None), ("sms_b", 100, None), ("sms_d", None, None), ("sms_e", None, None)],
)  # fmt: skip
async def test_a_new_connection_gets_its_providers_documented_limit(
    messenger: Messenger, provider: str, max_rate: float | None, max_calls: float | None
) -> None:
    connection = await a_connection(messenger, provider)
    assert (connection.max_rate, connection.max_calls) == (max_rate, max_calls)
    assert (PROFILES[connection.provider].max_rate, PROFILES[connection.provider].max_calls) == (
        max_rate,
        max_calls,
    )


async def test_a_rate_is_set_on_add_and_changed_or_turned_off_later(messenger: Messenger) -> None:
    connection = await a_connection(messenger, "sms_c", max_rate=100)
    assert (connection.max_rate, connection.max_calls) == (100, 4)

    changed = await messenger.connections.set_send_rate(connection.id, max_calls=10)
    assert (changed.max_rate, changed.max_calls) == (100, 10)  # the other one stays
    off = await messenger.connections.set_send_rate(connection.id, max_rate="off", max_calls=None)
    assert (off.max_rate, off.max_calls) == (None, None)
    back = await messenger.connections.set_send_rate(connection.id, max_calls="default")
    assert (back.max_rate, back.max_calls) == (None, 4)
    assert await messenger.connections.get(connection.id) == back


async def test_a_connection_added_without_a_limit_has_none(messenger: Messenger) -> None:
    connection = await a_connection(messenger, "chatbot", max_rate="off")
    assert (connection.max_rate, connection.max_calls) == (None, None)


BAD = [0, -1, 0.0001, 10_001, 1e300, math.nan, math.inf, -math.inf, True, "fast", "", [5]]


@pytest.mark.parametrize("value", BAD, ids=repr)
@pytest.mark.parametrize("field", ["max_rate", "max_calls"])
async def test_a_bad_rate_is_refused_naming_its_field(
    messenger: Messenger, field: str, value: object
) -> None:
    connection = await a_connection(messenger, "sms_c")
    with pytest.raises(RequestInvalid) as caught:
        await messenger.connections.set_send_rate(connection.id, **{field: value})  # type: ignore[arg-type]
    assert caught.value.code == "VALIDATION_ERROR"
    assert str(caught.value) == field_sentence(field, caught.value.details[0].message)
    assert [d.field for d in caught.value.details] == [field]
    assert await messenger.connections.get(connection.id) == connection  # nothing changed

    workspace = await messenger.workspaces.create("other")
    with pytest.raises(RequestInvalid, match=rf"^The {field.replace('_', ' ')} "):
        await messenger.connections.add(workspace.id, "sms_a", **{field: value})  # type: ignore[arg-type]
    assert await messenger.connections.list(workspace.id) == []


async def test_an_unknown_setting_is_refused(messenger: Messenger) -> None:
    connection = await a_connection(messenger)
    with pytest.raises(RequestInvalid, match=r"^The max speed is not a send-rate setting"):
        await messenger.connections.set_send_rate(connection.id, max_speed=5)


def test_the_sync_twin_sets_a_rate() -> None:
    with SyncMessenger() as messenger:
        workspace = messenger.workspaces.create("acme")
        connection = messenger.connections.add(workspace.id, "sms_a", max_rate=5)
        assert messenger.connections.set_send_rate(connection.id, max_rate=7.5).max_rate == 7.5
        with pytest.raises(RequestInvalid, match=r"^The max rate "):
            messenger.connections.set_send_rate(connection.id, max_rate=0)
