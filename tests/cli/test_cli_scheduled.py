"""Scheduled sends on the real command line: ``campaign send --at``, ``messages cancel`` and
``workspaces update --quiet-hours``, as subprocesses on a SQLite file."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from _campaign_bed import TEMPLATE, Bed, make_bed, write_csv
from _cli_support import Cli, refused_for

ROWS = "phone,name,order\n05321000001,Ayşe,A-1\n05321000002,Can,A-2\n"


@pytest.fixture
def bed(database_url: str, master_keys: str) -> Bed:
    return make_bed(database_url, master_keys)


def _campaign(bed: Bed, path: Path, *args: str) -> list[str]:
    return ["campaign", "send", "--workspace", bed.workspace_id, "--csv", str(path),
            "--template", TEMPLATE, "--test", "--no-progress", *args]  # fmt: skip


def test_a_campaign_at_a_time_waits_and_a_row_can_be_canceled(
    cli: Cli, bed: Bed, tmp_path: Path
) -> None:
    due = datetime.now(UTC) + timedelta(days=1)
    source = write_csv(tmp_path / "tomorrow.csv", ROWS)

    cli(*_campaign(bed, source, "--at", due.isoformat())).ok()

    waiting = sorted(bed.messages(), key=lambda m: m.to)
    assert [(m.status, m.send_at) for m in waiting] == [("queued", due), ("queued", due)]
    canceled = cli("messages", "cancel", waiting[0].job_id).ok()
    assert canceled.stdout.strip() == f"{waiting[0].job_id}  failed (CANCELED)"
    again = cli("messages", "cancel", waiting[0].job_id, "--json").ok().json()
    assert (again["status"], again["error"]["code"]) == ("failed", "CANCELED")
    after = {m.job_id: m for m in bed.messages()}
    assert after[waiting[1].job_id].status == "queued"  # the other row still waits


def test_a_campaign_at_a_past_time_sends_nothing(cli: Cli, bed: Bed, tmp_path: Path) -> None:
    source = write_csv(tmp_path / "late.csv", ROWS)
    past = (datetime.now(UTC) - timedelta(hours=1)).isoformat()

    late = cli(*_campaign(bed, source, "--at", past))
    naive = cli(*_campaign(bed, source, "--campaign", "naive", "--at", "2030-01-01T09:00:00"))

    assert late.returncode == 1 and "SEND_AT_OUT_OF_RANGE" in late.stderr
    assert naive.returncode == 1 and "VALIDATION_ERROR" in naive.stderr
    assert bed.messages() == []


def test_a_message_a_provider_has_cannot_be_canceled(cli: Cli, bed: Bed, tmp_path: Path) -> None:
    source = write_csv(tmp_path / "now.csv", ROWS)
    cli(*_campaign(bed, source)).ok()
    job = bed.messages()[0].job_id

    refused = cli("messages", "cancel", job)
    missing = cli("messages", "cancel", "msg_nothing")

    assert refused.returncode == 1
    assert refused.stderr.startswith("error: MESSAGE_NOT_CANCELABLE: "), refused.stderr
    assert missing.returncode == 1 and "MESSAGE_NOT_FOUND" in missing.stderr


def test_quiet_hours_are_set_shown_and_turned_off(cli: Cli, bed: Bed) -> None:
    ws = bed.workspace_id
    on = cli("workspaces", "update", ws, "--quiet-hours", "21:00-09:00", "--quiet-scope", "all",
             "--json").ok().json()  # fmt: skip
    text = cli("workspaces", "update", ws, "--quiet-hours", "22:30-08:00",
               "--quiet-zone", "UTC").ok().stdout  # fmt: skip
    bad_window = cli("workspaces", "update", ws, "--quiet-hours", "25:00-09:00")
    bad_zone = cli("workspaces", "update", ws, "--quiet-hours", "21:00-09:00",
                   "--quiet-zone", "Mars/Olympus")  # fmt: skip
    empty = cli("workspaces", "update", ws, "--quiet-hours", "09:00-09:00")
    kept = cli("workspaces", "list", "--json").ok().json()
    off = cli("workspaces", "update", ws, "--quiet-hours", "off", "--json").ok().json()
    audit = cli("audit", "list", "--workspace", ws, "--json").ok().json()

    assert on["quiet_hours"] == {"window": "21:00-09:00", "zone": "Europe/Istanbul", "scope": "all"}
    assert "quiet hours" in text and "22:30-08:00" in text
    for refused in (bad_window, bad_zone, empty):
        assert refused.returncode == 1, refused.args
        assert refused_for(refused.stderr, "quiet_hours"), refused.stderr
    assert kept[0]["quiet_hours"] == {"window": "22:30-08:00", "zone": "UTC", "scope": "commercial"}
    assert off["quiet_hours"] == "off"
    actions = [row["action"] for row in audit["data"]]
    assert actions.count("workspace.quiet_hours") == 3
