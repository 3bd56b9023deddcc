"""D7's queue TTL of a workspace, set through the real command line (``--queue-ttl``)."""

from __future__ import annotations

from _cli_support import Cli, refused_for


def test_workspaces_create_and_update_set_the_queue_ttl(cli: Cli) -> None:
    created = cli("workspaces", "create", "Acme", "--retry-unavailable", "--queue-ttl", "120",
                  "--json").json()  # fmt: skip
    assert (created["retry_unavailable"], created["queue_ttl"]) == (True, 120)
    workspace_id = created["id"]

    # One after the other: ``cli.many`` runs its commands side by side.
    updated = cli("workspaces", "update", workspace_id, "--queue-ttl", "1800", "--json")
    text = cli("workspaces", "update", workspace_id, "--no-retry-unavailable")
    assert updated.json()["queue_ttl"] == 1800
    assert "queue TTL (s)" in text.ok().stdout
    [listed] = cli("workspaces", "list", "--json").json()
    assert (listed["retry_unavailable"], listed["queue_ttl"]) == (False, 1800)
    assert cli("workspaces", "create", "Plain", "--json").json()["queue_ttl"] == 600


def test_a_queue_ttl_out_of_range_is_refused_and_stores_nothing(cli: Cli) -> None:
    workspace_id = cli("workspaces", "create", "Acme", "--json").json()["id"]
    zero, huge, created, unknown = cli.many(
        [
            ("workspaces", "update", workspace_id, "--queue-ttl", "0"),
            ("workspaces", "update", workspace_id, "--queue-ttl", "864000"),
            ("workspaces", "create", "Other", "--queue-ttl", "864000"),
            ("workspaces", "update", "ws_nope", "--queue-ttl", "60"),
        ]
    )
    assert zero.returncode == 2 and "positive number of seconds" in zero.stderr
    for refused in (huge, created):
        assert refused.returncode == 1, refused.args
        assert refused_for(refused.stderr, "queue_ttl"), refused.stderr
    assert (unknown.returncode, unknown.stdout) == (1, "")
    assert "NOT_FOUND" in unknown.stderr
    [only] = cli("workspaces", "list", "--json").json()
    assert (only["id"], only["queue_ttl"]) == (workspace_id, 600)
