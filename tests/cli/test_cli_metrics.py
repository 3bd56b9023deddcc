"""``serve`` and ``worker`` with metrics (D30): real processes, scraped over loopback.

Off unless configured (404); ``--metrics-token``/``UM_METRICS_TOKEN`` guards ``/metrics`` on
the API address (401 without it); ``--metrics-bind`` serves it on a listener of its own; in
prometheus_client's multi-process mode a scrape of one process sums every process's values.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from _cli_support import Cli
from prometheus_client.parser import text_string_to_metric_families

TOKEN = "metrics-token-0123456789abcdef"
NUMBER = "+905551234567"
BODY = "Gizli mesaj: kod 4242"
STOP_WITHIN = 15
_METRICS_LINE = re.compile(r"metrics on (http://\S+/metrics)")


@dataclass
class Served:
    proc: subprocess.Popen[str]
    url: str
    started: dict[str, Any]
    metrics_url: str | None

    def stop(self) -> str:
        """SIGTERM, then its stderr (what was not read yet)."""
        self.proc.send_signal(signal.SIGTERM)
        _, stderr = self.proc.communicate(timeout=STOP_WITHIN)
        return stderr


@contextmanager
def serving(cli: Cli, *args: str, **env: str) -> Iterator[Served]:
    """``serve --json`` in the background; its URL, its first line, and the metrics listener's
    URL when it logged one."""
    proc = subprocess.Popen(  # noqa: S603 - our own interpreter and fixed arguments
        [sys.executable, "-m", "unified_messaging", "serve", "--port", "0", "--json", *args],
        cwd=cli.cwd,
        env=cli.environ(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
    )
    watchdog = threading.Timer(90, proc.kill)
    watchdog.start()
    try:
        assert proc.stdout is not None and proc.stderr is not None
        line = proc.stdout.readline()
        if not line:
            raise AssertionError(f"serve did not start: {proc.communicate()[1]}")
        started = json.loads(line)
        metrics_url = None
        if "--metrics-bind" in args:  # logged before the first line is printed
            for log_line in iter(proc.stderr.readline, ""):
                found = _METRICS_LINE.search(log_line)
                if found:
                    metrics_url = found.group(1)
                    break
        yield Served(proc, started["url"], started, metrics_url)
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def send(url: str, api_key: str, to: str = NUMBER, **extra: object) -> httpx.Response:
    return httpx.post(
        f"{url}/v1/messages",
        headers={"Authorization": f"Bearer {api_key}"},
        json={"to": to, "body": BODY, **extra},
        timeout=10,
    )


def scrape(url: str, token: str | None = TOKEN) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    return httpx.get(url, headers=headers, timeout=10)


def value(text: str, name: str, **labels: str) -> float | None:
    for family in text_string_to_metric_families(text):
        for found in family.samples:
            if found.name == name and found.labels == labels:
                return found.value
    return None


def setup_workspace(cli: Cli) -> tuple[str, str, list[str]]:
    """A workspace with a test key, a connection holding credentials and a webhook endpoint:
    the secrets a scrape must never show."""
    workspace = cli("workspaces", "create", "Acme", "--json").json()["id"]
    secrets = ["netgsm-user-7781", "netgsm-pass-Q9x!z"]
    cli("connections", "add", "sms_a", "--workspace", workspace, "--default-sender", "ACME",
        "--credential", f"usercode={secrets[0]}", "--credential", f"password={secrets[1]}",
        "--breaker-min-calls", "3").ok()  # fmt: skip
    cli("connections", "add", "sms_b", "--workspace", workspace, "--default-sender", "ACME").ok()
    hook = cli("webhooks", "add", "--workspace", workspace, "https://hooks.example.com/um",
               "--json").json()  # fmt: skip
    key = cli("keys", "create", "--workspace", workspace, "--test", "--json").json()
    secrets.append(hook["secret"])
    return workspace, key["api_key"], secrets


def test_serve_with_a_token_counts_sends_and_guards_the_scrape(cli: Cli) -> None:
    workspace, api_key, secrets = setup_workspace(cli)
    with serving(cli, UM_METRICS_TOKEN=TOKEN) as served:  # the token kept off the command line
        sent = send(served.url, api_key)
        fell_back = send(served.url, api_key, "+905550000011", fallback=["sms_b"])
        missing = scrape(f"{served.url}/metrics", token=None)
        wrong = scrape(f"{served.url}/metrics", token=TOKEN[:-1] + "X")
        right = scrape(f"{served.url}/metrics")
        stderr = served.stop()

    assert (sent.status_code, fell_back.status_code) == (201, 201), fell_back.text
    for refused in (missing, wrong):
        assert refused.status_code == 401
        assert refused.json()["error"]["code"] == "UNAUTHORIZED"
    assert right.status_code == 200, right.text
    text = right.text
    assert value(text, "um_messages_total", provider="sms_a", channel="sms", outcome="sent",
                 mode="test") == 1  # fmt: skip
    assert value(text, "um_messages_total", provider="sms_b", channel="sms", outcome="sent",
                 mode="test") == 1  # fmt: skip
    assert value(text, "um_fallbacks_total", from_provider="sms_a", to_provider="sms_b",
                 mode="test") == 1  # fmt: skip
    assert value(text, "um_attempts_total", provider="sms_a", result="rejected",
                 mode="test") == 1  # fmt: skip
    assert value(text, "um_store_up") == 1
    assert value(text, "um_work_items", kind="webhook", state="due") is not None
    assert value(text, "process_cpu_seconds_total") is not None
    for secret in (TOKEN, api_key, *secrets, NUMBER, NUMBER[-10:], BODY, workspace):
        assert secret not in text, secret
    assert TOKEN not in stderr  # nor in the logs


def test_serve_token_flag_and_workspace_labels(cli: Cli) -> None:
    workspace, api_key, _ = setup_workspace(cli)
    with serving(cli, "--metrics-token", TOKEN, "--metrics-workspace-labels") as served:
        send(served.url, api_key)
        text = scrape(f"{served.url}/metrics").text

    assert value(text, "um_messages_total", provider="sms_a", channel="sms", outcome="sent",
                 mode="test", workspace=workspace) == 1  # fmt: skip


def test_serve_without_metrics_has_no_metrics_route(cli: Cli) -> None:
    with serving(cli, "--demo") as served:
        answer = scrape(f"{served.url}/metrics")

    assert answer.status_code == 404
    assert answer.json()["error"]["code"] == "NOT_FOUND"


def test_serve_metrics_bind_serves_them_apart(cli: Cli) -> None:
    with serving(cli, "--demo", "--metrics-bind", "127.0.0.1:0") as served:
        assert served.metrics_url is not None
        send(served.url, served.started["api_key"])
        apart = scrape(served.metrics_url, token=None)
        on_api = scrape(f"{served.url}/metrics")
        stderr = served.stop()

    assert apart.status_code == 200
    assert value(apart.text, "um_messages_total", provider="sms_a", channel="sms",
                 outcome="sent", mode="test") == 1  # fmt: skip
    assert on_api.status_code == 404
    assert served.proc.returncode == 0, stderr
    assert "Traceback" not in stderr


def test_worker_serves_its_metrics_on_a_bind(cli: Cli, tmp_path: Path) -> None:
    with serving(cli, "--demo", "--no-worker") as served:
        send(served.url, served.started["api_key"])
        argv = ["worker", "--metrics-bind", "127.0.0.1:0", "--metrics-token", TOKEN]
        worker = subprocess.Popen(  # noqa: S603 - our own interpreter and fixed arguments
            [sys.executable, "-m", "unified_messaging", *argv],
            cwd=cli.cwd,
            env=cli.environ(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )
        try:
            assert worker.stderr is not None
            url = announced = None
            for line in iter(worker.stderr.readline, ""):
                if found := _METRICS_LINE.search(line):
                    url, announced = found.group(1), line
                    break
            assert url is not None
            refused = scrape(url, token=None)
            # The report's counter and its delivery time are two observations: wait for the
            # one asserted below, so a scrape between them cannot miss it.
            text = wait_for(url, "um_delivery_seconds_count", provider="sms_a",
                            status="delivered", mode="test")  # fmt: skip
        finally:
            worker.send_signal(signal.SIGTERM)
            _, stderr = worker.communicate(timeout=STOP_WITHIN)

    assert refused.status_code == 401
    assert value(text, "um_delivery_seconds_count", provider="sms_a", status="delivered",
                 mode="test") == 1  # fmt: skip
    assert worker.returncode == 0, stderr
    # Start-up and shut-down are news, not warnings.
    assert announced is not None
    assert announced.startswith("INFO:"), announced
    assert re.search(r"^INFO: +worker \S+ stopped$", stderr, re.MULTILINE), stderr
    assert "WARNING" not in stderr


def wait_for(url: str, name: str, **labels: str) -> str:
    """Scrape until ``name{labels}`` shows (the worker handles the report when it is due:
    the simulator's default delay, two seconds), at most for the watchdog's time."""
    import time

    deadline = time.monotonic() + 45
    while True:
        text = scrape(url).text
        if value(text, name, **labels) or time.monotonic() > deadline:
            return text
        time.sleep(0.2)


def test_bad_metrics_options_are_usage_errors_that_never_echo_the_token(cli: Cli) -> None:
    short, spaced = "short-token", "a token with spaces in it"
    results = cli.many(
        [
            ["serve", "--metrics-token", short],
            ["serve", "--metrics-token", spaced],
            ["serve", "--metrics-bind", "nowhere"],
            ["serve", "--metrics-bind", "127.0.0.1:99999"],
            ["serve", "--metrics-workspace-labels"],
            ["worker", "--metrics-token", TOKEN],
        ]
    )
    from_env = cli("serve", UM_METRICS_TOKEN=short)

    for result in (*results, from_env):
        assert result.returncode == 2, result.output
        assert short not in result.output
        assert spaced not in result.output
        assert TOKEN not in result.output
    assert "16 to 256 characters" in results[0].stderr
    assert "UM_METRICS_TOKEN" in from_env.stderr
    assert "HOST:PORT" in results[2].stderr
    assert "--metrics-bind" in results[5].stderr


def test_multiprocess_mode_sums_every_process(cli: Cli, tmp_path: Path) -> None:
    shared = tmp_path / "prometheus"
    shared.mkdir()
    env = {"PROMETHEUS_MULTIPROC_DIR": str(shared)}
    with (
        serving(cli, "--demo", "--no-worker", "--metrics-bind", "127.0.0.1:0", **env) as first,
        serving(cli, "--no-worker", "--metrics-token", TOKEN, **env) as second,
    ):
        api_key = first.started["api_key"]
        for url in (first.url, second.url, second.url):
            assert send(url, api_key).status_code == 201
        assert first.metrics_url is not None
        from_first = scrape(first.metrics_url, token=None).text
        from_second = scrape(f"{second.url}/metrics").text

    labels = {"provider": "sms_a", "channel": "sms", "outcome": "sent", "mode": "test"}
    assert value(from_first, "um_messages_total", **labels) == 3
    assert value(from_second, "um_messages_total", **labels) == 3
    assert value(from_first, "um_store_up") == 1  # the store's gauges once, not summed
    assert any(shared.iterdir())  # the processes' values live in files there


def test_a_campaign_beside_serve_counts_in_its_scrape(cli: Cli, tmp_path: Path) -> None:
    # `campaign send` sends from a process of its own; in multi-process mode its
    # messages are summed into serve's /metrics like those of serve and the worker.
    shared = tmp_path / "prometheus"
    shared.mkdir()
    env = {"PROMETHEUS_MULTIPROC_DIR": str(shared)}
    rows = tmp_path / "rows.csv"
    rows.write_text("phone\n+905551230001\n+905551230002\n+905551230003\n")
    with serving(cli, "--demo", "--no-worker", "--metrics-token", TOKEN, **env) as served:
        workspace = served.started["workspace_id"]
        cli("campaign", "send", "--workspace", workspace, "--csv", str(rows), "--body", "hi",
            "--test", "--no-progress", **env).ok()  # fmt: skip
        text = scrape(f"{served.url}/metrics").text

    labels = {"provider": "sms_a", "channel": "sms", "outcome": "sent", "mode": "test"}
    assert value(text, "um_messages_total", **labels) == 3
