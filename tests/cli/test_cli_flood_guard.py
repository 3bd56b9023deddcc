"""D28's flood guard of a workspace, set through the real command line (``--recipient-limit``)."""

from __future__ import annotations

from _cli_support import Cli, refused_for


def test_workspaces_create_and_update_set_the_recipient_limit(cli: Cli) -> None:
    default, created = cli.many(
        [
            ("workspaces", "create", "Plain", "--json"),
            ("workspaces", "create", "Acme", "--recipient-limit", "3/10m", "--json"),
        ]
    )
    assert default.json()["recipient_limit"] == "10/1h"
    assert created.json()["recipient_limit"] == "3/10m"
    workspace_id = created.json()["id"]

    # One after the other: ``cli.many`` runs its commands side by side.
    off = cli("workspaces", "update", workspace_id, "--recipient-limit", "off", "--json")
    text = cli("workspaces", "update", workspace_id, "--recipient-limit", "90/7d")
    assert off.json()["recipient_limit"] == "off"
    assert "recipient limit" in text.ok().stdout and "90/7d" in text.stdout
    # A running server caches workspace settings: the output says how long it may take.
    assert "applies the change within 1 s" in text.stdout
    usage = cli("workspaces", "update", "--help").ok().stdout
    assert "within that long" in " ".join(usage.split())
    listed = {w["id"]: w for w in cli("workspaces", "list", "--json").json()}
    assert listed[workspace_id]["recipient_limit"] == "90/7d"


def test_a_bad_recipient_limit_is_refused_and_changes_nothing(cli: Cli) -> None:
    workspace_id = cli("workspaces", "create", "Acme", "--json").json()["id"]
    results = cli.many(
        [
            (
                "workspaces",
                "update",
                workspace_id,
                "--queue-ttl",
                "60",
                "--recipient-limit",
                "0/1h",
            ),
            ("workspaces", "update", workspace_id, "--recipient-limit", "10 per hour"),
            ("workspaces", "update", workspace_id, "--recipient-limit", "10/8d"),
            ("workspaces", "create", "Other", "--recipient-limit=-1/1h"),
        ]
    )
    for refused in results:
        assert refused.returncode == 1, refused.args
        assert refused_for(refused.stderr, "recipient_limit"), refused.stderr
        assert "Traceback" not in refused.stderr
    [listed] = cli("workspaces", "list", "--json").json()  # "Other" was not created
    assert (listed["queue_ttl"], listed["recipient_limit"]) == (600, "10/1h")
