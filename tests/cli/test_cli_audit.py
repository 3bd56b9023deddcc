"""``audit list`` and the actor ``cli``, through the real command line (D32)."""

from __future__ import annotations

import asyncio

from _cli_support import Cli

from unified_messaging import Actor, Messenger, Vault, acting_as
from unified_messaging.store.sql import SqlStore


def test_every_command_records_its_change_as_cli_and_audit_list_shows_them(
    cli: Cli, workspace_id: str
) -> None:
    ws = ("--workspace", workspace_id)
    key, *_ = cli.many(
        [
            ("keys", "create", *ws, "--json"),
            ("allowlist", "add", *ws, "203.0.113.0/24"),
            ("templates", "set", *ws, "welcome", "Merhaba {{ name }}, kod 771234"),
        ]
    )
    secret = key.json()["api_key"]

    listed = cli("audit", "list", "--json").json()
    text = cli("audit", "list", *ws).ok().stdout

    events = listed["data"]
    assert listed["has_more"] is False
    assert sorted(e["action"] for e in events) == [
        "allowlist.add", "api_key.create", "template.set", "workspace.create",
    ]  # fmt: skip
    assert {(e["actor"], e["workspace_id"], e["client_address"]) for e in events} == {
        ("cli", workspace_id, None)
    }
    assert set(events[0]) == {
        "id", "at", "actor", "workspace_id", "action", "target", "client_address",
    }  # fmt: skip
    assert text.splitlines()[0].split() == [
        "ID", "AT", "(UTC)", "ACTOR", "WORKSPACE", "ACTION", "TARGET", "CLIENT",
    ]  # fmt: skip
    assert "203.0.113.0/24" in text and "welcome" in text
    assert secret not in text + str(listed)
    assert "771234" not in text + str(listed)


def test_audit_list_filters_pages_and_refuses_what_it_cannot_use(
    cli: Cli, workspace_id: str
) -> None:
    ws = ("--workspace", workspace_id)
    cli.many([("allowlist", "add", *ws, f"198.51.100.{n}") for n in range(3)])

    first, only_adds, unknown, unreadable, no_cursor = cli.many(
        [
            ("audit", "list", "--limit", "2"),
            ("audit", "list", "--action", "allowlist.add", "--json"),
            ("audit", "list", "--action", "workspace.drop"),
            ("audit", "list", "--limit", "two"),
            ("audit", "list", "--starting-after", "aud_missing"),
        ]
    )
    cursor = first.ok().stdout.splitlines()[-1].removeprefix("More follow: --starting-after ")
    rest = cli("audit", "list", "--starting-after", cursor, "--json").json()

    assert len(first.stdout.splitlines()) == 1 + 2 + 1  # header, two events, the hint
    assert [e["action"] for e in only_adds.json()["data"]] == ["allowlist.add"] * 3
    assert len(rest["data"]) == 2 and rest["has_more"] is False  # 4 events in all
    assert unknown.returncode == 1
    assert "VALIDATION_ERROR: Invalid action: unknown action" in unknown.stderr
    assert unreadable.returncode == 2 and "--limit" in unreadable.stderr
    assert no_cursor.returncode == 1 and "NOT_FOUND" in no_cursor.stderr


def test_control_characters_in_an_actor_reach_the_terminal_escaped(
    cli: Cli, database_url: str, master_keys: str
) -> None:
    async def as_a_strange_actor() -> None:
        messenger = Messenger(SqlStore(database_url), vault=Vault.from_spec(master_keys))
        async with messenger:
            with acting_as(Actor("dashboard:\x1b[2Jmallory@example.com", "192.0.2.1")):
                await messenger.workspaces.create("Acme")

    asyncio.run(as_a_strange_actor())
    text = cli("audit", "list").ok().stdout
    listed = cli("audit", "list", "--json").json()

    assert "\x1b" not in text
    assert "dashboard:\\x1b[2Jmallory@example.com" in text
    assert "192.0.2.1" in text
    assert listed["data"][0]["actor"] == "dashboard:\x1b[2Jmallory@example.com"
