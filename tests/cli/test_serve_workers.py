"""``serve --workers N``: N real server processes on one port, reached over loopback.

Which process answered is told by the ``pid`` field of ``--log-format json`` access lines;
the processes of the run are the command's descendants in ``/proc``. The rate limiter is
the shared Redis one where ``UM_TEST_REDIS_URL`` is set (as in production with several
hosts), else the parent's buckets, which one test checks on their own.
"""

from __future__ import annotations

import html
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from _cli_support import Cli

REDIS_URL = os.environ.get("UM_TEST_REDIS_URL")
needs_redis = pytest.mark.skipif(
    REDIS_URL is None, reason="set UM_TEST_REDIS_URL to run serve --workers with Redis"
)
STOP_WITHIN = 30  # seconds; a graceful stop takes about one
WAIT = 60  # seconds at most for something the test waits for (never a measured time)
_STARTED = re.compile(r"started (server \d+|worker) \(pid (\d+)\)")


@dataclass
class Served:
    proc: subprocess.Popen[str]
    started: dict[str, Any]
    log: Path
    rest: str | None = None

    @property
    def url(self) -> str:
        url: str = self.started["url"]
        return url

    def lines(self) -> list[dict[str, Any]]:
        """The JSON log lines written so far."""
        text = self.log.read_text(encoding="utf-8", errors="replace")
        return [json.loads(line) for line in text.splitlines() if line.startswith("{")]

    def children(self) -> dict[str, int]:
        """The latest pid of each child (``server 1`` … ``worker``), from the parent's log."""
        found: dict[str, int] = {}
        for line in self.lines():
            match = _STARTED.fullmatch(line["message"])
            if match:
                found[match.group(1)] = int(match.group(2))
        return found

    def ready(self) -> dict[str, int]:
        """Wait until every child has started and both servers serve; their pids."""

        def check() -> dict[str, int] | None:
            children = self.children()
            up = {
                line["pid"]
                for line in self.lines()
                if line["message"] == "Application startup complete."
            }
            servers = {pid for name, pid in children.items() if name.startswith("server")}
            return children if len(children) == 3 and servers <= up else None

        ready: dict[str, int] = self.wait_for("both servers", check)
        return ready

    def wait_for(self, what: str, check: Any) -> Any:
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            result = check()
            if result:
                return result
            time.sleep(0.1)
        raise AssertionError(f"waited {WAIT} s for {what}:\n{self.log.read_text()[-3000:]}")


@contextmanager
def serving(cli: Cli, *args: str, **env: str) -> Iterator[Served]:
    """``serve --workers 2 --demo --json --log-format json`` in the background (stderr to a
    file), killed with its whole process group by a watchdog if it ever hangs."""
    log = cli.cwd / f"serve-{time.monotonic_ns()}.log"
    with log.open("w") as stderr:
        proc = subprocess.Popen(  # noqa: S603 - our own interpreter and fixed arguments
            [sys.executable, "-m", "unified_messaging", "serve", "--port", "0", "--json",
             "--demo", "--log-format", "json", "--workers", "2", *args],
            cwd=cli.cwd, env=cli.environ({"UM_REDIS_URL": REDIS_URL or "", **env}),
            stdout=subprocess.PIPE, stderr=stderr, text=True, encoding="utf-8",
            start_new_session=True,
        )  # fmt: skip
    watchdog = threading.Timer(150, lambda: os.killpg(proc.pid, signal.SIGKILL))
    watchdog.start()
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line:
            raise AssertionError(f"serve did not start: {log.read_text()}")
        yield Served(proc, json.loads(line), log)
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()


def descendants(pid: int) -> set[int]:
    """``pid``'s descendants alive now (Linux: /proc/<pid>/task/<tid>/children)."""
    found: set[int] = set()
    queue = [pid]
    while queue:
        current = queue.pop()
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                text = Path(f"/proc/{current}/task/{task}/children").read_text()
            except OSError:
                continue
            for child in map(int, text.split()):
                found.add(child)
                queue.append(child)
    return found


def alive(pid: int) -> bool:
    """Running (a zombie, dead but not yet reaped, is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def send(url: str, api_key: str, to: str = "+905551234567") -> httpx.Response:
    # A connection per request: the kernel hands each to whichever server accepts first.
    return httpx.post(
        f"{url}/v1/messages",
        headers={"Authorization": f"Bearer {api_key}", "Connection": "close"},
        json={"to": to, "body": "Merhaba!"},
        timeout=30,
    )


def stop(served: Served) -> str:
    """SIGTERM, wait for the end; the whole log. What stdout still had: ``served.rest``."""
    served.proc.send_signal(signal.SIGTERM)
    served.rest, _ = served.proc.communicate(timeout=STOP_WITHIN)
    return served.log.read_text()


def answered_by(served: Served) -> set[int]:
    return {
        line["pid"]
        for line in served.lines()
        if line["logger"] == "uvicorn.access" and line.get("path") == "/v1/messages"
    }


# ------------------------------------------------------------------------ refusals


@pytest.mark.parametrize("count", ["0", "-1", "1.5", "two", ""])
def test_workers_must_be_a_whole_number_of_at_least_one(cli: Cli, count: str) -> None:
    result = cli("serve", "--port", "0", "--workers", count)

    assert result.returncode == 2, result.output
    assert "--workers" in result.stderr
    assert "is not a whole number of at least 1" in result.stderr
    assert "Traceback" not in result.stderr


# ------------------------------------------------------------------------ several servers


def test_requests_are_served_by_every_server_process_on_the_one_port(cli: Cli) -> None:
    with serving(cli) as served:
        key = served.started["api_key"]
        children = served.ready()
        servers = {pid for name, pid in served.children().items() if name.startswith("server")}
        statuses: list[int] = []
        with ThreadPoolExecutor(8) as pool:
            while len(answered_by(served)) < 2 and len(statuses) < 400:
                # Each to another number: the flood guard (D28) stays out of it.
                numbers = [f"+9055512{len(statuses) + n:05}" for n in range(16)]
                statuses += [
                    r.status_code for r in pool.map(lambda to: send(served.url, key, to), numbers)
                ]
        health = httpx.get(f"{served.url}/v1/health", timeout=WAIT)
        stop(served)

    assert set(statuses) == {201}
    assert answered_by(served) == servers  # both, and only the servers: not the parent
    assert served.proc.pid not in answered_by(served)
    assert set(children) == {"server 1", "server 2", "worker"}
    assert health.status_code == 200


def test_the_port_and_the_demo_are_printed_once_and_the_sign_in_link_works(cli: Cli) -> None:
    with serving(cli) as served:
        served.ready()
        link = served.started["dashboard_login_url"]
        origin = {"Origin": served.url}
        # A connection per request, so that the sign-in's steps may meet different servers:
        # the session and its CSRF token live in the store, not in one process.
        fresh = httpx.Limits(max_keepalive_connections=0)
        with httpx.Client(timeout=WAIT, limits=fresh) as browser:
            page = browser.get(link)
            signed = browser.post(link, data={"csrf_token": _csrf(page.text)}, headers=origin)
            pages = [browser.get(served.url + "/dashboard/") for _ in range(8)]
        text = stop(served)

    assert set(served.started) == {"workspace_id", "api_key", "url", "dashboard_login_url"}
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+", served.url)
    assert not served.url.endswith(":0")
    assert served.rest == ""  # one line: the children print nothing
    assert signed.status_code == 303, signed.text[:300]
    assert [p.status_code for p in pages] == [200] * 8
    assert all("demo@example.com (operator)" in p.text for p in pages)
    assert served.proc.returncode == 0, text[-2000:]


def _csrf(page: str) -> str:
    found = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert found, page[:300]
    return html.unescape(found.group(1))


def test_sigterm_stops_every_process_gracefully_and_leaves_none_behind(cli: Cli) -> None:
    with serving(cli) as served:
        served.ready()
        processes = descendants(served.proc.pid)
        assert send(served.url, served.started["api_key"]).status_code == 201
        text = stop(served)

    assert served.proc.returncode == 0, text[-2000:]
    assert set(served.children().values()) <= processes
    assert not [pid for pid in processes if alive(pid)]
    messages = [json.loads(line)["message"] for line in text.splitlines() if line[:1] == "{"]
    assert messages.count("Application shutdown complete.") == 2  # each server, gracefully
    assert sum(m.startswith("worker ") and m.endswith(" stopped") for m in messages) == 1
    assert "Traceback" not in text
    assert "killed" not in text


def test_a_killed_server_process_is_started_again(cli: Cli) -> None:
    with serving(cli) as served:
        key = served.started["api_key"]
        first = served.ready()
        os.kill(first["server 1"], signal.SIGKILL)
        again = served.wait_for(
            "a new server 1",
            lambda: ((c := served.children())["server 1"] != first["server 1"] and c) or None,
        )
        served.ready()
        statuses = [send(served.url, key).status_code for _ in range(10)]
        text = stop(served)

    assert statuses == [201] * 10
    assert again["server 2"] == first["server 2"]  # the others run on
    assert again["worker"] == first["worker"]
    warning = f"server 1 (pid {first['server 1']}) exited with signal SIGKILL; starting it again"
    assert any(warning in line for line in text.splitlines())
    assert served.proc.returncode == 0


def test_a_killed_worker_process_is_started_again(cli: Cli) -> None:
    with serving(cli) as served:
        first = served.ready()
        os.kill(first["worker"], signal.SIGKILL)
        served.wait_for("a new worker", lambda: served.children()["worker"] != first["worker"])
        stop(served)

    assert served.proc.returncode == 0


class _Receiver(BaseHTTPRequestHandler):
    events: list[dict[str, Any]]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.events.append(json.loads(body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        return None


@contextmanager
def receiver() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    events: list[dict[str, Any]] = []
    handler = type("Receiver", (_Receiver,), {"events": events})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hook", events
    finally:
        server.shutdown()
        server.server_close()


def test_messages_sent_through_any_server_are_delivered_once_by_the_one_worker(
    cli: Cli,
) -> None:
    count = 24
    with receiver() as (url, events), serving(cli, UM_WEBHOOK_ALLOW_PRIVATE="1") as served:
        key = served.started["api_key"]
        cli("webhooks", "add", "--workspace", served.started["workspace_id"], url,
            "--event", "message.delivered", UM_WEBHOOK_ALLOW_PRIVATE="1").ok()  # fmt: skip
        with ThreadPoolExecutor(8) as pool:
            sent = list(pool.map(lambda n: send(served.url, key, f"+9055512300{n:02}"),
                                 range(count)))  # fmt: skip
        job_ids = [response.json()["job_id"] for response in sent]
        served.wait_for(f"{count} deliveries", lambda: len(events) >= count or None)
        statuses = [
            httpx.get(f"{served.url}/v1/messages/{job_id}",
                      headers={"Authorization": f"Bearer {key}"}, timeout=10).json()["status"]
            for job_id in job_ids
        ]  # fmt: skip
        stop(served)  # the barrier: every item in hand is finished, nothing comes after

    delivered = sorted(event["data"]["job_id"] for event in events)
    assert delivered == sorted(job_ids)  # each exactly once
    assert {event["type"] for event in events} == {"message.delivered"}
    assert statuses == ["delivered"] * count
    loops = [
        line for line in served.lines() if re.fullmatch(r"worker \S+ started", line["message"])
    ]
    assert [line["pid"] for line in loops] == [served.children()["worker"]]


@pytest.mark.parametrize(
    "limiter",
    [pytest.param("redis", marks=needs_redis), "parent"],
)
def test_a_keys_rate_limit_is_exact_across_the_server_processes(cli: Cli, limiter: str) -> None:
    # D16 with N processes: the buckets are shared (Redis, or without it the parent's, over
    # a Unix socket), so a burst of 5 is 5 in all, not 5 per process.
    env = {"UM_REDIS_URL": ""} if limiter == "parent" else {}
    with serving(cli, **env) as served:
        served.ready()
        workspace = served.started["workspace_id"]
        key = cli("keys", "create", "--workspace", workspace, "--test", "--rate-limit", "0.001",
                  "--rate-burst", "5", "--json").json()["api_key"]  # fmt: skip
        statuses: list[int] = []
        with ThreadPoolExecutor(8) as pool:
            while len(statuses) < 24 or (len(answered_by(served)) < 2 and len(statuses) < 400):
                numbers = [f"+9055512{len(statuses) + n:05}" for n in range(8)]
                statuses += [
                    r.status_code for r in pool.map(lambda to: send(served.url, key, to), numbers)
                ]
        stop(served)

    assert sorted(statuses) == [201] * 5 + [429] * (len(statuses) - 5)
    assert len(answered_by(served)) == 2  # both servers answered, and refused, from one bucket


def test_a_scrape_of_any_server_counts_the_messages_of_all(cli: Cli) -> None:
    # D30: the parent puts its children in Prometheus' multi-process mode (a directory of
    # this run's own when PROMETHEUS_MULTIPROC_DIR is not set), so no scrape sees one half.
    from prometheus_client.parser import text_string_to_metric_families

    token = "metrics-token-0123456789abcdef"
    with serving(cli, UM_METRICS_TOKEN=token, PROMETHEUS_MULTIPROC_DIR="") as served:
        served.ready()
        key = served.started["api_key"]
        sent = 0
        with ThreadPoolExecutor(8) as pool:
            while sent < 8 or (len(answered_by(served)) < 2 and sent < 400):
                numbers = [f"+9055512{sent + n:05}" for n in range(8)]
                sent += sum(
                    r.status_code == 201
                    for r in pool.map(lambda to: send(served.url, key, to), numbers)
                )
        headers = {"Authorization": f"Bearer {token}", "Connection": "close"}
        scrapes = [
            httpx.get(f"{served.url}/metrics", headers=headers, timeout=WAIT) for _ in range(6)
        ]
        stop(served)

    def sent_total(text: str) -> float:
        labels = {"provider": "sms_a", "channel": "sms", "outcome": "sent", "mode": "test"}
        return next(
            sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples
            if sample.name == "um_messages_total" and sample.labels == labels
        )

    assert len(answered_by(served)) == 2
    assert {scrape.status_code for scrape in scrapes} == {200}
    assert [sent_total(scrape.text) for scrape in scrapes] == [sent] * 6
    # The run's directory went with it.
    assert not list(Path(tempfile.gettempdir()).glob(f"*/*_{served.children()['server 1']}.db"))


@pytest.mark.parametrize("url", ["memory", "sqlite://", "sqlite+aiosqlite:///:memory:"])
def test_several_workers_on_an_in_memory_store_are_refused(cli: Cli, url: str) -> None:
    # Each process would have a store of its own, and the demo key would be in one only.
    result = cli("serve", "--port", "0", "--workers", "2", "--demo", UM_DATABASE_URL=url)

    assert result.returncode == 2, result.output
    assert "in-memory store lives in one process" in result.stderr
    assert "Traceback" not in result.stderr
