"""``Store.append_audit_event`` and ``Store.list_audit_events`` on memory, SQLite and PostgreSQL.

The same events go into every backend and the same answers must come out: the order, each
filter, the cursor, and text of any shape (unicode, SQL, control characters) kept verbatim.
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from unified_messaging import AuditEvent, ResourceNotFound
from unified_messaging._text import storable
from unified_messaging.audit._actions import AUDIT_ACTIONS
from unified_messaging.audit._events import AuditQuery
from unified_messaging.store.base import Store
from unified_messaging.store.memory import MemoryStore
from unified_messaging.store.sql import SqlStore

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
INJECTION = "'; DROP TABLE um_audit_log; --"
_numbers = itertools.count()


def an_event(event_id: str, seconds: float = 0, **changes: Any) -> AuditEvent:
    values: dict[str, Any] = {
        "id": event_id,
        "at": T0 + timedelta(seconds=seconds),
        "actor": "cli",
        "workspace_id": "ws_1",
        "action": "api_key.create",
        "target": "key_1",
        "client_address": None,
    }
    return AuditEvent(**{**values, **changes})


async def append(store: Store, *events: AuditEvent) -> None:
    for event in events:
        await store.append_audit_event(event)


def ids(events: list[AuditEvent]) -> list[str]:
    return [event.id for event in events]


async def test_lists_newest_first_and_breaks_ties_by_id_descending(store: Store) -> None:
    await append(store, an_event("aud_1", 0), an_event("aud_3", 5), an_event("aud_2", 5))

    assert ids(await store.list_audit_events(AuditQuery())) == ["aud_3", "aud_2", "aud_1"]


async def test_an_event_comes_back_as_it_went_in(store: Store) -> None:
    event = an_event(
        "aud_1",
        actor="dashboard:ayşe@example.com",
        client_address="2001:db8::1",
        workspace_id=None,
        action="vault.rotate",
        target="k2",
    )
    await append(store, event)

    assert await store.list_audit_events(AuditQuery()) == [event]


async def test_each_filter_keeps_only_its_events(store: Store) -> None:
    await append(
        store,
        an_event("aud_1", 0, workspace_id="ws_1", action="api_key.create", actor="cli"),
        an_event("aud_2", 1, workspace_id="ws_2", action="api_key.create", actor="library"),
        an_event("aud_3", 2, workspace_id="ws_1", action="template.set", actor="library"),
        an_event("aud_4", 3, workspace_id=None, action="vault.rotate", actor="cli"),
    )

    async def listed(**filters: Any) -> list[str]:
        return ids(await store.list_audit_events(AuditQuery(**filters)))

    assert await listed(workspace_id="ws_1") == ["aud_3", "aud_1"]
    assert await listed(action="api_key.create") == ["aud_2", "aud_1"]
    assert await listed(actor="cli") == ["aud_4", "aud_1"]
    assert await listed(workspace_id="ws_1", actor="library") == ["aud_3"]
    # After inclusive, before exclusive: consecutive windows neither overlap nor leave a gap.
    assert await listed(occurred_after=T0 + timedelta(seconds=1)) == ["aud_4", "aud_3", "aud_2"]
    assert await listed(occurred_before=T0 + timedelta(seconds=1)) == ["aud_1"]
    assert await listed(workspace_id="ws_9") == []


async def test_the_cursor_continues_after_its_event_and_an_unknown_one_is_not_found(
    store: Store,
) -> None:
    await append(store, *(an_event(f"aud_{n}", n % 3) for n in range(7)))
    everything = ids(await store.list_audit_events(AuditQuery(limit=100)))

    pages: list[str] = []
    cursor = None
    while True:
        page = ids(await store.list_audit_events(AuditQuery(limit=3, starting_after=cursor)))
        pages += page
        if len(page) < 3:
            break
        cursor = page[-1]
    assert pages == everything
    with pytest.raises(ResourceNotFound):
        await store.list_audit_events(AuditQuery(starting_after=INJECTION))


async def test_injection_strings_are_kept_and_matched_as_plain_text(store: Store) -> None:
    await append(
        store,
        an_event("aud_1", 0, target=INJECTION, actor=INJECTION, workspace_id=INJECTION),
        an_event("aud_2", 1),
    )

    found = await store.list_audit_events(AuditQuery(actor=INJECTION, workspace_id=INJECTION))

    assert [(e.target, e.actor, e.workspace_id) for e in found] == [(INJECTION,) * 3]
    assert len(await store.list_audit_events(AuditQuery())) == 2  # the table is still there


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    text=st.text(min_size=1, max_size=80).filter(storable),
    action=st.sampled_from(AUDIT_ACTIONS),
)
async def test_any_storable_text_round_trips_and_filters_exactly(
    store: Store, text: str, action: str
) -> None:
    event_id = f"aud_{next(_numbers)}"  # one store serves every example
    event = an_event(event_id, actor=text, target=text, client_address=text, action=action)
    await append(store, event)

    found = await store.list_audit_events(AuditQuery(actor=text, action=action, limit=100))

    assert event in found
    assert all(e.actor == text and e.action == action for e in found)


@pytest.mark.parametrize("store_class", [MemoryStore, SqlStore])
def test_no_store_can_change_or_delete_an_audit_row(store_class: type) -> None:
    # Append-only (D32): the only audit methods are the two of the protocol.
    names = {name for name in dir(store_class) if "audit" in name and not name.startswith("__")}
    assert names <= {"append_audit_event", "list_audit_events", "_audit_log"}
