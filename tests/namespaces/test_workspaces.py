"""``messenger.workspaces``: create, get, list, every setter and the quota usage; refusals
(the field named) and one audit row per change."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta

import pytest

from namespaces._audit import audit_rows
from unified_messaging import (
    ManualClock,
    Messenger,
    QuietHours,
    RecipientLimit,
    RequestInvalid,
    ResourceNotFound,
)
from unified_messaging.testing import create_testbed

NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)


async def test_create_get_and_list_with_the_documented_defaults() -> None:
    messenger = Messenger(clock=ManualClock(NOW))

    workspace = await messenger.workspaces.create("  Acme  ", monthly_quota=100)

    assert (workspace.name, workspace.monthly_quota, workspace.created_at) == ("Acme", 100, NOW)
    assert workspace.queue_ttl == timedelta(minutes=10)
    assert workspace.recipient_limit == RecipientLimit(10, timedelta(hours=1))
    assert await messenger.workspaces.get(workspace.id) == workspace
    assert [w.id for w in await messenger.workspaces.list()] == [workspace.id]
    assert await audit_rows(messenger) == [("workspace.create", workspace.id, workspace.id)]


async def test_each_setter_changes_its_setting_and_records_its_own_action() -> None:
    messenger = Messenger(clock=ManualClock(NOW))
    ws = (await messenger.workspaces.create("acme")).id
    quiet = QuietHours(time(21), time(9))

    await messenger.workspaces.set_monthly_quota(ws, 5)
    await messenger.workspaces.set_retry_unavailable(ws, True)
    await messenger.workspaces.set_queue_ttl(ws, timedelta(minutes=30))
    await messenger.workspaces.set_recipient_limit(ws, "3/1h")
    await messenger.workspaces.set_quiet_hours(ws, quiet)
    changed = await messenger.workspaces.set_text_masking(ws, True)

    assert (changed.monthly_quota, changed.retry_unavailable, changed.queue_ttl) == (
        5, True, timedelta(minutes=30),
    )  # fmt: skip
    assert changed.recipient_limit == RecipientLimit(3, timedelta(hours=1))
    assert (changed.quiet_hours, changed.mask_live_text) == (quiet, True)
    assert await messenger.workspaces.get(ws) == changed
    assert [row[0] for row in await audit_rows(messenger)] == [
        "workspace.text_masking", "workspace.quiet_hours", "workspace.recipient_limit",
        "workspace.queue_ttl", "workspace.retry_unavailable", "workspace.quota",
        "workspace.create",
    ]  # fmt: skip
    off = await messenger.workspaces.set_recipient_limit(ws, None)
    assert off.recipient_limit is None


async def test_quota_usage_counts_this_months_messages_against_the_limit() -> None:
    bed = await create_testbed(clock=ManualClock(NOW))
    await bed.messenger.workspaces.set_monthly_quota(bed.workspace.id, 10)
    await bed.messenger.send(bed.principal, {"to": "+905321234567", "body": "x"})

    usage = await bed.messenger.workspaces.quota_usage(bed.workspace.id)

    assert (usage.period, usage.limit) == ("2026-03", 10)
    assert usage.used == 0  # test mode is free (D2, D17)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda m, ws: m.workspaces.create(" "), "name"),
        (lambda m, ws: m.workspaces.set_monthly_quota(ws, -1), "monthly_quota"),
        (lambda m, ws: m.workspaces.set_queue_ttl(ws, timedelta(0)), "queue_ttl"),
        (lambda m, ws: m.workspaces.set_recipient_limit(ws, "lots"), "recipient_limit"),
        (lambda m, ws: m.workspaces.set_quiet_hours(ws, "21-09"), "quiet_hours"),
        (lambda m, ws: m.workspaces.set_text_masking(ws, "yes"), "mask_live_text"),
    ],
)
async def test_a_bad_value_is_refused_naming_its_field_and_writes_no_row(
    change: object, field: str
) -> None:
    messenger = Messenger(clock=ManualClock(NOW))
    ws = (await messenger.workspaces.create("acme")).id

    with pytest.raises(RequestInvalid) as refused:
        await change(messenger, ws)  # type: ignore[operator]

    assert (refused.value.code, refused.value.http_status) == ("VALIDATION_ERROR", 400)
    assert field in [d.field for d in refused.value.details]
    assert len(await audit_rows(messenger)) == 1


async def test_an_unknown_workspace_is_not_found() -> None:
    messenger = Messenger()
    with pytest.raises(ResourceNotFound) as unknown:
        await messenger.workspaces.get("ws_nope")
    assert (unknown.value.code, unknown.value.http_status) == ("NOT_FOUND", 404)
    with pytest.raises(ResourceNotFound):
        await messenger.workspaces.set_retry_unavailable("ws_nope", True)
