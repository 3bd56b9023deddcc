"""D34's per-workspace limits on the real command line: ``workspaces update --verify-…``,
as subprocesses on a SQLite file, read back by a messenger on the same database."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from _cli_support import Cli, refused_for

from unified_messaging import Messenger, Vault
from unified_messaging.store.sql import SqlStore
from unified_messaging.verifications import VerificationSettings


def _settings(database_url: str, master_keys: str, workspace_id: str) -> VerificationSettings:
    async def read() -> VerificationSettings:
        messenger = Messenger(SqlStore(database_url), vault=Vault.from_spec(master_keys))
        try:
            await messenger.open()
            return await messenger.verifications.settings(workspace_id)
        finally:
            await messenger.aclose()

    return asyncio.run(read())


def test_verify_limits_are_set_shown_and_audited(
    cli: Cli, workspace_id: str, database_url: str, master_keys: str
) -> None:
    shown = cli("workspaces", "update", workspace_id, "--verify-max-checks", "3",
                "--verify-cooldown", "60", "--json").ok().json()  # fmt: skip
    text = cli("workspaces", "update", workspace_id, "--verify-hourly-limit", "4").ok().stdout
    audit = cli("audit", "list", "--workspace", workspace_id, "--json").ok().json()

    assert (shown["verify_max_checks"], shown["verify_cooldown"]) == (3, 60.0)
    assert (shown["verify_max_sends"], shown["verify_hourly_limit"]) == (5, 10)  # defaults kept
    assert "verify: per recipient an hour" in text
    assert _settings(database_url, master_keys, workspace_id) == VerificationSettings(
        max_checks=3, max_sends=5, resend_cooldown=timedelta(seconds=60), hourly_limit=4
    )
    actions = [row["action"] for row in audit["data"]]
    assert actions.count("workspace.verify_limits") == 2


def test_a_verify_limit_out_of_range_changes_nothing(
    cli: Cli, workspace_id: str, database_url: str, master_keys: str
) -> None:
    refused = cli("workspaces", "update", workspace_id, "--verify-max-checks", "0",
                  "--queue-ttl", "60")  # fmt: skip

    assert refused.returncode == 1
    assert refused_for(refused.stderr, "max_checks"), refused.stderr
    assert _settings(database_url, master_keys, workspace_id) == VerificationSettings()
    listed = cli("workspaces", "list", "--json").ok().json()
    assert listed[0]["queue_ttl"] == 600.0  # the valid option given with it changed nothing


def test_the_pumping_guard_is_set_shown_and_audited(
    cli: Cli, workspace_id: str, database_url: str, master_keys: str
) -> None:
    shown = cli("workspaces", "update", workspace_id, "--verify-prefix-limit", "5/1h",
                "--verify-prefix-digits", "4", "--verify-address-limit", "off",
                "--json").ok().json()  # fmt: skip
    text = cli("workspaces", "update", workspace_id).ok().stdout
    audit = cli("audit", "list", "--workspace", workspace_id, "--json").ok().json()

    assert (shown["verify_prefix_limit"], shown["verify_prefix_digits"]) == ("5/1h", 4)
    assert shown["verify_address_limit"] == "off"
    assert "verify: per number range" in text and "5/1h" in text
    assert [e["action"] for e in audit["data"]].count("workspace.verify_guard") == 1

    async def read() -> object:
        messenger = Messenger(SqlStore(database_url), vault=Vault.from_spec(master_keys))
        try:
            await messenger.open()
            return await messenger.verifications.guard.settings(workspace_id)
        finally:
            await messenger.aclose()

    settings = asyncio.run(read())
    assert str(settings.prefix_limit) == "5/1h"  # type: ignore[attr-defined]


def test_a_bad_guard_setting_is_refused_naming_it_and_changes_nothing(
    cli: Cli, workspace_id: str
) -> None:
    for flag, value, field in [
        ("--verify-prefix-limit", "lots", "prefix_limit"),
        ("--verify-prefix-digits", "12", "prefix_digits"),
        ("--verify-address-limit", "5/9d", "address_limit"),
    ]:
        refused = cli("workspaces", "update", workspace_id, flag, value,
                      "--verify-max-checks", "2")  # fmt: skip
        assert refused.returncode != 0, flag
        assert refused_for(refused.stderr, field), refused.stderr
    shown = cli("workspaces", "update", workspace_id, "--json").ok().json()
    assert (shown["verify_prefix_limit"], shown["verify_max_checks"]) == ("20/10m", 5)
