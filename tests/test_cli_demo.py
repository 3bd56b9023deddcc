"""The ``unified-messaging`` command line: ``demo``, ``demo --json``, ``--version``, errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from unified_messaging import __version__
from unified_messaging._demo import run_demo
from unified_messaging.cli import main

ROOT = Path(__file__).resolve().parent.parent

STEPS = [
    "setup",
    "sms",
    "chatbot",
    "template",
    "bulk",
    "fallback",
    "iys_refused",
    "timeout",
    "get_message",
]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - our own interpreter and fixed arguments
        [sys.executable, "-m", "unified_messaging", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def json_steps() -> dict[str, Any]:
    result = cli("demo", "--json")
    assert result.returncode == 0, result.stderr
    documents = [json.loads(line) for line in result.stdout.splitlines()]
    assert all(set(document) == {"step", "result"} for document in documents)
    return {document["step"]: document["result"] for document in documents}


def test_demo_exits_zero_and_reads_as_a_tour() -> None:
    result = cli("demo")

    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert "a test key" in result.stdout
    assert "try 3     sms_c accepted" in result.stdout
    assert "IYS_CONSENT_MISSING" in result.stdout
    assert "502 PROVIDER_UNAVAILABLE" in result.stdout


def test_demo_json_has_one_document_per_step_in_order(json_steps: dict[str, Any]) -> None:
    assert list(json_steps) == STEPS


def test_demo_json_single_sms_reports_encoding_and_segments(json_steps: dict[str, Any]) -> None:
    sms = json_steps["sms"]

    assert sms["status"] == "sent"
    assert sms["encoding"] == "gsm7_turkish"
    assert sms["segments"] == 1


def test_demo_json_fallback_tries_three_providers_until_sms_c_accepts(
    json_steps: dict[str, Any],
) -> None:
    fallback = json_steps["fallback"]

    assert [(a["provider"], a["status"]) for a in fallback["attempts"]] == [
        ("sms_a", "rejected"),
        ("sms_b", "rejected"),
        ("sms_c", "accepted"),
    ]
    assert fallback["provider"] == "sms_c"
    assert fallback["status"] == "sent"


def test_demo_json_bulk_fails_only_the_bad_item(json_steps: dict[str, Any]) -> None:
    bulk = json_steps["bulk"]

    assert (bulk["total"], bulk["sent"], bulk["failed"]) == (5, 4, 1)
    failed = [r for r in bulk["results"] if r["status"] == "failed"]
    assert [r["error"]["code"] for r in failed] == ["INVALID_RECIPIENT"]
    assert all(r["job_id"] for r in bulk["results"])


def test_demo_json_iys_refusal_is_a_failed_send(json_steps: dict[str, Any]) -> None:
    refused = json_steps["iys_refused"]

    assert refused["status"] == "failed"
    assert refused["error"]["code"] == "IYS_CONSENT_MISSING"


def test_demo_json_timeout_is_502_with_a_job_id_that_get_explains(
    json_steps: dict[str, Any],
) -> None:
    timeout = json_steps["timeout"]

    assert timeout["http_status"] == 502
    assert timeout["error"]["code"] == "PROVIDER_UNAVAILABLE"
    assert timeout["error"]["job_id"].startswith("msg_")
    assert timeout["record"]["job_id"] == timeout["error"]["job_id"]
    assert timeout["record"]["status"] == "failed"


def test_demo_json_get_message_is_a_full_status_record(json_steps: dict[str, Any]) -> None:
    record = json_steps["get_message"]

    assert record["job_id"] == json_steps["fallback"]["job_id"]
    assert record["livemode"] is False
    assert len(record["attempts"]) == 3


def test_demo_prints_no_full_api_key(json_steps: dict[str, Any]) -> None:
    prefix = json_steps["setup"]["api_key_prefix"]

    assert prefix.startswith("um_test_")
    assert len(prefix) < 16


def test_version_prints_the_version() -> None:
    result = cli("--version")

    assert result.returncode == 0
    assert result.stdout.strip() == f"unified-messaging {__version__}"


def test_unknown_subcommand_exits_2() -> None:
    result = cli("no-such-command")

    assert result.returncode == 2
    assert "invalid choice" in result.stderr


def test_no_subcommand_exits_2_with_usage(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main([])

    assert exited.value.code == 2
    assert "usage: unified-messaging" in capsys.readouterr().err


async def test_run_demo_can_be_called_directly() -> None:
    written: list[str] = []

    steps = await run_demo(written.append, as_json=True)

    assert [step.step for step in steps] == STEPS
    assert [json.loads(line)["step"] for line in written] == STEPS
