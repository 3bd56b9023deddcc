"""``messenger.keys``: create (the secret once), list, revoke; refusals and audit rows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from namespaces._audit import audit_rows
from unified_messaging import ManualClock, Messenger, RequestInvalid, ResourceNotFound, Unauthorized

NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)


async def test_a_created_key_authenticates_is_listed_without_its_secret_and_is_audited() -> None:
    messenger = Messenger(clock=ManualClock(NOW))
    workspace = await messenger.workspaces.create("acme")

    created = await messenger.keys.create(workspace.id, livemode=True, name="shop")

    assert created.secret.startswith("um_live_")
    principal = await messenger.authenticate(created.secret)
    assert (principal.workspace_id, principal.livemode) == (workspace.id, True)
    listed = await messenger.keys.list(workspace.id)
    assert [(k.id, k.name) for k in listed] == [(created.record.id, "shop")]
    assert created.secret not in repr(listed)
    assert (await audit_rows(messenger))[0] == ("api_key.create", workspace.id, created.record.id)


async def test_a_revoked_key_no_longer_authenticates_and_revoking_again_is_idempotent() -> None:
    messenger = Messenger(clock=ManualClock(NOW))
    workspace = await messenger.workspaces.create("acme")
    created = await messenger.keys.create(workspace.id)

    revoked = await messenger.keys.revoke(created.record.id)

    assert revoked.revoked_at == NOW
    with pytest.raises(Unauthorized) as refused:
        await messenger.authenticate(created.secret)
    assert refused.value.code == "UNAUTHORIZED"
    assert (await messenger.keys.revoke(created.record.id)).revoked_at == NOW
    assert (await audit_rows(messenger))[0] == ("api_key.revoke", workspace.id, created.record.id)


async def test_refusals_an_expiry_in_the_past_another_workspace_and_an_unknown_key() -> None:
    messenger = Messenger(clock=ManualClock(NOW))
    workspace = await messenger.workspaces.create("acme")
    other = await messenger.workspaces.create("other")
    key = await messenger.keys.create(workspace.id)
    rows = await audit_rows(messenger)

    with pytest.raises(RequestInvalid) as past:
        await messenger.keys.create(workspace.id, expires_at=NOW - timedelta(seconds=1))
    assert (past.value.code, [d.field for d in past.value.details]) == (
        "VALIDATION_ERROR", ["expires_at"],
    )  # fmt: skip
    with pytest.raises(ResourceNotFound) as elsewhere:
        await messenger.keys.revoke(key.record.id, workspace_id=other.id)
    assert elsewhere.value.code == "NOT_FOUND"
    with pytest.raises(ResourceNotFound):
        await messenger.keys.create("ws_nope")
    assert await audit_rows(messenger) == rows  # a refusal writes no row
    assert (await messenger.keys.list(workspace.id))[0].revoked_at is None
