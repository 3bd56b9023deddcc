"""``serve``: a real uvicorn process, reached over loopback, stopped by a signal."""

from __future__ import annotations

import json
import re
import shlex
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import httpx
from _cli_support import Cli

STOP_WITHIN = 10  # seconds: shutdown is graceful, but nothing here keeps it busy


@contextmanager
def serving(
    cli: Cli, *args: str, preexec_fn: Callable[[], None] | None = None
) -> Iterator[subprocess.Popen[str]]:
    """``serve`` in the background, killed by a watchdog if it ever hangs; ``preexec_fn``
    runs in the child before it starts (e.g. to lower its resource limits)."""
    proc = subprocess.Popen(  # noqa: S603 - our own interpreter and fixed arguments
        [sys.executable, "-m", "unified_messaging", "serve", "--port", "0", *args],
        cwd=cli.cwd,
        env=cli.environ(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        preexec_fn=preexec_fn,
    )
    watchdog = threading.Timer(60, proc.kill)
    watchdog.start()
    try:
        yield proc
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def stop(proc: subprocess.Popen[str], sig: signal.Signals) -> tuple[str, str]:
    """Signal ``proc`` and return the rest of its stdout, and its stderr."""
    proc.send_signal(sig)
    return proc.communicate(timeout=STOP_WITHIN)


def send(url: str, api_key: str) -> httpx.Response:
    return httpx.post(
        f"{url}/v1/messages",
        headers={"Authorization": f"Bearer {api_key}"},
        json={"to": "+905551234567", "body": "Merhaba!"},
        timeout=10,
    )


def test_serve_demo_json_prints_one_line_then_serves_until_sigterm(cli: Cli) -> None:
    with serving(cli, "--demo", "--json") as proc:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        demo = json.loads(line)
        response = send(demo["url"], demo["api_key"])
        health = httpx.get(f"{demo['url']}/v1/health", timeout=10)
        rest, stderr = stop(proc, signal.SIGTERM)

        assert set(demo) == {"workspace_id", "api_key", "url", "dashboard_login_url"}
        assert demo["api_key"].startswith("um_test_")
        assert response.status_code == 201, response.text
        assert response.json()["status"] == "sent"
        assert health.status_code == 200
        assert proc.returncode == 0, stderr
        assert "Application shutdown complete" in stderr
        assert "POST /v1/messages" in stderr  # access log on stderr: stdout stays one line
        assert rest == ""


def test_serve_demo_text_prints_a_ready_curl_line_and_stops_on_sigint(cli: Cli) -> None:
    with serving(cli, "--demo") as proc:
        assert proc.stdout is not None
        lines = iter(proc.stdout.readline, "")
        curl = next(line for line in lines if line.strip().startswith("curl "))
        words = shlex.split(curl)
        url = words[words.index("-X") + 2].removesuffix("/v1/messages")
        api_key = words[words.index("-H") + 1].removeprefix("Authorization: Bearer ")
        response = send(url, api_key)
        _, stderr = stop(proc, signal.SIGINT)

        assert json.loads(words[words.index("-d") + 1])["to"] == "+905551234567"
        assert response.status_code == 201, response.text
        assert proc.returncode == 0, stderr
        assert "Traceback" not in stderr


def test_serve_reports_a_busy_port_as_an_error(cli: Cli) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = cli("serve", "--port", str(port))

    assert result.returncode == 1
    assert re.search(rf"^error: cannot listen on 127\.0\.0\.1:{port}: ", result.stderr, re.M)


def test_serve_demo_again_takes_up_its_workspace_with_a_new_key(cli: Cli) -> None:
    # Every scripts/demo run used to add a workspace to the database.
    runs = []
    for _ in range(2):
        with serving(cli, "--demo", "--json") as proc:
            assert proc.stdout is not None
            demo = json.loads(proc.stdout.readline())
            runs.append((demo, send(demo["url"], demo["api_key"]).status_code))
            stop(proc, signal.SIGTERM)

    (first, sent_first), (second, sent_second) = runs
    assert second["workspace_id"] == first["workspace_id"]
    assert second["api_key"] != first["api_key"]  # keys are shown once: a new one to show
    assert (sent_first, sent_second) == (201, 201)  # both keys work
    names = [w["name"] for w in cli("workspaces", "list", "--json").json()]
    assert names == ["demo"]
    audit = cli("audit", "list", "--action", "workspace.create", "--json").json()
    assert [e["actor"] for e in audit["data"]] == ["cli"]  # serve --demo's set-up is a CLI change
    # The templates are saved once: a restart that changes nothing writes no audit row.
    saved = cli("audit", "list", "--action", "template.set", "--json").json()["data"]
    assert sorted(e["target"] for e in saved) == ["greet", "order_shipped"]
    # Both keys are called what they are: the demo's (not "pytest", the test bed's name).
    keys = cli("keys", "list", "--workspace", first["workspace_id"], "--json").json()
    assert [k["name"] for k in keys] == ["demo", "demo"]
