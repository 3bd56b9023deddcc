"""``messages list``, ``messages show`` and ``stats``, run as the real command line.

The messages are sent in this process by a Messenger on the CLI's SQLite file (test mode,
the simulator, a manual clock an hour ago), then read by ``python -m unified_messaging``.
"""

from __future__ import annotations

import asyncio
import socket
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from _cli_support import Cli, refused_for

from unified_messaging import ManualClock, Messenger, TargetPolicy, Vault
from unified_messaging.providers.simulator import SimulatorSettings
from unified_messaging.store.sql import SqlStore
from unified_messaging.testing import create_testbed

REPORT_DELAY = timedelta(seconds=2)


@dataclass(frozen=True)
class Sent:
    workspace_id: str
    delivered: str  # sms_a, delivered 2 s after the hand-over
    fell_back: str  # sms_a refuses it, sms_b delivers it
    expired: str  # sms_a reports it expired


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


async def _send(database_url: str, master_keys: str) -> Sent:
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1)
    messenger = Messenger(
        SqlStore(database_url),
        clock=ManualClock(start),
        vault=Vault.from_spec(master_keys),
        simulator_settings=SimulatorSettings(report_delay=REPORT_DELAY),
        webhook_policy=TargetPolicy(allow_private=True),
    )
    try:
        bed = await create_testbed(messenger=messenger)
        # Nobody listens there: each event's first delivery attempt fails and waits to retry.
        url = f"http://127.0.0.1:{_closed_port()}/hook"
        await messenger.webhooks.create(bed.workspace.id, url)
        jobs = []
        for to, fallback in (
            ("+905551234567", None),
            ("+905550000011", ["sms_b"]),  # the first provider tried refuses it
            ("+905550000004", None),  # the report says expired
        ):
            body: dict[str, Any] = {"to": to, "body": "Merhaba", "provider": "sms_a"}
            if fallback:
                body["fallback"] = fallback
            jobs.append((await messenger.send(bed.principal, body)).job_id)
            await bed.settle(timedelta(seconds=1))
        await bed.settle(REPORT_DELAY)
        return Sent(bed.workspace.id, *jobs)
    finally:
        await messenger.aclose()


@pytest.fixture
def sent(database_url: str, master_keys: str) -> Sent:
    return asyncio.run(_send(database_url, master_keys))


# --------------------------------------------------------------------------- messages list


def test_messages_list_prints_the_workspaces_messages_newest_first(cli: Cli, sent: Sent) -> None:
    as_json, text, live = cli.many(
        [
            ["messages", "list", "--workspace", sent.workspace_id, "--test", "--json"],
            ["messages", "list", "--workspace", sent.workspace_id, "--test"],
            ["messages", "list", "--workspace", sent.workspace_id],
        ]
    )

    page = as_json.json()
    assert [r["job_id"] for r in page["data"]] == [sent.expired, sent.fell_back, sent.delivered]
    assert page["has_more"] is False
    assert [r["status"] for r in page["data"]] == ["expired", "delivered", "delivered"]
    lines = text.ok().stdout.splitlines()
    assert lines[0].split() == ["JOB", "ID", "CREATED", "STATUS", "PROVIDER", "TO", "ERROR"]
    assert [line.split()[0] for line in lines[1:]] == [
        sent.expired,
        sent.fell_back,
        sent.delivered,
    ]
    assert live.ok().stdout.strip() == "No messages."  # live mode has none


def test_messages_list_filters_and_pages(cli: Cli, sent: Sent) -> None:
    workspace = ["--workspace", sent.workspace_id, "--test"]
    expired, by_number, first_page = cli.many(
        [
            ["messages", "list", *workspace, "--status", "expired", "--json"],
            ["messages", "list", *workspace, "--to", "0555 123 45 67", "--json"],
            ["messages", "list", *workspace, "--limit", "2"],
        ]
    )

    assert [r["job_id"] for r in expired.json()["data"]] == [sent.expired]
    assert [r["job_id"] for r in by_number.json()["data"]] == [sent.delivered]
    assert first_page.ok().stdout.splitlines()[-1] == (
        f"More follow: --starting-after {sent.fell_back}"
    )
    rest = cli("messages", "list", *workspace, "--starting-after", sent.fell_back, "--json")
    assert [r["job_id"] for r in rest.json()["data"]] == [sent.delivered]


def test_messages_list_refuses_bad_values_as_the_rest_api_does(cli: Cli, sent: Sent) -> None:
    workspace = ["--workspace", sent.workspace_id, "--test"]
    limit, status, cursor, nobody = cli.many(
        [
            ["messages", "list", *workspace, "--limit", "1000"],
            ["messages", "list", *workspace, "--status", "lost"],
            ["messages", "list", *workspace, "--starting-after", "msg_nope"],
            ["messages", "list", "--workspace", "ws_nope"],
        ]
    )

    assert limit.returncode == 1
    assert refused_for(limit.stderr, "limit"), limit.stderr
    assert status.returncode == 1
    assert status.stderr.startswith("error: VALIDATION_ERROR: Invalid status: unknown status")
    assert cursor.returncode == 1
    assert cursor.stderr.startswith("error: MESSAGE_NOT_FOUND: starting_after:")
    assert nobody.returncode == 1
    assert "NOT_FOUND" in nobody.stderr
    assert "Traceback" not in limit.stderr + status.stderr + cursor.stderr + nobody.stderr


# --------------------------------------------------------------------------- messages show


def test_messages_show_tells_one_messages_story_in_order(cli: Cli, sent: Sent) -> None:
    as_json, text, by_id_alone = cli.many(
        [
            ["messages", "show", sent.fell_back, "--workspace", sent.workspace_id, "--json"],
            ["messages", "show", sent.fell_back, "--workspace", sent.workspace_id],
            ["messages", "show", sent.fell_back, "--json"],  # the id is enough
        ]
    )
    assert by_id_alone.json() == as_json.json()

    document = as_json.json()
    assert document["message"]["job_id"] == sent.fell_back
    events = [(e["event"], e["detail"].split(":")[0]) for e in document["timeline"]]
    assert events[:4] == [
        ("created", "to +905550000011 (sms)"),
        ("attempt 1", "sms_a"),
        ("attempt 2", "sms_b"),
        ("webhook", "message.sent to http"),
    ]
    assert ("report", "delivered (provider says DELIVERED)") in events
    assert ("final", "delivered") in events
    assert [d["event_type"] for d in document["webhook_deliveries"]] == [
        "message.sent",
        "message.delivered",
    ]
    assert all(d["status"] == "pending" for d in document["webhook_deliveries"])
    times = [e["at"] for e in document["timeline"]]
    assert times == sorted(times)
    shown = text.ok().stdout
    assert shown.splitlines()[0].startswith(f"{sent.fell_back}  delivered  sms_b  +905550000011")
    assert "sms_a: rejected, PROVIDER_REJECTED" in shown
    assert "message.delivered to http://127.0.0.1:" in shown
    assert "pending after 1 attempt," in shown  # English, never "1 attempt(s)"


def test_messages_show_of_an_unknown_job_is_message_not_found(cli: Cli, sent: Sent) -> None:
    for result in cli.many(
        [
            ["messages", "show", "msg_nope", "--workspace", sent.workspace_id],
            ["messages", "show", "msg_nope"],
        ]
    ):
        assert result.returncode == 1
        assert result.stderr.startswith("error: MESSAGE_NOT_FOUND:")


# --------------------------------------------------------------------------- stats


def test_stats_prints_the_scorecard_of_every_connection(cli: Cli, sent: Sent) -> None:
    as_json, text, live = cli.many(
        [
            ["stats", "--workspace", sent.workspace_id, "--test", "--json"],
            ["stats", "--workspace", sent.workspace_id, "--test", "--since", "2h"],
            ["stats", "--workspace", sent.workspace_id, "--json"],
        ]
    )

    rows = {row["provider"]: row for row in as_json.json()}
    assert len(rows) == 7  # every connection, busy or not
    sms_a = rows["sms_a"]
    assert (sms_a["sent"], sms_a["delivered"], sms_a["failed"], sms_a["expired"]) == (2, 1, 1, 1)
    assert sms_a["fallbacks"] == 1
    assert sms_a["delivery_rate"] == pytest.approx(1 / 3)
    assert (sms_a["p50_ms"], sms_a["p95_ms"]) == (2000, 2000)
    sms_b = rows["sms_b"]
    assert (sms_b["sent"], sms_b["delivered"], sms_b["delivery_rate"]) == (1, 1, 1.0)
    assert rows["sms_c"]["sent"] == 0 and rows["sms_c"]["delivery_rate"] is None
    assert sms_a["connection_id"].startswith("conn_")
    lines = text.ok().stdout.splitlines()
    assert lines[0].endswith("UTC, test mode:")
    assert lines[1].split()[:4] == ["CONNECTION", "PROVIDER", "SENT", "DELIVERED"]
    sms_a_line = next(line for line in lines if " sms_a " in line).split()
    assert sms_a_line[2:] == ["2", "1", "1", "1", "33.3%", "2.0", "s", "2.0", "s", "1"]
    assert all(row["sent"] == 0 for row in live.json())  # nothing was sent live


def test_stats_counts_only_the_window_asked_for(cli: Cli, sent: Sent) -> None:
    rows = cli("stats", "--workspace", sent.workspace_id, "--test", "--since", "30m", "--json")
    assert all(row["sent"] == 0 for row in rows.json())  # sent an hour ago


@pytest.mark.parametrize("since", ["3x", "0h", "-1h", "h", "24"])
def test_stats_refuses_a_duration_it_cannot_read(cli: Cli, since: str) -> None:
    result = cli("stats", "--workspace", "ws_x", "--since", since)
    assert result.returncode == 2
    assert "--since" in result.stderr
    assert "Traceback" not in result.stderr


# --------------------------------------------------------------------------- cheap help


@pytest.mark.parametrize(
    "argv", [["messages", "--help"], ["messages", "list", "--help"], ["stats", "--help"]]
)
def test_the_help_of_these_commands_imports_nothing_heavy(argv: list[str]) -> None:
    from test_cli_imports import heavy_modules_after

    code = f"""
import contextlib, io
from unified_messaging.__main__ import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
    main({argv!r})
"""
    assert heavy_modules_after(code) == []
