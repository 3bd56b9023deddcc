"""``messenger.vault.rotate``: every sealed value re-sealed under the active key, once;
a token under a key no longer configured refused before anything is written; the audit row."""

from __future__ import annotations

import pytest

from namespaces._audit import audit_rows
from unified_messaging import Messenger, UnknownKeyId, Vault, generate_key_spec

OLD = generate_key_spec("old")
NEW = generate_key_spec("new")
CREDENTIALS = {"bot_token": "123456:" + "A" * 35}


async def _sealed_under_old() -> tuple[Messenger, str]:
    messenger = Messenger(vault=Vault.from_spec(OLD))
    workspace = await messenger.workspaces.create("acme")
    connection = await messenger.connections.add(workspace.id, "chatbot", credentials=CREDENTIALS)
    await messenger.webhooks.create(workspace.id, "https://example.com/hook")
    return messenger, connection.id


async def test_rotate_reseals_credentials_and_secrets_once_and_is_audited() -> None:
    old, connection_id = await _sealed_under_old()
    rotating = Messenger(old.store, vault=Vault.from_spec(f"{NEW},{OLD}"))

    rotation = await rotating.vault.rotate()

    assert (rotation.active_key_id, rotation.connections, rotation.webhook_secrets) == (
        "new", 1, 1,
    )  # fmt: skip
    stored = await old.store.get_connection(connection_id)
    assert stored is not None and stored.credentials.startswith("v1.new.")
    assert (await rotating.vault.rotate()).total == 0  # safe to repeat
    assert [row for row in await audit_rows(rotating) if row[0] == "vault.rotate"] == [
        ("vault.rotate", None, "new"), ("vault.rotate", None, "new"),
    ]  # fmt: skip


async def test_a_token_under_a_key_no_longer_configured_is_refused_and_nothing_written() -> None:
    old, connection_id = await _sealed_under_old()
    before = await old.store.get_connection(connection_id)
    without_old = Messenger(old.store, vault=Vault.from_spec(NEW))

    with pytest.raises(UnknownKeyId) as refused:
        await without_old.vault.rotate()

    assert "old" in str(refused.value)
    assert await old.store.get_connection(connection_id) == before
    assert not [row for row in await audit_rows(without_old) if row[0] == "vault.rotate"]
