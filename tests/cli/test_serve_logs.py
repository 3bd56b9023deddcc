"""What ``serve`` writes to its log: one line per request, no forged lines, no secrets."""

from __future__ import annotations

import json
import logging
import re
import signal
import sys

import httpx
import pytest
from _cli_support import Cli
from test_cli_serve import serving, stop
from uvicorn.logging import AccessFormatter

from unified_messaging._observability.logsafe import SafeLogFilter, escape_controls, mask_secrets

ACCESS_LINE = re.compile(r'^INFO: +\S+ - "(GET|POST) .* HTTP/1\.1" \d{3}')


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("a\nb", "a\\nb"),
        ("a\r\nINFO: forged", "a\\r\\nINFO: forged"),
        ("\x1b[31mred\x07", "\\x1b[31mred\\x07"),
        ("tab\there", "tab\\there"),
        ("c1 \x85 del \x7f", "c1 \\x85 del \\x7f"),
        ("sep \u2028 \u2029", "sep \\u2028 \\u2029"),
        ("lone \ud800 surrogate", "lone \\ud800 surrogate"),
        ("plain ünicode ✓", "plain ünicode ✓"),
    ],
)
def test_control_characters_are_escaped(raw: str, shown: str) -> None:
    assert escape_controls(raw) == shown


def test_tracebacks_keep_their_own_line_breaks_only() -> None:
    assert escape_controls("line 1\nline 2\r\x1b", keep_newlines=True) == "line 1\nline 2\\r\\x1b"


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("/v1/dlr/conn_01ABC/s3cretTok-_", "/v1/dlr/conn_01ABC/***"),
        ("POST /v1/dlr/conn_x/tok?x=1 HTTP/1.1", "POST /v1/dlr/conn_x/***?x=1 HTTP/1.1"),
        ("/v1/health?api_key=abc&x=1", "/v1/health?api_key=***&x=1"),
        ("/p?APIKEY=a&token=b&access_token=c", "/p?APIKEY=***&token=***&access_token=***"),
        ("/p?hub.verify_token=v&hub.challenge=42", "/p?hub.verify_token=***&hub.challenge=42"),
        ("/p?secret=s&password=p&signature=g", "/p?secret=***&password=***&signature=***"),
        ("/p?key=k&api%5Fkey=k2", "/p?key=***&api%5Fkey=***"),
        ("/p?page=2&limit=10", "/p?page=2&limit=10"),
        ("key um_test_AbC123xyz in text", "key um_test_*** in text"),
        ("um_live_AbC123xyz", "um_live_***"),
        ("secret whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw=", "secret whsec_***"),
        ("Authorization: Bearer abc.def", "Authorization: Bearer ***"),
    ],
)
def test_secrets_are_masked(raw: str, shown: str) -> None:
    assert mask_secrets(raw) == shown


def record(name: str, msg: str, *args: object) -> logging.LogRecord:
    return logging.LogRecord(name, logging.INFO, __file__, 1, msg, args, None)


def test_an_access_record_keeps_its_shape_with_the_secrets_masked() -> None:
    access = record(
        "uvicorn.access",
        '%s - "%s %s HTTP/%s" %d',
        "127.0.0.1:5000",
        "GET",
        "/v1/dlr/conn_1/tok3n?api_key=um_test_Abc",
        "1.1",
        200,
    )

    assert SafeLogFilter().filter(access)
    line = AccessFormatter("%(client_addr)s - %(request_line)s %(status_code)s").format(access)

    assert line == "127.0.0.1:5000 - GET /v1/dlr/conn_1/***?api_key=*** HTTP/1.1 200 OK"


def test_any_other_record_is_rendered_escaped_and_masked_once() -> None:
    message = record(
        "unified_messaging.asgi", "unhandled error in %s %s", "GET", "/v1/dlr/conn_c/t\nX"
    )
    safe = SafeLogFilter()

    safe.filter(message)
    safe.filter(message)  # a second handler: no double escaping

    assert message.getMessage() == "unhandled error in GET /v1/dlr/conn_c/***"
    assert "\n" not in logging.Formatter().format(message)


def test_a_traceback_is_masked_and_keeps_its_lines() -> None:
    try:
        raise ValueError("bad token um_test_Secret123\r\nINFO: forged")
    except ValueError:
        failure = record("unified_messaging.asgi", "internal error")
        failure.exc_info = sys.exc_info()

    SafeLogFilter().filter(failure)
    text = logging.Formatter().format(failure)

    assert text.startswith("internal error\n  Traceback (most recent call last):\n")
    assert "um_test_Secret123" not in text
    assert "\n  ValueError: bad token um_test_***\\r\n  INFO: forged" in text
    assert all(line.startswith("  ") for line in text.splitlines()[1:])


def mistyped(dlr_path: str) -> list[str]:
    """``/v1/dlr/{connection}/{token}`` slightly wrong: each one a 404 with the token in it."""
    _, _, connection, token = dlr_path.strip("/").split("/")
    return [
        f"/v1/dlr//{connection}/{token}",
        f"/v1/DLR/{connection}/{token}",
        f"/v1/Dlr/{connection}/{token}/extra",
        f"/dlr/{connection}/{token}",
        f"/v1/dlr/{token}",
        f"/api/v1/dlr/{connection}/{token}?x=1",
    ]


def test_serve_logs_one_line_per_request_without_secrets_or_forged_lines(cli: Cli) -> None:
    with serving(cli, "--demo", "--json") as proc:
        assert proc.stdout is not None
        demo = json.loads(proc.stdout.readline())
        url, api_key = demo["url"], demo["api_key"]
        [connection] = [
            c
            for c in cli(
                "connections", "list", "--workspace", demo["workspace_id"], "--json"
            ).json()
            if c["is_default"]
        ]
        dlr_path = connection["dlr_path"]
        token = dlr_path.rsplit("/", 1)[1]
        wrong_token = "x" + token[1:] if token[0] != "x" else "y" + token[1:]
        auth = {"Authorization": f"Bearer {api_key}"}
        requests = [
            ("POST", "/v1/messages", auth, {"to": "+905551234567", "body": "Merhaba!"}),
            ("POST", "/v1/messages", auth, {"to": "+905551234568", "body": "Selam!"}),
            ("POST", dlr_path, {}, {"status": "delivered"}),
            ("GET", dlr_path, {}, None),
            ("POST", dlr_path.replace(token, wrong_token), {}, {"status": "delivered"}),
            ("GET", f"{dlr_path}?hub.mode=subscribe&hub.verify_token=hubsecret1", {}, None),
            ("GET", f"/v1/health?api_key={api_key}", {}, None),
            ("GET", f"/v1/messages?api_key={api_key}&token=qsecret2&limit=1", {}, None),
            ("GET", "/v1/messages/job%0AINFO:%20%20%20%20forged%0D%0Aline", auth, None),
            ("GET", "/nowhere%0D%0AINFO:%20forged%1B[31m", {}, None),
            # Mistyped DLR paths (404s) carry the token as surely.
            *(("POST", wrong, {}, {"status": "delivered"}) for wrong in mistyped(dlr_path)),
        ]  # fmt: skip
        with httpx.Client(base_url=url, timeout=10) as client:
            statuses = [
                client.request(method, path, headers=headers, json=body).status_code
                for method, path, headers, body in requests
            ]
        rest, stderr = stop(proc, signal.SIGTERM)

    assert statuses[:2] == [201, 201]
    assert statuses[4] == 404  # the wrong token
    logged = rest + stderr
    for secret in (api_key, token, wrong_token, "hubsecret1", "qsecret2"):
        assert secret not in logged
    access_lines = [line for line in stderr.splitlines() if ACCESS_LINE.match(line)]
    assert len(access_lines) == len(requests), access_lines
    # "forged" only ever inside the request line that carried it, never at a line's start.
    forged = [line for line in stderr.splitlines() if "forged" in line]
    assert len(forged) == 2, forged
    assert all(ACCESS_LINE.match(line) for line in forged)
    assert "\x1b" not in stderr
    assert f"/v1/dlr/{connection['id']}/***" in stderr
