"""A live one-time code never leaves the handset's message (D34), checked by grepping what
``unified-messaging serve`` leaves behind: its log lines (access log and application log,
text and JSON, at debug), the live status record and the list, and every webhook its worker
delivered. The code is 10 digits, so a coincidence (a timestamp, an id) cannot pass for it.

The live provider is a local NetGSM fake on a loopback socket (a thread of this process);
the webhook receiver too. Everything is set up with the command line, as a user would."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
import uvicorn
from _cli_support import Cli
from fakes.netgsm import NetgsmFake
from test_cli_serve import serving, stop

TO = "+905321234567"
CODE = re.compile(r"(?<![0-9])[0-9]{10}(?![0-9])")


class _Fake:
    """The NetGSM fake under uvicorn in a thread of its own."""

    def __init__(self) -> None:
        self.netgsm = NetgsmFake()
        config = uvicorn.Config(self.netgsm.app, host="127.0.0.1", port=0, log_level="error",
                                lifespan="off")  # fmt: skip
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=lambda: asyncio.run(self._server.serve()))
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            assert time.monotonic() < deadline, "the fake did not start"
            time.sleep(0.01)
        port = self._server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"

    def close(self) -> None:
        self._server.should_exit = True
        self._thread.join(10)


class _Receiver:
    def __init__(self) -> None:
        bodies: list[bytes] = []
        self.bodies = bodies

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                bodies.append(self.rfile.read(int(self.headers.get("content-length", 0))))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                return None

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/hooks"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def fake() -> Iterator[_Fake]:
    running = _Fake()
    try:
        yield running
    finally:
        running.close()


@pytest.fixture
def receiver() -> Iterator[_Receiver]:
    running = _Receiver()
    try:
        yield running
    finally:
        running.close()


def _provision(cli: Cli, fake: _Fake, receiver: _Receiver) -> str:
    workspace = cli("workspaces", "create", "secrecy", "--json").ok().json()["id"]
    cli(
        "connections", "add", "--workspace", workspace, "sms_a", "--default-sender", "ACME",
        "--credential", f"usercode={fake.netgsm.usercode}",
        "--credential", f"password={fake.netgsm.password}",
        "--base-url", fake.url, "--json",
    ).ok()  # fmt: skip
    cli("webhooks", "add", "--workspace", workspace, receiver.url, "--json",
        UM_WEBHOOK_ALLOW_PRIVATE="1").ok()  # fmt: skip
    key: str = cli("keys", "create", "--workspace", workspace, "--json").ok().json()["api_key"]
    return key


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_a_live_code_is_in_no_log_line_status_record_or_webhook(
    cli: Cli, fake: _Fake, receiver: _Receiver, log_format: str
) -> None:
    key = _provision(cli, fake, receiver)
    headers = {"Authorization": f"Bearer {key}"}
    cli.env["UM_WEBHOOK_ALLOW_PRIVATE"] = "1"
    with serving(cli, "--json", "--log-level", "debug", "--log-format", log_format) as proc:
        assert proc.stdout is not None
        url = json.loads(proc.stdout.readline())["url"]
        with httpx.Client(base_url=url, headers=headers, timeout=10) as http:
            started = http.post("/v1/verifications", json={"to": TO, "code_length": 10})
            assert started.status_code == 201, started.text
            sent = fake.netgsm.sends[-1].json
            assert isinstance(sent, dict)
            found = CODE.search(sent["messages"][0]["msg"])
            assert found is not None
            code = found[0]
            verification_id = started.json()["id"]
            other = "1" * 10 if code != "1" * 10 else "2" * 10
            wrong = http.post(f"/v1/verifications/{verification_id}/check", json={"code": other})
            right = http.post(f"/v1/verifications/{verification_id}/check", json={"code": code})
            job_id = started.json()["sends"][0]["job_id"]
            record = http.get(f"/v1/messages/{job_id}")
            listed = http.get("/v1/messages")
            shown = http.get(f"/v1/verifications/{verification_id}")
            deadline = time.monotonic() + 20
            while not any(b"verification.approved" in b for b in receiver.bodies):
                assert time.monotonic() < deadline, "no verification.approved webhook"
                time.sleep(0.1)
        out, err = stop(proc, signal.SIGTERM)

    assert (wrong.json()["status"], right.json()["status"]) == ("pending", "approved")
    assert record.json()["body"] == "Doğrulama kodunuz: ******. Kimseyle paylaşmayın."
    for answer in (started, wrong, right, record, listed, shown):
        assert code not in answer.text
    assert any(b"message.sent" in b for b in receiver.bodies)
    for body in receiver.bodies:
        assert code.encode() not in body
    logs = out + err
    assert f"POST /v1/verifications/{verification_id}/check" in logs  # the access log is there
    assert code not in logs
