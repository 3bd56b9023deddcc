"""stdout closed by its reader (``| head``), and the options every command takes given before
the command name.

A closed pipe is made deterministic: the read end is closed before the command starts, so
every write the command makes to stdout fails with EPIPE, as it does when ``head`` has
already exited. stdout is block-buffered, as for any user, unless a test asks otherwise
(``PYTHONUNBUFFERED``, which the developer's environment may set, is removed).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from _cli_support import TIMEOUT, Cli, Result

#: What a shell reports for a writer killed by SIGPIPE (128 + 13); the CLI exits with it.
READER_GONE = 141


def run_into_closed_pipe(cli: Cli, *args: str, unbuffered: bool = False) -> Result:
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will ever read: every write gets EPIPE
    try:
        proc = subprocess.run(  # noqa: S603 - our own interpreter and fixed arguments
            [sys.executable, "-m", "unified_messaging", *args],
            cwd=cli.cwd,
            env=cli.environ({"PYTHONUNBUFFERED": "1" if unbuffered else ""}),
            stdin=subprocess.DEVNULL,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )
    finally:
        os.close(write_end)
    return Result(args, proc.returncode, "", proc.stderr)


def test_a_change_whose_output_nobody_reads_is_stored_and_reported_quietly(
    cli: Cli, workspace_id: str
) -> None:
    added = run_into_closed_pipe(
        cli, "connections", "add", "--workspace", workspace_id, "sms_a", "--json"
    )

    assert (added.returncode, added.stderr) == (READER_GONE, "")
    [connection] = cli("connections", "list", "--workspace", workspace_id, "--json").json()
    assert connection["provider"] == "sms_a"


def test_listings_help_and_the_demo_into_a_closed_pipe_exit_quietly(
    cli: Cli, workspace_id: str
) -> None:
    cli("keys", "create", "--workspace", workspace_id).ok()

    listing = ("keys", "list", "--workspace", workspace_id)
    for args in (
        (*listing, "--json"),
        listing,
        ("--help",),
        ("keys", "--help"),
        ("--version",),
        ("demo",),
    ):
        result = run_into_closed_pipe(cli, *args)
        assert (result.returncode, result.stderr) == (READER_GONE, ""), args
    # Unbuffered, the first write fails rather than the flush: the same quiet exit.
    for args in ((*listing, "--json"), ("demo", "--json")):
        result = run_into_closed_pipe(cli, *args, unbuffered=True)
        assert (result.returncode, result.stderr) == (READER_GONE, ""), args


def test_a_refusal_into_a_closed_pipe_is_still_the_refusal(cli: Cli) -> None:
    # The error goes to stderr, which is open: exit 1 with its message, as always.
    result = run_into_closed_pipe(cli, "keys", "revoke", "key_nope")

    assert result.returncode == 1
    assert result.stderr == "error: NOT_FOUND: API key key_nope not found.\n"


def test_database_url_and_json_work_before_the_command(cli: Cli, tmp_path: Path) -> None:
    other = f"sqlite+aiosqlite:///{tmp_path / 'other.db'}"

    created = cli("--database-url", other, "--json", "workspaces", "create", "Elsewhere")
    before = cli("--database-url", other, "--json", "workspaces", "list")
    after = cli("workspaces", "list", "--database-url", other, "--json")
    between = cli("workspaces", "--json", "--database-url", other, "list")
    default = cli("--json", "workspaces", "list")  # UM_DATABASE_URL: the test's own database

    workspace_id = created.json()["id"]
    for listing in (before, after, between):
        assert [w["id"] for w in listing.json()] == [workspace_id]
    assert default.json() == []


def test_the_option_after_the_command_wins_over_the_one_before(cli: Cli, tmp_path: Path) -> None:
    first = f"sqlite+aiosqlite:///{tmp_path / 'first.db'}"
    second = f"sqlite+aiosqlite:///{tmp_path / 'second.db'}"
    cli("workspaces", "create", "Second", "--database-url", second).ok()

    listed = cli("--database-url", first, "workspaces", "list", "--database-url", second, "--json")

    assert [w["name"] for w in listed.json()] == ["Second"]


def test_json_before_demo_prints_json_steps(cli: Cli) -> None:
    demo = cli("--json", "demo").ok()

    steps = [json.loads(line) for line in demo.stdout.splitlines()]
    assert steps and all("step" in step for step in steps)


def test_a_bad_database_url_before_the_command_is_a_usage_error(cli: Cli) -> None:
    result = cli("--database-url", "ftp://nowhere", "workspaces", "list")

    assert result.returncode == 2
    assert "argument --database-url: Unsupported database driver 'ftp'" in result.stderr
