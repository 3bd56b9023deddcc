"""``messenger.audit.list``: newest first, the filters, the cursor, and its refusals."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from unified_messaging import Actor, ManualClock, Messenger, RequestInvalid, acting_as

NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)


async def test_the_log_lists_newest_first_filters_and_pages() -> None:
    clock = ManualClock(NOW)
    messenger = Messenger(clock=clock)
    acme = await messenger.workspaces.create("acme")
    clock.advance(timedelta(minutes=1))
    with acting_as(Actor("cli", "127.0.0.1")):
        other = await messenger.workspaces.create("other")
    clock.advance(timedelta(minutes=1))
    key = await messenger.keys.create(acme.id)

    page = await messenger.audit.list()
    assert [(e.action, e.target, e.actor) for e in page.data] == [
        ("api_key.create", key.record.id, "library"),
        ("workspace.create", other.id, "cli"),  # from 127.0.0.1
        ("workspace.create", acme.id, "library"),
    ]
    assert not page.has_more
    assert [e.target for e in (await messenger.audit.list(workspace_id=acme.id)).data] == [
        key.record.id, acme.id,
    ]  # fmt: skip
    assert [e.target for e in (await messenger.audit.list(action="workspace.create")).data] == [
        other.id, acme.id,
    ]  # fmt: skip
    assert [e.target for e in (await messenger.audit.list(actor="cli")).data] == [other.id]
    window = await messenger.audit.list(
        occurred_after=NOW + timedelta(minutes=1), occurred_before=NOW + timedelta(minutes=2)
    )
    assert [e.target for e in window.data] == [other.id]
    first = await messenger.audit.list(limit=2)
    assert first.has_more
    rest = await messenger.audit.list(limit=2, starting_after=first.data[-1].id)
    assert ([e.target for e in rest.data], rest.has_more) == ([acme.id], False)


async def test_an_unknown_action_or_a_limit_out_of_range_is_refused() -> None:
    messenger = Messenger()
    for arguments in ({"action": "workspace.explode"}, {"limit": 0}, {"limit": 101}):
        with pytest.raises(RequestInvalid) as refused:
            await messenger.audit.list(**arguments)
        assert refused.value.code == "VALIDATION_ERROR"
