"""A connection's provider account on the real command line: ``connections show`` (with
``--refresh``) shows the balance and the senders Verimor lists, read from a fake Verimor over
a real socket; ``connections threshold`` sets the low-balance threshold, audited."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest
from _cli_support import Cli
from fakes._server import serve
from fakes.verimor import FakeVerimor


@pytest.fixture
def verimor() -> Iterator[tuple[FakeVerimor, str]]:
    """A fake Verimor on a loopback port, in a thread of its own (the CLI is a subprocess)."""
    fake = FakeVerimor(credits=4321, headers=("UMTEST", "<b>BOLD</b>"))
    ready: list[str] = []
    started, stop = threading.Event(), threading.Event()

    async def run() -> None:
        async with serve(fake.app) as url:
            ready.append(url)
            started.set()
            await asyncio.to_thread(stop.wait)

    thread = threading.Thread(target=lambda: asyncio.run(run()), daemon=True)
    thread.start()
    assert started.wait(10)
    yield fake, ready[0]
    stop.set()
    thread.join(10)


def test_show_reads_the_account_and_threshold_is_audited(
    cli: Cli, workspace_id: str, verimor: tuple[FakeVerimor, str]
) -> None:
    fake, url = verimor
    conn = cli("connections", "add", "sms_c", "--workspace", workspace_id, "--default-sender",
               "UMTEST", "--base-url", url, "--credential", f"username={fake.username}",
               "--credential", f"password={fake.password}", "--json").json()["id"]  # fmt: skip

    before = cli("connections", "show", conn).ok().output
    assert "not read yet" in before

    shown = cli("connections", "show", conn, "--refresh").ok().output
    assert "4321.0 SMS" in shown
    assert "UMTEST, <b>BOLD</b>" in shown
    assert fake.password not in shown

    as_json = cli("connections", "show", conn, "--json").json()
    assert as_json["account"]["balance"] == "4321.0"
    assert as_json["account"]["senders"] == ["UMTEST", "<b>BOLD</b>"]

    set_to = cli("connections", "threshold", conn, "5000", "--json").json()
    assert (set_to["threshold"], set_to["low"]) == ("5000", True)
    assert "below the threshold" in cli("connections", "show", conn).ok().output
    cleared = cli("connections", "threshold", conn, "none", "--json").json()
    assert cleared["threshold"] is None

    audit = cli("audit", "list", "--action", "connection.balance_threshold", "--json").json()
    assert [(row["actor"], row["target"]) for row in audit["data"]] == [("cli", conn)] * 2


def test_a_bad_threshold_is_refused(cli: Cli, workspace_id: str) -> None:
    conn = cli("connections", "add", "sms_a", "--workspace", workspace_id, "--default-sender",
               "ACME", "--json").json()["id"]  # fmt: skip
    refused = cli("connections", "threshold", conn, "abc")
    assert refused.returncode != 0
    assert "threshold" in refused.stderr
