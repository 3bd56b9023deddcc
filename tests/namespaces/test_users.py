"""``messenger.users``: dashboard users created, found, listed, checked and disabled;
refusals and audit rows."""

from __future__ import annotations

import pytest
from argon2 import PasswordHasher

from namespaces._audit import audit_rows
from unified_messaging import Messenger, RequestInvalid, ResourceNotFound
from unified_messaging.users import _passwords

PASSWORD = "correct horse battery"


@pytest.fixture(autouse=True)
def cheap_hashes(monkeypatch: pytest.MonkeyPatch) -> None:
    """argon2id at its least cost: the rules under test are the service's, not the hash's."""
    cheap = PasswordHasher(time_cost=1, memory_cost=8, parallelism=1)
    monkeypatch.setattr(_passwords, "_hasher", lambda: cheap)


async def test_create_find_get_list_and_check_the_password() -> None:
    messenger = Messenger()
    workspace = await messenger.workspaces.create("acme")

    operator = await messenger.users.create("Ops@Example.com ", PASSWORD, operator=True)
    member = await messenger.users.create("ayse@example.com", None, workspace_id=workspace.id)

    assert (operator.email, operator.role, operator.workspace_id) == (
        "ops@example.com", "operator", None,
    )  # fmt: skip
    assert (member.role, member.workspace_id) == ("member", workspace.id)
    assert PASSWORD not in repr(operator)
    assert (await messenger.users.find("OPS@example.com")).id == operator.id
    assert (await messenger.users.get(member.id)).email == "ayse@example.com"
    assert {u.id for u in await messenger.users.list()} == {operator.id, member.id}
    assert await messenger.users.check_password("ops@example.com", PASSWORD) == operator
    assert await messenger.users.check_password("ops@example.com", "wrong horse") is None
    assert await messenger.users.check_password("nobody@example.com", PASSWORD) is None
    # A user without a password signs in with a login link only.
    assert await messenger.users.check_password("ayse@example.com", "") is None
    assert (await audit_rows(messenger))[0] == ("user.create", workspace.id, member.id)


async def test_a_disabled_user_cannot_sign_in_and_the_row_names_them() -> None:
    messenger = Messenger()
    user = await messenger.users.create("ops@example.com", PASSWORD, operator=True)

    disabled = await messenger.users.disable("ops@example.com")

    assert disabled.disabled_at is not None and not disabled.enabled
    assert await messenger.users.check_password("ops@example.com", PASSWORD) is None
    assert (await audit_rows(messenger))[0] == ("user.disable", None, user.id)


async def test_refusals_role_password_workspace_and_unknown_users() -> None:
    messenger = Messenger()
    with pytest.raises(RequestInvalid) as both:
        await messenger.users.create("a@example.com", PASSWORD, operator=True, workspace_id="ws_1")
    assert (both.value.code, [d.field for d in both.value.details]) == (
        "VALIDATION_ERROR", ["role"],
    )  # fmt: skip
    with pytest.raises(RequestInvalid) as short:
        await messenger.users.create("a@example.com", "short", operator=True)
    assert [d.field for d in short.value.details] == ["password"]
    assert "short" not in str(short.value)
    with pytest.raises(ResourceNotFound):
        await messenger.users.create("a@example.com", PASSWORD, workspace_id="ws_nope")
    for missing in (messenger.users.find("x@example.com"), messenger.users.get("usr_nope")):
        with pytest.raises(ResourceNotFound) as unknown:
            await missing
        assert unknown.value.code == "NOT_FOUND"
    with pytest.raises(ResourceNotFound):
        await messenger.users.disable("x@example.com")
    assert await audit_rows(messenger) == []
