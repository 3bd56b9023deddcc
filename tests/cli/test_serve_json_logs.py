"""``serve --log-format json`` and ``worker --log-format json``: one JSON object per line, with
the request, job and workspace a line is about, and never a secret, a message body or a full
phone number (unless ``--log-full-numbers`` asks for them)."""

from __future__ import annotations

import json
import logging
import signal
from typing import Any

import httpx
import pytest
from _cli_support import Cli
from test_cli_serve import serving, stop
from test_serve_logs import mistyped

from unified_messaging._observability.json_log import JsonLogFormatter
from unified_messaging._observability.log_context import (
    LogContextFilter,
    bind_log_context,
    log_context,
)
from unified_messaging._observability.logsafe import SafeLogFilter, mask_numbers

NUMBERS = ("+905321112233", "+905321112244")
BODY = "Gizli kod 908172 icin tesekkurler"
SECRET_REQUEST_IDS = (
    "um_live_0123456789abcdefghijABCDEFGHIJ",
    "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    "sk-Abc123xyz789Abc123xyz789Abc123xyz789",
)


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("to=%2B905321112233&limit=2", "to=%2B********2233&limit=2"),
        ("to +905321112233.", "to +********2233."),
        ("905321112233", "********2233"),
        ("+4915112345678 abroad", "+*********5678 abroad"),
        ("05321112233", "*******2233"),
        ("5321112233", "******2233"),
        ("00902121112233", "**********2233"),
        # Not phone numbers: a Unix time (s and ms), a bare run that is not Turkish.
        ("/v1/messages?ts=1764630000&limit=2", "/v1/messages?ts=1764630000&limit=2"),
        ("at 1764630000123", "at 1764630000123"),
        ("chat 1234567890123", "chat 1234567890123"),
        ("msg_01M89B98XWJJ85X3N4VK8WHKZK", "msg_01M89B98XWJJ85X3N4VK8WHKZK"),
        ("2026-11-25 12:44:59.123", "2026-11-25 12:44:59.123"),
        ("port 8000, 123456789", "port 8000, 123456789"),
    ],
)
def test_phone_numbers_keep_only_their_last_four_digits(raw: str, shown: str) -> None:
    assert mask_numbers(raw) == shown


def formatted(record: logging.LogRecord, *, full_numbers: bool = False) -> dict[str, Any]:
    LogContextFilter().filter(record)
    SafeLogFilter(full_numbers=full_numbers).filter(record)
    line = JsonLogFormatter().format(record)
    assert "\n" not in line
    document: dict[str, Any] = json.loads(line)
    return document


def test_a_line_carries_the_bound_context_and_its_own_fields_win() -> None:
    record = logging.LogRecord("unified_messaging.x", logging.WARNING, __file__, 1,
                                   "sent to %s", ("+905321112233",), None)  # fmt: skip
    record.provider = "sms_b"
    bind_log_context(request_id="req_1", workspace_id="ws_1", provider="sms_a")
    try:
        line = formatted(record)
    finally:
        bind_log_context(request_id="-", workspace_id="-", provider="-")

    assert line["message"] == "sent to +********2233"
    assert (line["level"], line["logger"]) == ("warning", "unified_messaging.x")
    fields = (line["request_id"], line["workspace_id"], line["provider"])
    assert fields == ("req_1", "ws_1", "sms_b")
    assert line["time"].endswith("+00:00")
    with pytest.raises(ValueError, match="not log context fields"):
        bind_log_context(password="x")
    assert "password" not in log_context()


def test_full_numbers_is_a_switch_and_secrets_stay_masked_with_it() -> None:
    args = ("+905321112233", "um_live_abc123")
    record = logging.LogRecord("unified_messaging.x", logging.INFO, __file__, 1,
                               "to %s key %s", args, None)  # fmt: skip
    line = formatted(record, full_numbers=True)
    assert line["message"] == "to +905321112233 key um_live_***"


def test_an_exception_is_one_field_of_one_line() -> None:
    try:
        raise ValueError("bad +905321112233\nINFO: forged")
    except ValueError:
        import sys

        record = logging.LogRecord("unified_messaging.x", logging.ERROR, __file__, 1,
                                   "failed", None, sys.exc_info())  # fmt: skip
    line = formatted(record)
    assert "ValueError: bad +********2233" in line["exception"]
    assert "+905321112233" not in json.dumps(line)


def lines_of(stderr: str) -> list[dict[str, Any]]:
    parsed = []
    for raw in stderr.splitlines():
        parsed.append(json.loads(raw))  # every line is one JSON object, or this fails
    return parsed


def test_serve_json_logs_a_full_run_without_secrets_bodies_or_numbers(cli: Cli) -> None:
    with serving(cli, "--demo", "--json", "--log-format", "json") as proc:
        assert proc.stdout is not None
        demo = json.loads(proc.stdout.readline())
        url, api_key = demo["url"], demo["api_key"]
        auth = {"Authorization": f"Bearer {api_key}"}
        with httpx.Client(base_url=url, timeout=10, headers=auth) as client:
            sent = client.post("/v1/messages", json={"to": NUMBERS[0], "body": BODY},
                               headers={"X-Request-ID": "req-from-client-1"})  # fmt: skip
            bulk = client.post(
                "/v1/messages/bulk",
                json={"items": [{"to": n, "body": BODY} for n in NUMBERS]},
            )
            listed = client.get("/v1/messages", params={"to": NUMBERS[1], "limit": 5})
            refused = client.get("/v1/messages", headers={"Authorization": "Bearer um_test_nope"})
            # Secrets a client put in X-Request-ID, and mistyped DLR paths.
            echoed = [
                client.get("/v1/health", headers={"X-Request-ID": rid}).headers["x-request-id"]
                for rid in SECRET_REQUEST_IDS
            ]
            connection = cli("connections", "list", "--workspace", demo["workspace_id"],
                             "--json").json()[0]  # fmt: skip
            wrong = [client.post(path, json={}).status_code
                     for path in mistyped(connection["dlr_path"])]  # fmt: skip
        rest, stderr = stop(proc, signal.SIGTERM)

    assert (sent.status_code, bulk.status_code, listed.status_code) == (201, 201, 200)
    assert refused.status_code == 401
    assert wrong == [404] * len(wrong)
    assert all(rid.startswith("req_") for rid in echoed)  # replaced, not echoed
    lines = lines_of(stderr)
    access = [line for line in lines if line["logger"] == "uvicorn.access"]
    assert [(a["method"], a["status"]) for a in access[:4]] == [
        ("POST", 201), ("POST", 201), ("GET", 200), ("GET", 401)
    ]  # fmt: skip
    assert [a["request_id"] for a in access[4:7]] == echoed
    token = connection["dlr_path"].rsplit("/", 1)[1]
    first = access[0]
    assert first["request_id"] == "req-from-client-1" == sent.headers["x-request-id"]
    assert first["workspace_id"] == demo["workspace_id"]
    assert access[2]["request_id"] == listed.headers["x-request-id"]
    assert "workspace_id" not in access[3]  # the key was refused: no workspace is known
    logged = rest + stderr
    for secret in (api_key, "um_test_nope", BODY, "908172", *NUMBERS, NUMBERS[1][1:], token,
                   *SECRET_REQUEST_IDS):  # fmt: skip
        assert secret not in logged, secret
    assert "%2B********2244" in access[2]["path"]


def test_worker_json_logs_are_json_lines(cli: Cli) -> None:
    done = cli("worker", "--once", "--log-format", "json", "--json").ok()
    assert json.loads(done.stdout)["processed"] >= 0
    for raw in done.stderr.splitlines():
        json.loads(raw)


def test_the_development_key_warning_is_a_json_line_too(cli: Cli) -> None:
    """Without UM_MASTER_KEYS the CLI warns about its development key file before the
    server's log set-up; in JSON mode that warning is a JSON line as well."""
    done = cli("worker", "--once", "--log-format", "json", UM_MASTER_KEYS="").ok()
    [warning] = [json.loads(raw) for raw in done.stderr.splitlines()]
    assert warning["level"] == "warning"
    assert "development master key file" in warning["message"]


def test_a_bad_log_format_is_refused(cli: Cli) -> None:
    refused = cli("serve", "--log-format", "xml")
    assert refused.returncode == 2
    assert "--log-format" in refused.stderr and "json" in refused.stderr
