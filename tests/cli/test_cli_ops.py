"""``migrate``, ``vault``, the development key file, and usage errors (exit 2)."""

from __future__ import annotations

import stat
from pathlib import Path

from _cli_support import Cli

from unified_messaging.store.sql import SqlStore
from unified_messaging.vault._core import Vault, generate_key_spec

SECRET = "s3cret-value-never-printed"


async def _stored_credentials(database_url: str, vault: Vault) -> dict[str, dict[str, str]]:
    """Every connection's credentials as ``vault`` decrypts them, read straight from the file."""
    store = SqlStore(database_url)
    await store.open()
    try:
        found: dict[str, dict[str, str]] = {}
        for workspace in await store.list_workspaces():
            for c in await store.list_connections(workspace.id):
                found[c.provider] = vault.decrypt_json(
                    c.credentials, workspace_id=c.workspace_id, connection_id=c.id
                )
        return found
    finally:
        await store.close()


async def test_vault_rotate_reencrypts_every_connection_under_a_prepended_key(
    cli: Cli, workspace_id: str, master_keys: str, database_url: str
) -> None:
    ws = ("--workspace", workspace_id)
    sms = ("--credential", "usercode=acme", "--credential", f"password={SECRET}")
    bot = ("--credential", "bot_token=1:abc")
    cli("connections", "add", *ws, "sms_a", *sms).ok()
    cli("connections", "add", *ws, "chatbot", *bot).ok()
    new_key = generate_key_spec("k2")
    rotating = {"UM_MASTER_KEYS": f"{new_key},{master_keys}"}

    before = await _stored_credentials(database_url, Vault.from_spec(master_keys))
    rotated = cli("vault", "rotate", "--json", **rotating).json()
    again = cli("vault", "rotate", **rotating).ok()
    after = await _stored_credentials(database_url, Vault.from_spec(new_key))

    assert rotated == {
        "rotated": 2,
        "connections": 2,
        "webhook_secrets": 0,
        "expired_secrets_removed": 0,
        "iys_passwords": 0,
        "active_key_id": "k2",
    }
    assert "Re-encrypted under key k2: connections: 0, webhook secrets: 0." in again.stdout
    assert before == after
    assert after == {
        "sms_a": {"usercode": "acme", "password": SECRET},
        "chatbot": {"bot_token": "1:abc"},
    }


async def test_without_master_keys_a_private_dev_key_file_keeps_credentials_readable(
    cli: Cli, workspace_id: str, database_url: str, tmp_path: Path
) -> None:
    no_keys = {"UM_MASTER_KEYS": ""}
    added = cli(
        "connections", "add", "--workspace", workspace_id, "sms_a",
        "--credential", "usercode=acme", "--credential", f"password={SECRET}", **no_keys,
    ).ok()  # fmt: skip
    key_file = tmp_path / ".um_master_key"

    assert "warning: No UM_MASTER_KEYS configured: created" in added.stderr
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    stored = await _stored_credentials(database_url, Vault.from_key_file(key_file))
    assert stored == {"sms_a": {"usercode": "acme", "password": SECRET}}


def test_migrate_twice_is_fine(cli: Cli, database_url: str) -> None:
    first = cli("migrate").ok()
    second = cli("migrate", "--json").json()

    assert "latest schema" in first.stdout
    assert second == {"database_url": database_url, "migrated": True}


def test_vault_generate_key_prints_a_spec_for_um_master_keys(cli: Cli) -> None:
    text, as_json = cli.many(
        [("vault", "generate-key"), ("vault", "generate-key", "--json", "--kid", "k9")]
    )

    spec = text.ok().stdout.strip()
    assert Vault.from_spec(spec).active_kid.startswith("k")
    assert "vault rotate" in text.stderr  # the test's environment has UM_MASTER_KEYS
    document = as_json.json()
    assert document["key_id"] == "k9"
    assert Vault.from_spec(document["key_spec"]).active_kid == "k9"


def test_vault_generate_key_on_a_first_set_up_says_to_set_the_variable(cli: Cli) -> None:
    first = cli("vault", "generate-key", UM_MASTER_KEYS="").ok()

    assert "Set UM_MASTER_KEYS to it" in first.stderr
    assert "rotate" not in first.stderr  # nothing to rotate from yet
    assert first.stdout.strip() not in first.stderr  # the key is printed once, on stdout


def test_usage_errors_exit_2_and_never_echo_a_credential(cli: Cli, tmp_path: Path) -> None:
    workspace_id = "ws_any"  # usage is checked before any workspace is looked up
    (tmp_path / "broken.json").write_text('{"password": "' + SECRET)
    add = ("connections", "add", "--workspace", workspace_id, "sms_a")
    cases = {
        (): "the following arguments are required: COMMAND",
        ("keys", "list"): "the following arguments are required: --workspace",
        ("keys", "create", "--workspace", workspace_id, "--expires-at", "2030-01-01T00:00"):
            "argument --expires-at: '2030-01-01T00:00' needs a timezone",
        ("connections", "add", "--workspace", workspace_id, "sms_z"): "invalid choice: 'sms_z'",
        (*add, "--credential", SECRET): "argument --credential: expected NAME=VALUE",
        (*add, "--credential", "a=1", "--credential", f"a={SECRET}"):
            "argument --credential: a is given twice",
        (*add, "--credentials-file", "broken.json"): "argument --credentials-file: not valid JSON",
        ("serve", "--port", "70000"): "argument --port: '70000' is not a port number",
        ("vault", "generate-key", "--kid", "not a kid"): "argument --kid: Invalid key id",
        ("workspaces", "list", "--database-url", "ftp://nowhere"):
            "argument --database-url: Unsupported database driver 'ftp'",
    }  # fmt: skip

    results = cli.many(list(cases))

    for result, expected in zip(results, cases.values(), strict=True):
        assert result.returncode == 2, result.args
        assert expected in result.stderr, result.args
        assert "usage: unified-messaging" in result.stderr
        assert SECRET not in result.output


def test_the_database_the_cli_creates_is_readable_by_its_owner_only(cli: Cli) -> None:
    cli("migrate").ok()
    cli("workspaces", "create", "Acme").ok()
    for name in ("um.db", "um.db-wal", "um.db-shm"):
        path = cli.cwd / name
        if path.exists():  # WAL and SHM go away when the last connection closes cleanly
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, name
    assert stat.S_IMODE((cli.cwd / "um.db").stat().st_mode) == 0o600
