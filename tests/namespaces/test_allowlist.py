"""``messenger.allowlist``: add (normalized), list, remove; what the first entry closes;
refusals and audit rows."""

from __future__ import annotations

import pytest

from namespaces._audit import audit_rows
from unified_messaging import IpNotAllowed, Messenger, RequestInvalid, ResourceNotFound


async def test_add_list_and_remove_an_entry_in_its_normal_form() -> None:
    messenger = Messenger()
    workspace = await messenger.workspaces.create("acme")

    assert await messenger.allowlist.add(workspace.id, "10.0.0.0/24") == "10.0.0.0/24"
    assert await messenger.allowlist.add(workspace.id, "2001:db8::1/128") == "2001:db8::1"
    assert sorted(await messenger.allowlist.list(workspace.id)) == ["10.0.0.0/24", "2001:db8::1"]
    assert await messenger.allowlist.remove(workspace.id, "10.0.0.0/24") == "10.0.0.0/24"

    assert await messenger.allowlist.list(workspace.id) == ["2001:db8::1"]
    assert [row[0] for row in (await audit_rows(messenger))[:3]] == [
        "allowlist.remove", "allowlist.add", "allowlist.add",
    ]  # fmt: skip
    assert (await audit_rows(messenger))[0][1:] == (workspace.id, "10.0.0.0/24")


async def test_the_first_entry_closes_the_workspace_to_every_other_address() -> None:
    messenger = Messenger()
    workspace = await messenger.workspaces.create("acme")
    await messenger.access.check_client_ip(workspace.id, "192.0.2.9")  # empty: open to all

    await messenger.allowlist.add(workspace.id, "10.0.0.0/8")

    await messenger.access.check_client_ip(workspace.id, "10.1.2.3")
    with pytest.raises(IpNotAllowed) as refused:
        await messenger.access.check_client_ip(workspace.id, "192.0.2.9")
    assert refused.value.code == "IP_NOT_ALLOWED"


async def test_refusals_a_malformed_entry_one_not_listed_and_an_unknown_workspace() -> None:
    messenger = Messenger()
    workspace = await messenger.workspaces.create("acme")
    rows = await audit_rows(messenger)

    for bad in ("not-an-ip", " 10.0.0.1", "10.0.0.0/33", "10.0.0.1/8"):
        with pytest.raises(RequestInvalid) as malformed:
            await messenger.allowlist.add(workspace.id, bad)
        assert malformed.value.code == "VALIDATION_ERROR"
    with pytest.raises(ResourceNotFound):
        await messenger.allowlist.remove(workspace.id, "10.0.0.1")
    with pytest.raises(ResourceNotFound):
        await messenger.allowlist.list("ws_nope")
    assert await audit_rows(messenger) == rows
