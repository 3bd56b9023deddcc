"""The product as users run it: ``unified-messaging serve`` under load from wrk.

    apt-get install -y wrk        # Debian/Ubuntu; wrk is not installed in CI
    .venv/bin/python benchmarks/bench_serve.py [--duration 10] [--backend sqlite,postgresql]
        [--only post,guard,get,health,bulk,dlr,webhooks,two] [--postgres-url URL]
        [--http auto|h11|httptools]

Everything is set up the way a user would: the ``unified-messaging`` command line creates
the workspace, the connections, the keys and the webhook endpoint (``workspaces create``,
``connections add --base-url``, ``keys create --rate-limit``, ``webhooks add``), then
``unified-messaging serve --json --port 0 --log-level warning`` runs as a subprocess, with
its background worker on, on a fresh store: a new SQLite file in a temporary directory, or
a new PostgreSQL database that this script creates and drops (``--postgres-url`` names the
server and a database to connect to for that; default ``$UM_TEST_POSTGRES_URL``, else
``postgresql+asyncpg://postgres@127.0.0.1:5432/test``). ``UM_MASTER_KEYS`` is a key made by
``vault generate-key`` for the run; ``UM_WEBHOOK_ALLOW_PRIVATE=1`` admits the loopback
receiver. Load comes from wrk (2 threads, keep-alive connections, the Lua script
``benchmarks/wrk/bench.lua``, which counts every HTTP status so non-2xx answers show up in
the report) or, where a fixed count or a check of every answer is needed, from httpx.

Rows (``--only`` picks them; every row runs on each ``--backend`` unless said otherwise):

- ``post``: ``POST /v1/messages`` with a test key whose rate limit never runs dry
  (``keys create --test --rate-limit 1e9 --rate-burst 1000000000``), one normal recipient
  (accepted, simulated delivery report 2 s later, applied by the worker), 16 connections.
  Beside it, once per run, a bare Starlette endpoint that parses the same JSON body and
  answers a fixed 201, run under uvicorn in a subprocess with ``serve``'s uvicorn options.
- ``guard``: ``POST /v1/messages`` as ``post``, but every request to another number (wrk
  puts a new recipient in each body), on a workspace with the flood guard off and on one
  with the default guard (D28), alternating rounds on one server: the guard's cost side by
  side. ``--py-spy DIR``: one more round of each with ``serve`` sampled by py-spy (``post``
  too).
- ``get``: ``GET /v1/messages/{job_id}`` of one job created first, 16 connections.
- ``health``: ``GET /v1/health`` beside the bare endpoint's GET, on 1 and on 16 connections
  (first backend only: health does no I/O).
- The GET and health rows, and the bare GET, note their server's CPU per request, each
  measured once the server is idle. ``--http`` runs ``serve --http`` with that parser (the
  bare endpoint keeps uvicorn's default).
- ``bulk``: ``POST /v1/messages/bulk`` of 200 recipients with a live key, through the
  ``sms_a`` (NetGSM, 100 per request) connection whose ``--base-url`` is a loopback NetGSM
  fake (``tests/fakes/netgsm.py``) answering after 50 ms, in a process of its own; beside it
  the yardstick, two concurrent raw batch calls of 100 to the same fake with httpx. Rounds
  alternate; medians; the ratio bulk / raw.
- ``dlr``: delivery reports in, one per request, simulator format, to
  ``POST /v1/dlr/{connection_id}/{token}``, 16 connections, each report for its own job.
  The jobs go to ``+905550000008`` (accepted, no simulated report ever), so every report
  changes its job. Each wrk thread posts its share once and stops; ``--duration`` caps it.
- ``webhooks``: events out to a loopback receiver (its own process, answering 204). A
  ``serve --no-worker`` on a store of its own queues ``--events`` ``message.sent`` events
  (bulks to ``+905550000008``; the endpoint subscribes to ``message.sent`` only); then
  ``serve`` with its worker starts on that store and the receiver times their arrival:
  events / seconds from the server's start line to the last event.
- ``workers``: ``serve --workers 2`` beside ``serve --workers 1``, each on a fresh store of
  its own, as users run them (no Redis: the one server keeps its rate-limit buckets, the two
  ask their parent's), the ``post`` row's load, 16 connections; ``--workers-redis URL`` gives
  both the shared Redis limiter instead. Runs alternate (1, 2, 1, 2 …, ``--rounds`` each), and each
  starts once the previous run's delivery reports are applied (the servers' processes are
  idle), so no run pays for another's backlog; the rate is the median. The CPU figure is
  the whole process tree's (servers, worker, parent) per request. Beside them, for the
  record, the bare endpoint under uvicorn with 1 and with 2 worker processes.
- ``two``: two ``serve`` processes (both with workers) on one SQLite file (sqlite only), 16
  httpx clients (one keep-alive connection each) split between them, ``--sends`` sends in
  all; counts 503s, then reads every job back from both servers.

The machine is shared: the report prints the load average before and after. Quick run
(about 1-2 minutes): ``--duration 3 --only post,get,health``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
LUA = HERE / "wrk" / "bench.lua"
ROWS = ("post", "guard", "get", "health", "bulk", "dlr", "webhooks", "two", "workers")
BACKENDS = ("sqlite", "postgresql")
DEFAULT_POSTGRES = "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
RECIPIENT = "+905551234567"  # a normal number: accepted, delivered 2 s later (simulated)
NO_REPORT = "+905550000008"  # magic number: accepted, no simulated report ever
SEND_BODY = {"to": RECIPIENT, "body": "Siparişiniz yola çıktı."}
#: The guard row's body: wrk puts another number in place of @TO@ in every request.
DISTINCT_PREFIX = "+90532"  # Turkcell; + the wrk thread's digit and a 6-digit counter
DISTINCT_BODY = {"to": "@TO@", "body": "Siparişiniz yola çıktı."}
GUARD_ROUNDS = 2  # guard off, guard on, alternating, this many times each
SENDER = "ACME"  # a header the NetGSM fake knows
WRK_THREADS = 2  # the machine has two cores
# The shape of a real answer, fixed: the bare endpoint does no work to build it.
BARE_ANSWER = json.dumps(
    {
        "job_id": "msg_01JBARE00000000000000000",
        "status": "sent",
        "to": RECIPIENT,
        "provider": "sms_a",
        "created_at": "2026-01-01T00:00:00Z",
        "attempts": [
            {
                "provider": "sms_a",
                "status": "accepted",
                "provider_message_id": "sim-sms_a-msg_01JBARE00000000000000000-0",
                "at": "2026-01-01T00:00:00Z",
            }
        ],
        "segments": 1,
        "encoding": "gsm7",
    }
).encode()
HEALTH_ANSWER = b'{"status":"ok","version":"bare"}'

Scope = MutableMapping[str, Any]


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------- the results


@dataclass
class Row:
    row: str
    backend: str
    measure: str
    rate: float | None = None
    unit: str = "req/s"
    p50_ms: float | None = None
    p99_ms: float | None = None
    non_2xx: int | None = None
    notes: list[str] = field(default_factory=list)

    def cells(self) -> list[str]:
        rate = "—" if self.rate is None else f"{self.rate:,.0f} {self.unit}"
        if self.rate is not None and self.rate < 10:
            rate = f"{self.rate:,.2f} {self.unit}"
        return [
            self.row,
            self.backend,
            self.measure,
            rate,
            ms(self.p50_ms),
            ms(self.p99_ms),
            "—" if self.non_2xx is None else f"{self.non_2xx:,}",
            "; ".join(self.notes).replace("\n", " ").replace("|", "\\|"),
        ]


def ms(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:,.0f} ms" if value >= 100 else f"{value:.1f} ms"


def table(rows: Sequence[Row]) -> str:
    head = ["row", "backend", "measure", "rate", "p50", "p99", "non-2xx", "notes"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r.cells()) + " |" for r in rows]
    return "\n".join(lines)


def codes_note(codes: dict[int, int]) -> str:
    return ", ".join(f"{n:,}× {code}" for code, n in sorted(codes.items()))


# ---------------------------------------------------------------------- wrk


@dataclass
class Load:
    requests: int
    seconds: float
    p50_ms: float
    p99_ms: float
    codes: dict[int, int]
    socket_errors: dict[str, int]

    @property
    def rate(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    @property
    def non_2xx(self) -> int:
        return sum(n for code, n in self.codes.items() if not 200 <= code < 300)

    def row(self, row: str, backend: str, measure: str, unit: str = "req/s") -> Row:
        notes = []
        if self.non_2xx:
            notes.append("statuses " + codes_note(self.codes))
        errors = {k: v for k, v in self.socket_errors.items() if k != "status" and v}
        if errors:
            notes.append("socket errors " + ", ".join(f"{k} {v}" for k, v in errors.items()))
        return Row(
            row, backend, measure, self.rate, unit, self.p50_ms, self.p99_ms, self.non_2xx, notes
        )


async def wrk(
    url: str,
    *,
    connections: int,
    duration: float,
    method: str = "GET",
    body: str | None = None,
    bodies: Path | None = None,
    auth: str | None = None,
    to_prefix: str | None = None,
) -> Load:
    threads = min(WRK_THREADS, connections)
    env = os.environ | {"WRK_METHOD": method, "WRK_THREADS": str(threads)}
    settings = (
        ("WRK_BODY", body),
        ("WRK_BODIES", bodies),
        ("WRK_AUTH", auth),
        ("WRK_TO", to_prefix),
    )
    for name, value in settings:
        env.pop(name, None)
        if value is not None:
            env[name] = str(value)
    argv = ["wrk", "-t", str(threads), "-c", str(connections), "-d", f"{duration:g}s"]
    argv += ["--timeout", "15s", "-s", str(LUA), url]
    process = await asyncio.create_subprocess_exec(
        *argv, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await process.communicate()
    for line in out.decode().splitlines():
        if line.startswith("WRK_RESULT "):
            data = json.loads(line.removeprefix("WRK_RESULT "))
            return Load(
                requests=data["requests"],
                seconds=data["duration_us"] / 1e6,
                p50_ms=data["p50_us"] / 1e3,
                p99_ms=data["p99_us"] / 1e3,
                codes={int(code): n for code, n in data["codes"].items()},
                socket_errors=data["errors"],
            )
    raise RuntimeError(f"wrk gave no result (exit {process.returncode}): {err.decode()[-500:]}")


# ---------------------------------------------------------------------- child processes


@dataclass
class Child:
    name: str
    process: asyncio.subprocess.Process
    info: dict[str, Any]
    log: Path

    @property
    def url(self) -> str:
        url: str = self.info["url"]
        return url

    def cpu_seconds(self) -> float:
        """User + system CPU the process has used so far (Linux /proc), all threads."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def tree_cpu_seconds(self) -> float:
        """CPU of the process and every descendant alive now (``serve --workers``' children)."""
        return sum(cpu_of(pid) for pid in descendants(self.process.pid))

    def tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def cpu_of(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:  # it ended meanwhile
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def descendants(pid: int) -> list[int]:
    """``pid`` and its descendants (Linux /proc/<pid>/task/<tid>/children)."""
    found, queue = [], [pid]
    while queue:
        current = queue.pop()
        found.append(current)
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue
        for task in tasks:
            with contextlib.suppress(OSError):
                children = Path(f"/proc/{current}/task/{task}/children").read_text().split()
                queue += [int(child) for child in children]
    return found


async def settled(child: Child, *, quiet: float = 0.05, longest: float = 120.0) -> None:
    """Wait until ``child``'s process tree used under ``quiet`` CPU seconds in one second:
    the work a run left behind (delivery reports due 2 s after each send) is done."""
    deadline = time.monotonic() + longest
    before = child.tree_cpu_seconds()
    while time.monotonic() < deadline:
        await asyncio.sleep(1)
        now = child.tree_cpu_seconds()
        if now - before < quiet:
            return
        before = now
    log(f"{child.name} still busy after {longest:g} s")


async def spawn(name: str, argv: Sequence[str], *, env: dict[str, str], cwd: Path) -> Child:
    """Start ``argv``; its first stdout line is a JSON object with at least ``url``."""
    log_path = cwd / f"{name}.log"
    with log_path.open("ab") as stderr:
        process = await asyncio.create_subprocess_exec(
            *argv, env=env, cwd=cwd, stdout=asyncio.subprocess.PIPE, stderr=stderr
        )
    child = Child(name, process, {}, log_path)
    assert process.stdout is not None
    try:
        line = await asyncio.wait_for(process.stdout.readline(), 60)
    except TimeoutError:
        line = b""
    if not line:
        await stop(child)
        raise RuntimeError(f"{name} did not start:\n{child.tail()}")
    child.info = json.loads(line)
    return child


async def stop(child: Child) -> None:
    if child.process.returncode is None:
        child.process.terminate()
        try:
            await asyncio.wait_for(child.process.wait(), 20)
        except TimeoutError:
            child.process.kill()
            await child.process.wait()


@contextlib.asynccontextmanager
async def running(
    name: str, argv: Sequence[str], *, env: dict[str, str], cwd: Path
) -> AsyncIterator[Child]:
    child = await spawn(name, argv, env=env, cwd=cwd)
    try:
        yield child
    finally:
        await stop(child)


@contextlib.asynccontextmanager
async def worker_processes(
    count: int, env: dict[str, str], cwd: Path
) -> AsyncIterator[list[asyncio.subprocess.Process]]:
    """``count`` ``unified-messaging worker`` processes beside ``serve`` (its documented
    scale-out: they claim from the same queue), stopped with SIGTERM at the end."""
    processes = []
    try:
        for n in range(count):
            with (cwd / f"worker-{n}.log").open("ab") as stderr:
                processes.append(
                    await asyncio.create_subprocess_exec(
                        *um_command(), "worker", env=env, cwd=cwd,
                        stdout=asyncio.subprocess.DEVNULL, stderr=stderr,
                    )
                )  # fmt: skip
        yield processes
    finally:
        for process in processes:
            if process.returncode is None:
                process.terminate()
        for process in processes:
            await process.wait()


async def profiled(
    server: Child | dict[int, Path], out: Path, seconds: float, load: Awaitable[Load]
) -> None:
    """``load`` while py-spy samples ``server`` (all threads, idle ones left out) into
    ``out``, as collapsed stacks (one line per stack: frames, then the sample count); or,
    given ``{pid: out}``, each of those processes into its own file."""
    targets = {server.process.pid: out} if isinstance(server, Child) else server
    spies = []
    for pid, path in targets.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        argv = ["record", "--pid", str(pid), "--format", "raw", "--threads"]
        argv += ["--duration", f"{max(1, int(seconds) - 1)}", "--output", str(path)]
        spy = await asyncio.create_subprocess_exec(
            shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy")), *argv,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        spies.append((spy, path))
    await load
    for spy, path in spies:
        _, err = await spy.communicate()
        if spy.returncode != 0:
            log(f"py-spy: {err.decode().strip()[-300:]}")
        else:
            log(f"profile: {path}")


def this_script(child: str, *extra: str) -> list[str]:
    return [sys.executable, str(Path(__file__).resolve()), "--child", child, *extra]


def note_cpu(row: Row, cpu: float, load: Load, who: str = "serve") -> None:
    answered = sum(load.codes.values())
    if answered:
        row.notes.append(f"{who} CPU {cpu / answered * 1000:.3f} ms/request")


def um_command() -> list[str]:
    """The ``unified-messaging`` console script beside this interpreter."""
    script = Path(sys.executable).with_name("unified-messaging")
    return [str(script)] if script.exists() else [sys.executable, "-m", "unified_messaging"]


# ---------------------------------------------------------------------- the children's side


def listening_socket() -> socket.socket:
    """Bound and listening before uvicorn starts, as ``serve`` does it (cli/_serve.py); the
    explicit IPPROTO_TCP makes asyncio set TCP_NODELAY on the accepted sockets."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def run_child(app: Any, info: dict[str, Any], **options: Any) -> None:
    sock = listening_socket()
    port = sock.getsockname()[1]
    print(json.dumps({"url": f"http://127.0.0.1:{port}", **info}), flush=True)
    serve_on(sock, app, options)


def serve_on(sock: socket.socket, app: Any, options: dict[str, Any]) -> None:
    import uvicorn

    config = uvicorn.Config(app, log_level="warning", **options)
    asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))


BARE_OPTIONS: dict[str, Any] = {
    "lifespan": "on", "proxy_headers": False, "timeout_graceful_shutdown": 10, "ws": "none"
}  # fmt: skip


def bare_worker(sock: socket.socket) -> None:
    serve_on(sock, bare_app(), BARE_OPTIONS)


def child_bare(workers: int = 1) -> None:
    """A bare Starlette app under plain uvicorn with ``serve``'s options (cli/_serve.py:
    lifespan on, no proxy headers, no WebSockets, 10 s graceful stop, TCP_NODELAY), without
    its guarded HTTP protocol (connection cap, deadlines). ``workers`` > 1: that many
    processes on one socket, started as uvicorn's supervisor does (spawn, socket passed)."""
    if workers == 1:
        run_child(bare_app(), {}, **BARE_OPTIONS)
        return
    import multiprocessing
    import signal

    sock = listening_socket()
    print(json.dumps({"url": f"http://127.0.0.1:{sock.getsockname()[1]}"}), flush=True)
    context = multiprocessing.get_context("spawn")
    processes = [context.Process(target=bare_worker, args=(sock,)) for _ in range(workers)]
    for process in processes:
        process.start()
    stops = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, stops)  # after the start: children inherit masks
    signal.sigwait(stops)
    for process in processes:
        process.terminate()
    for process in processes:
        process.join()


def bare_app() -> Any:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    async def send(request: Request) -> Response:
        await request.json()
        return Response(BARE_ANSWER, status_code=201, media_type="application/json")

    async def health(request: Request) -> Response:
        return Response(HEALTH_ANSWER, media_type="application/json")

    return Starlette(
        routes=[
            Route("/v1/messages", send, methods=["POST"]),
            Route("/v1/health", health, methods=["GET"]),
        ]
    )


def child_netgsm(delay: float) -> None:
    sys.path.insert(0, str(HERE.parent / "tests"))
    from fakes.netgsm import NetgsmFake

    fake = NetgsmFake()

    async def app(scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            await asyncio.sleep(delay)
        await fake.app(scope, receive, send)

    info = {"usercode": fake.usercode, "password": fake.password}
    run_child(app, info, lifespan="off", access_log=False, ws="none")


def child_receiver() -> None:
    """Answers every POST with 204 and counts them; ``GET /count`` tells, ``/reset`` zeroes."""
    state: dict[str, float] = {"count": 0, "first": 0.0, "last": 0.0}

    async def app(scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        body = b""
        if scope["method"] == "POST":
            now = time.monotonic()  # system-wide on Linux: the parent compares its own
            state["first"] = state["first"] or now
            state["last"] = now
            state["count"] += 1
            status = 204
        else:
            if scope["path"] == "/reset":
                state.update(count=0, first=0.0, last=0.0)
            body, status = json.dumps(state).encode(), 200
        await send({"type": "http.response.start", "status": status, "headers": []})
        await send({"type": "http.response.body", "body": body})

    run_child(app, {}, lifespan="off", access_log=False, ws="none")


# ---------------------------------------------------------------------- the stores


@contextlib.asynccontextmanager
async def database(backend: str, tmp: Path, name: str, postgres: str) -> AsyncIterator[str]:
    """A fresh, empty store: a new SQLite file, or a PostgreSQL database dropped after."""
    if backend == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp / (name + '.db')}"
        return
    import asyncpg
    from sqlalchemy.engine import make_url

    server = make_url(postgres)
    dbname = f"bench_serve_{os.getpid()}_{name}"
    admin = server.set(drivername="postgresql").render_as_string(hide_password=False)
    connection = await asyncpg.connect(admin)
    try:
        await connection.execute(f'CREATE DATABASE "{dbname}"')
    finally:
        await connection.close()
    try:
        yield server.set(database=dbname).render_as_string(hide_password=False)
    finally:
        connection = await asyncpg.connect(admin)
        try:
            await connection.execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')
        finally:
            await connection.close()


# ---------------------------------------------------------------------- the command line


@dataclass
class Workspace:
    id: str
    connection_id: str
    dlr_path: str
    test_key: str
    live_key: str
    #: A second workspace with the default flood guard on (D28), and its test key.
    guarded_key: str | None = None


class Bench:
    def __init__(self, args: argparse.Namespace, tmp: Path, master_key: str) -> None:
        self.args = args
        self.tmp = tmp
        self.master_key = master_key
        self.rows: list[Row] = []
        self.fake: Child | None = None
        self.receiver: Child | None = None
        self.bare_post: float | None = None

    def env(self, database_url: str) -> dict[str, str]:
        env = dict(os.environ)
        env.pop("UM_REDIS_URL", None)  # each server keeps its own buckets
        env |= {
            "UM_DATABASE_URL": database_url,
            "UM_MASTER_KEYS": self.master_key,
            "UM_WEBHOOK_ALLOW_PRIVATE": "1",
        }
        return env

    async def cli(self, env: dict[str, str], *argv: str, stdin: str | None = None) -> Any:
        process = await asyncio.create_subprocess_exec(
            *um_command(),
            *argv,
            "--json",
            env=env,
            cwd=self.tmp,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await process.communicate(None if stdin is None else stdin.encode())
        if process.returncode != 0:
            raise RuntimeError(f"unified-messaging {' '.join(argv)}: {err.decode().strip()}")
        return json.loads(out)

    async def provision(self, env: dict[str, str], name: str, *, guard: bool = False) -> Workspace:
        """A workspace with a live sms_a connection to the NetGSM fake, a test and a live key;
        with ``guard``, a second one with the flood guard on (default limit) and a test key."""
        assert self.fake is not None
        # Every request goes to one recipient: the flood guard (D28) would refuse all but 10.
        workspace = await self.cli(env, "workspaces", "create", name, "--recipient-limit", "off")
        guarded_key = None
        if guard:
            guarded = await self.cli(env, "workspaces", "create", name + "-guarded")
            guarded_key = (await self.guarded_workspace(env, guarded["id"]))["api_key"]
        credentials = json.dumps(
            {"usercode": self.fake.info["usercode"], "password": self.fake.info["password"]}
        )
        connection = await self.cli(
            env,
            "connections",
            "add",
            "--workspace",
            workspace["id"],
            "sms_a",
            "--credentials-file",
            "-",
            "--default-sender",
            SENDER,
            "--approved-sender",
            SENDER,
            "--base-url",
            self.fake.url,
            stdin=credentials,
        )
        unlimited = ("--rate-limit", "1e9", "--rate-burst", "1000000000")
        test = await self.cli(
            env, "keys", "create", "--workspace", workspace["id"], "--test", *unlimited
        )
        live = await self.cli(env, "keys", "create", "--workspace", workspace["id"], *unlimited)
        return Workspace(
            workspace["id"],
            connection["id"],
            connection["dlr_path"],
            test["api_key"],
            live["api_key"],
            guarded_key,
        )

    async def guarded_workspace(self, env: dict[str, str], workspace_id: str) -> Any:
        """The guard row's workspace: its sms_a connection (test sends reach the simulator)
        and a test key whose rate limit never runs dry."""
        assert self.fake is not None
        credentials = json.dumps(
            {"usercode": self.fake.info["usercode"], "password": self.fake.info["password"]}
        )
        await self.cli(
            env, "connections", "add", "--workspace", workspace_id, "sms_a",
            "--credentials-file", "-", "--default-sender", SENDER, "--approved-sender", SENDER,
            "--base-url", self.fake.url, stdin=credentials,
        )  # fmt: skip
        unlimited = ("--rate-limit", "1e9", "--rate-burst", "1000000000")
        return await self.cli(
            env, "keys", "create", "--workspace", workspace_id, "--test", *unlimited
        )

    def serve(self, env: dict[str, str], name: str, *extra: str) -> Any:
        argv = [*um_command(), "serve", "--json", "--port", "0", "--log-level", "warning"]
        if self.args.http is not None:
            argv += ["--http", self.args.http]
        return running(name, [*argv, *extra], env=env, cwd=self.tmp)

    async def guarded(self, row: str, backend: str, measure: str, run: Awaitable[None]) -> None:
        """Run one row; a failure becomes a row saying so, and the run goes on."""
        try:
            await run
        except Exception as exc:
            log(f"{row} on {backend} failed: {exc!r}")
            first_line = str(exc).splitlines()[0] if str(exc) else repr(exc)
            self.rows.append(Row(row, backend, measure, notes=[f"FAILED: {first_line}"[:300]]))

    # ------------------------------------------------------------------ the run

    async def run(self) -> None:
        args = self.args
        bare_needed = {"post", "guard", "health"} & set(args.only)
        async with contextlib.AsyncExitStack() as stack:
            self.fake = await stack.enter_async_context(
                running(
                    "netgsm-fake",
                    this_script("netgsm", str(args.delay)),
                    env=dict(os.environ),
                    cwd=self.tmp,
                )
            )
            if "webhooks" in args.only:
                self.receiver = await stack.enter_async_context(
                    running("receiver", this_script("receiver"), env=dict(os.environ), cwd=self.tmp)
                )
            if "workers" in args.only:
                await self.guarded("workers", "bare", "uvicorn workers 2 / 1", self.bare_workers())
            if bare_needed:
                bare = await stack.enter_async_context(
                    running("bare", this_script("bare"), env=dict(os.environ), cwd=self.tmp)
                )
                await self.bare_rows(bare)
            for n, backend in enumerate(args.backend):
                await self.backend_rows(backend, first=n == 0)

    async def alternate(
        self, servers: dict[int, tuple[Child, str | None]], row: str, backend: str
    ) -> None:
        """``--rounds`` wrk runs of each server (with its ``Authorization``) in turn, each
        from an idle machine; a row per server with the median rate, its process tree's CPU
        per request, and its ratio to the one-worker server's."""
        body = json.dumps(SEND_BODY, ensure_ascii=False)
        loads: dict[int, list[Load]] = {n: [] for n in servers}
        cpu: dict[int, float] = dict.fromkeys(servers, 0.0)
        by_process: dict[int, dict[int, float]] = {n: {} for n in servers}
        for server, auth in servers.values():  # warm-up
            # serve prints its line before its processes are up: connections opened before
            # then would all go to the first server up (each keeps its connections).
            await settled(server)
            url = server.url + "/v1/messages"
            await wrk(url, connections=16, duration=2, method="POST", body=body, auth=auth)
        for _ in range(self.args.rounds):
            for n, (server, auth) in servers.items():
                await settled(server)
                before = server.tree_cpu_seconds()
                each = {pid: cpu_of(pid) for pid in descendants(server.process.pid)}
                load = await wrk(
                    server.url + "/v1/messages", connections=16, duration=self.args.duration,
                    method="POST", body=body, auth=auth,
                )  # fmt: skip
                cpu[n] += server.tree_cpu_seconds() - before
                for pid, used in each.items():
                    spent = by_process[n].get(pid, 0.0) + cpu_of(pid) - used
                    by_process[n][pid] = spent
                loads[n].append(load)
                log(f"{backend} {n} worker(s): {load.rate:,.0f} req/s, {load.codes}")
        if self.args.py_spy and backend != "bare":
            for n, (server, auth) in servers.items():
                await settled(server)
                pids = descendants(server.process.pid) if n > 1 else [server.process.pid]
                outs = {
                    pid: Path(self.args.py_spy) / f"serve-{backend}-w{n}-{pid}.txt" for pid in pids
                }
                load_run = wrk(
                    server.url + "/v1/messages", connections=16, duration=self.args.duration,
                    method="POST", body=body, auth=auth,
                )  # fmt: skip
                await profiled(outs, Path(self.args.py_spy), self.args.duration, load_run)
        median = {n: statistics.median(load.rate for load in runs) for n, runs in loads.items()}
        for n, runs in loads.items():
            best = max(runs, key=lambda load: load.rate)
            result = best.row(row, backend, f"{n} worker{'s' * (n > 1)}, POST, 16 conns")
            result.rate = median[n]
            result.non_2xx = sum(load.non_2xx for load in runs)
            if result.non_2xx:
                result.notes.insert(0, "FAILED: non-2xx answers")
            answered = sum(sum(load.codes.values()) for load in runs)
            if answered:
                # The bare endpoint's too: what a second process costs by itself, the floor
                # under serve's ratio.
                result.notes.append(f"tree CPU {cpu[n] / answered * 1000:.2f} ms/request")
            result.notes.append("rates " + ", ".join(f"{load.rate:,.0f}" for load in runs))
            spent = sorted(by_process[n].values(), reverse=True)
            if len(spent) > 1 and sum(spent):
                shares = "/".join(f"{100 * s / sum(spent):.0f}" for s in spent if s > 0)
                result.notes.append(f"CPU by process {shares} %")
            if n != 1 and median[1]:
                result.notes.append(f"{median[n] / median[1]:.2f}× 1 worker")
            self.rows.append(result)

    async def bare_workers(self) -> None:
        async with contextlib.AsyncExitStack() as stack:
            servers: dict[int, tuple[Child, str | None]] = {}
            for n in (1, 2):
                bare = await stack.enter_async_context(
                    running(f"bare-w{n}", this_script("bare", str(n)), env=dict(os.environ),
                            cwd=self.tmp)
                )  # fmt: skip
                servers[n] = (bare, None)
            await self.alternate(servers, "workers", "bare")

    async def workers_row(self, backend: str) -> None:
        async with contextlib.AsyncExitStack() as stack:
            servers: dict[int, tuple[Child, str | None]] = {}
            for n in (1, 2):
                url = await stack.enter_async_context(
                    database(backend, self.tmp, f"workers{n}", self.args.postgres_url)
                )
                env = self.env(url)
                if self.args.workers_redis:
                    env["UM_REDIS_URL"] = self.args.workers_redis
                workspace = await self.provision(env, f"workers{n}")
                server = await stack.enter_async_context(
                    self.serve(env, f"serve-{backend}-w{n}", "--workers", str(n))
                )
                servers[n] = (server, f"Bearer {workspace.test_key}")
            await self.alternate(servers, "workers", backend)

    async def bare_rows(self, bare: Child) -> None:
        d = self.args.duration
        if {"post", "guard"} & set(self.args.only):
            body = json.dumps(SEND_BODY, ensure_ascii=False)
            url = bare.url + "/v1/messages"
            await wrk(url, connections=16, duration=1, method="POST", body=body)  # warm-up
            load = await wrk(url, connections=16, duration=d, method="POST", body=body)
            self.rows.append(load.row("post", "bare", "bare Starlette POST, 16 conns"))
            self.bare_post = load.rate
            log(f"bare POST: {load.rate:,.0f} req/s")
        if "health" in self.args.only:
            for connections in (1, 16):
                await settled(bare)
                cpu = bare.cpu_seconds()
                load = await wrk(bare.url + "/v1/health", connections=connections, duration=d)
                measure = f"bare Starlette GET, {connections} conn{'s' * (connections > 1)}"
                row = load.row("health", "bare", measure)
                note_cpu(row, bare.cpu_seconds() - cpu, load, "bare")
                self.rows.append(row)
                log(f"bare GET, {connections} connections: {load.rate:,.0f} req/s")

    async def backend_rows(self, backend: str, *, first: bool) -> None:
        only, pg = set(self.args.only), self.args.postgres_url
        main_rows = {"post", "guard", "get", "bulk", "dlr"} | ({"health"} if first else set())
        if only & main_rows:
            try:
                async with database(backend, self.tmp, "main", pg) as url:
                    env = self.env(url)
                    workspace = await self.provision(env, "bench", guard="guard" in only)
                    async with self.serve(env, f"serve-{backend}") as server:
                        log(f"{backend}: serve at {server.url}")
                        await self.main_rows(backend, server, workspace, only, first=first)
            except Exception as exc:  # the server or the store did not come up
                log(f"{backend}: {exc!r}")
                self.rows.append(Row("setup", backend, "serve", notes=[f"FAILED: {exc}"[:300]]))
        if "webhooks" in only:
            await self.guarded("webhooks", backend, "events out", self.webhooks_row(backend))
        if "two" in only and backend == "sqlite":
            await self.guarded("two", backend, "two serve, one file", self.two_row())
        if "workers" in only:
            measure = "serve --workers 2 / 1"
            await self.guarded("workers", backend, measure, self.workers_row(backend))

    async def main_rows(
        self, backend: str, server: Child, workspace: Workspace, only: set[str], *, first: bool
    ) -> None:
        rows: list[tuple[str, str, Callable[[], Awaitable[None]]]] = [
            (
                "post",
                "POST /v1/messages, 16 conns",
                lambda: self.post_row(backend, server, workspace),
            ),
            (
                "guard",
                "POST /v1/messages, distinct recipients",
                lambda: self.guard_rows(backend, server, workspace),
            ),
            (
                "get",
                "GET /v1/messages/{id}, 16 conns",
                lambda: self.get_row(backend, server, workspace),
            ),
            ("health", "GET /v1/health", lambda: self.health_rows(backend, server)),
            ("dlr", "reports in", lambda: self.dlr_row(backend, server, workspace)),
            ("bulk", "bulk 200, live", lambda: self.bulk_row(backend, server, workspace)),
        ]
        for row, measure, make in rows:
            if row in only and (row != "health" or first):
                await self.guarded(row, backend, measure, make())
                if server.process.returncode is not None:
                    code = server.process.returncode
                    raise RuntimeError(f"serve exited ({code}):\n{server.tail()}")

    # ------------------------------------------------------------------ the rows

    async def post_row(self, backend: str, server: Child, workspace: Workspace) -> None:
        body = json.dumps(SEND_BODY, ensure_ascii=False)
        auth = f"Bearer {workspace.test_key}"
        url = server.url + "/v1/messages"
        await wrk(url, connections=16, duration=1, method="POST", body=body, auth=auth)  # warm-up
        cpu = server.cpu_seconds()
        load = await wrk(
            url, connections=16, duration=self.args.duration, method="POST", body=body, auth=auth
        )
        cpu = server.cpu_seconds() - cpu
        row = load.row("post", backend, "POST /v1/messages, 16 conns")
        sent = sum(load.codes.values())
        if sent:  # a load-independent figure: the server's CPU per send (worker included)
            row.notes.append(f"serve CPU {cpu / sent * 1000:.2f} ms/request")
        self.note_ratio(row)
        self.rows.append(row)
        log(f"{backend} POST: {load.rate:,.0f} req/s, p99 {load.p99_ms:.1f} ms, {load.codes}")
        if self.args.py_spy:
            load_run = wrk(
                url, connections=16, duration=self.args.duration, method="POST", body=body,
                auth=auth,
            )  # fmt: skip
            out = Path(self.args.py_spy) / f"serve-{backend}-post.txt"
            await profiled(server, out, self.args.duration, load_run)

    async def guard_rows(self, backend: str, server: Child, workspace: Workspace) -> None:
        """POST with every request to another number, flood guard off and on (D28), in
        alternating rounds on one server, so the guard's cost is read side by side."""
        assert workspace.guarded_key is not None
        body = json.dumps(DISTINCT_BODY, ensure_ascii=False)
        url = server.url + "/v1/messages"
        keys = {"off": workspace.test_key, "on": workspace.guarded_key}
        for key in keys.values():  # warm-up
            await wrk(url, connections=16, duration=1, method="POST", body=body,
                      auth=f"Bearer {key}", to_prefix=DISTINCT_PREFIX)  # fmt: skip
        loads: dict[str, list[tuple[Load, float]]] = {"off": [], "on": []}
        for _ in range(GUARD_ROUNDS):
            for guard, key in keys.items():
                cpu = server.cpu_seconds()
                load = await wrk(
                    url, connections=16, duration=self.args.duration, method="POST", body=body,
                    auth=f"Bearer {key}", to_prefix=DISTINCT_PREFIX,
                )  # fmt: skip
                loads[guard].append((load, server.cpu_seconds() - cpu))
                log(f"{backend} POST, guard {guard}: {load.rate:,.0f} req/s, {load.codes}")
        for guard, runs in loads.items():
            best = max(runs, key=lambda run: run[0].rate)[0]
            measure = f"POST /v1/messages, 16 conns, distinct recipients, guard {guard}"
            row = best.row("guard", backend, measure)
            rates = ", ".join(f"{load.rate:,.0f}" for load, _ in runs)
            cpus = ", ".join(
                f"{cpu / max(1, sum(load.codes.values())) * 1000:.2f}" for load, cpu in runs
            )
            row.notes.append(f"rounds {rates} req/s; serve CPU {cpus} ms/request")
            row.non_2xx = sum(load.non_2xx for load, _ in runs)
            self.note_ratio(row)
            self.rows.append(row)
        if self.args.py_spy:
            for guard, key in keys.items():
                load_run = wrk(
                    url, connections=16, duration=self.args.duration, method="POST", body=body,
                    auth=f"Bearer {key}", to_prefix=DISTINCT_PREFIX,
                )  # fmt: skip
                out = Path(self.args.py_spy) / f"serve-{backend}-guard-{guard}.txt"
                await profiled(server, out, self.args.duration, load_run)

    def note_ratio(self, row: Row) -> None:
        if self.bare_post and row.rate is not None:
            row.notes.append(f"{row.rate / self.bare_post:.3f}× bare POST")

    async def get_row(self, backend: str, server: Child, workspace: Workspace) -> None:
        auth = f"Bearer {workspace.test_key}"
        async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
            sent = await client.post(
                "/v1/messages", json=SEND_BODY, headers={"Authorization": auth}
            )
            sent.raise_for_status()
            job_id = sent.json()["job_id"]
        await settled(server)  # the earlier rows' reports applied: this CPU is the GETs'
        cpu = server.cpu_seconds()
        load = await wrk(
            f"{server.url}/v1/messages/{job_id}",
            connections=16,
            duration=self.args.duration,
            auth=auth,
        )
        row = load.row("get", backend, "GET /v1/messages/{id}, 16 conns")
        note_cpu(row, server.cpu_seconds() - cpu, load)
        self.rows.append(row)
        log(f"{backend} GET: {load.rate:,.0f} req/s, p99 {load.p99_ms:.1f} ms, {load.codes}")

    async def health_rows(self, backend: str, server: Child) -> None:
        for connections in (1, 16):
            await settled(server)
            cpu = server.cpu_seconds()
            load = await wrk(
                server.url + "/v1/health", connections=connections, duration=self.args.duration
            )
            measure = f"GET /v1/health, {connections} conn{'s' * (connections > 1)}"
            row = load.row("health", backend, measure)
            note_cpu(row, server.cpu_seconds() - cpu, load)
            self.rows.append(row)
            log(f"{backend} health, {connections} connections: {load.rate:,.0f} req/s")

    async def send_bulks(
        self, client: httpx.AsyncClient, key: str, count: int, to: str = NO_REPORT
    ) -> list[str]:
        """``count`` test sends in bulks of 200; the job ids of those sent."""
        job_ids: list[str] = []
        while len(job_ids) < count:
            size = min(200, count - len(job_ids))
            first = len(job_ids)
            items = [{"to": to, "body": f"Rapor bekleniyor {first + i}"} for i in range(size)]
            response = await client.post(
                "/v1/messages/bulk",
                json={"items": items},
                headers={"Authorization": f"Bearer {key}"},
            )
            if response.status_code != 201:
                raise RuntimeError(f"bulk answered {response.status_code}: {response.text[:200]}")
            results = response.json()["results"]
            sent = [r["job_id"] for r in results if r["status"] == "sent"]
            if len(sent) != size:
                raise RuntimeError(f"bulk sent {len(sent)} of {size}: {results[:1]}")
            job_ids += sent
        return job_ids

    async def dlr_row(self, backend: str, server: Child, workspace: Workspace) -> None:
        count = self.args.reports
        async with httpx.AsyncClient(base_url=server.url, timeout=120) as client:
            started = time.perf_counter()
            job_ids = await self.send_bulks(client, workspace.test_key, count)
            log(f"{backend} dlr: {count} jobs made in {time.perf_counter() - started:.1f} s")
            # The simulator's message id is sim-<code>-<job id>-<attempt>; check one.
            record = await self.get_job(client, workspace.test_key, job_ids[0])
            expected = f"sim-sms_a-{job_ids[0]}-0"
            if record["attempts"][0]["provider_message_id"] != expected:
                raise RuntimeError(f"unexpected provider message id: {record['attempts'][0]}")
            bodies = self.tmp / f"dlr-{backend}.jsonl"
            bodies.write_text(
                "".join(
                    json.dumps({"provider_message_id": f"sim-sms_a-{job}-0", "status": "delivered"})
                    + "\n"
                    for job in job_ids
                )
            )
            cpu = server.cpu_seconds()
            load = await wrk(
                server.url + workspace.dlr_path,
                connections=16,
                duration=self.args.duration,
                method="POST",
                bodies=bodies,
            )
            cpu = server.cpu_seconds() - cpu
            measure = "POST /v1/dlr/…, 1 report/request, 16 conns"
            row = load.row("dlr", backend, measure, "reports/s")
            if load.requests:  # load-independent: the server's CPU per report (worker too)
                row.notes.append(f"serve CPU {cpu / load.requests * 1000:.2f} ms/report")
            # Thread n posts lines n, n+2, … (wrk swallows the first of thread 0 and it
            # comes last, see wrk/bench.lua): the second of each must have been applied.
            for job in job_ids[WRK_THREADS : 2 * WRK_THREADS]:
                status = (await self.get_job(client, workspace.test_key, job))["status"]
                if status != "delivered":
                    row.notes.append(f"{job} is {status}, not delivered")
            row.notes.append(f"{load.requests:,} of {count:,} reports")
        self.rows.append(row)
        log(f"{backend} DLR: {load.rate:,.0f} reports/s, p99 {load.p99_ms:.1f} ms, {load.codes}")

    @staticmethod
    async def get_job(client: httpx.AsyncClient, key: str, job_id: str) -> dict[str, Any]:
        response = await client.get(
            f"/v1/messages/{job_id}", headers={"Authorization": f"Bearer {key}"}
        )
        response.raise_for_status()
        record: dict[str, Any] = response.json()
        return record

    async def bulk_row(self, backend: str, server: Child, workspace: Workspace) -> None:
        assert self.fake is not None
        fake = self.fake
        raw_url = fake.url + "/sms/rest/v2/send"
        credentials = (fake.info["usercode"], fake.info["password"])

        def items(run: int) -> list[dict[str, str]]:
            return [
                {"to": f"+90555{1000000 + n:07d}", "body": f"Kampanya {run}.{n}"}
                for n in range(200)
            ]

        def raw_body(run: int, half: int) -> dict[str, Any]:
            messages = [
                {"msg": f"Kampanya {run}.{n}", "no": f"555{1000000 + n:07d}"}
                for n in range(half * 100, half * 100 + 100)
            ]
            return {"msgheader": SENDER, "messages": messages, "iysfilter": "0"}

        api = httpx.AsyncClient(
            base_url=server.url,
            timeout=60,
            headers={"Authorization": f"Bearer {workspace.live_key}"},
        )
        raw = httpx.AsyncClient(timeout=60, auth=credentials)
        bulk_times: list[float] = []
        raw_times: list[float] = []
        bulk_cpu = 0.0  # serve's CPU during the measured bulks: a figure load barely moves
        failures: list[str] = []
        async with api, raw:
            for run in range(self.args.bulk_runs + 1):  # the first run warms both up
                started = time.perf_counter()
                answers = await asyncio.gather(
                    raw.post(raw_url, json=raw_body(run, 0)),
                    raw.post(raw_url, json=raw_body(run, 1)),
                )
                raw_time = time.perf_counter() - started
                for answer in answers:
                    if answer.status_code != 200 or answer.json().get("code") != "00":
                        failures.append(f"raw call {answer.status_code}: {answer.text[:100]}")
                started, cpu = time.perf_counter(), server.cpu_seconds()
                response = await api.post("/v1/messages/bulk", json={"items": items(run)})
                bulk_time = time.perf_counter() - started
                if run:
                    bulk_cpu += server.cpu_seconds() - cpu
                if response.status_code != 201 or response.json().get("sent") != 200:
                    failures.append(f"bulk {response.status_code}: {response.text[:200]}")
                if run:
                    bulk_times.append(bulk_time)
                    raw_times.append(raw_time)
        bulk, yardstick = statistics.median(bulk_times), statistics.median(raw_times)
        ratio = bulk / yardstick
        self.rows.append(
            Row(
                "bulk",
                backend,
                "POST /v1/messages/bulk, 200 items, live sms_a, fake 50 ms",
                1 / bulk,
                "bulks/s",
                bulk * 1e3,
                max(bulk_times) * 1e3,
                len(failures),
                [
                    f"median {bulk * 1e3:.0f} ms = {ratio:.2f}× raw",
                    f"serve CPU {bulk_cpu / len(bulk_times) * 1e3:.1f} ms/bulk",
                ],
            )
        )
        if failures:  # answers that were errors say nothing about speed
            row = self.rows[-1]
            row.rate = row.p50_ms = row.p99_ms = None
            row.notes = [f"FAILED: {len(failures)} failed calls", failures[0]]
        self.rows.append(
            Row(
                "bulk",
                "raw",
                "2 concurrent raw batch calls of 100 to the same fake",
                1 / yardstick,
                "pairs/s",
                yardstick * 1e3,
                max(raw_times) * 1e3,
                0,
                ["the yardstick; p99 column: slowest run"],
            )
        )
        log(f"{backend} bulk: {bulk * 1e3:.0f} ms, raw {yardstick * 1e3:.0f} ms, {ratio:.2f}×")

    async def webhooks_row(self, backend: str) -> None:
        assert self.receiver is not None
        receiver, events = self.receiver, self.args.events
        async with database(backend, self.tmp, "hooks", self.args.postgres_url) as url:
            env = self.env(url)
            workspace = await self.provision(env, "hooks")
            await self.cli(
                env,
                "webhooks",
                "add",
                "--workspace",
                workspace.id,
                "--event",
                "message.sent",
                receiver.url + "/hook",
            )
            async with (
                self.serve(env, f"serve-{backend}-queue", "--no-worker") as server,
                httpx.AsyncClient(base_url=server.url, timeout=120) as client,
            ):
                await self.send_bulks(client, workspace.test_key, events)
            extra_workers = self.args.webhook_workers
            async with httpx.AsyncClient(base_url=receiver.url, timeout=10) as probe:
                await probe.get("/reset")
                async with (
                    self.serve(env, f"serve-{backend}-hooks") as server,
                    worker_processes(extra_workers, env, self.tmp) as workers,
                ):
                    started = time.monotonic()
                    deadline = started + max(120.0, self.args.duration * 12)
                    state = (await probe.get("/count")).json()
                    cpu_first: tuple[int, float] | None = None
                    while state["count"] < events and time.monotonic() < deadline:
                        if server.process.returncode is not None:
                            raise RuntimeError(f"serve exited:\n{server.tail()}")
                        if any(w.returncode is not None for w in workers):
                            raise RuntimeError("a worker process exited")
                        await asyncio.sleep(0.05)
                        state = (await probe.get("/count")).json()
                        if cpu_first is None and state["count"]:
                            cpu_first = (int(state["count"]), server.cpu_seconds())
                    cpu_last = (int(state["count"]), server.cpu_seconds())
                    await asyncio.sleep(0.5)  # anything more than expected?
                    state = (await probe.get("/count")).json()
        got = int(state["count"])
        notes = [f"{got:,} of {events:,} events"]
        if got:
            seconds = state["last"] - started
            notes.append(f"first after {state['first'] - started:.2f} s")
            if got > 1 and state["last"] > state["first"]:
                spread = (got - 1) / (state["last"] - state["first"])
                notes.append(f"first to last {spread:,.0f} events/s")
            if cpu_first is not None and cpu_last[0] > cpu_first[0]:
                per_event = (cpu_last[1] - cpu_first[1]) / (cpu_last[0] - cpu_first[0])
                notes.append(f"serve CPU {per_event * 1000:.2f} ms/event")
            rate: float | None = got / seconds if seconds > 0 else None
        else:
            rate = None
            notes.append("none arrived")
        if got < events:
            notes.append("TIMED OUT")
        measure = "queued message.sent events → loopback receiver (worker in serve)"
        if extra_workers:
            measure += f" + {extra_workers} `worker` process{'es' if extra_workers > 1 else ''}"
        self.rows.append(Row("webhooks", backend, measure, rate, "events/s", notes=notes))
        log(f"{backend} webhooks: {notes}, {rate or 0:,.0f} events/s")

    async def two_row(self) -> None:
        sends, clients = self.args.sends, 16
        async with database("sqlite", self.tmp, "two", self.args.postgres_url) as url:
            env = self.env(url)
            workspace = await self.provision(env, "two")
            async with (
                self.serve(env, "serve-two-a") as a,
                self.serve(env, "serve-two-b") as b,
            ):
                servers = [a.url, b.url]
                auth = {"Authorization": f"Bearer {workspace.test_key}"}
                pools = [
                    httpx.AsyncClient(
                        base_url=servers[n % 2],
                        headers=auth,
                        timeout=60,
                        limits=httpx.Limits(max_connections=1),
                    )
                    for n in range(clients)
                ]
                codes: dict[int, int] = {}
                latencies: list[float] = []
                job_ids: list[str] = []
                remaining = sends

                async def sender(client: httpx.AsyncClient) -> None:
                    nonlocal remaining
                    while remaining > 0:
                        remaining -= 1
                        started = time.perf_counter()
                        response = await client.post("/v1/messages", json=SEND_BODY)
                        latencies.append(time.perf_counter() - started)
                        codes[response.status_code] = codes.get(response.status_code, 0) + 1
                        if response.status_code == 201:
                            job_ids.append(response.json()["job_id"])

                started = time.perf_counter()
                await asyncio.gather(*(sender(c) for c in pools))
                elapsed = time.perf_counter() - started
                unreadable = [0, 0]
                queue = list(job_ids)

                async def reader(client: httpx.AsyncClient, side: int) -> None:
                    while queue:
                        job = queue.pop()
                        for attempt in range(2):
                            response = await client.get(f"/v1/messages/{job}")
                            if response.status_code == 200 or attempt:
                                break
                        if response.status_code != 200:
                            unreadable[side] += 1

                for side in (0, 1):
                    queue = list(job_ids)
                    await asyncio.gather(*(reader(c, side) for c in pools[side::2]))
                for client in pools:
                    await client.aclose()
        quantiles = statistics.quantiles(latencies, n=100)
        non_2xx = sum(n for code, n in codes.items() if not 200 <= code < 300)
        notes = [
            f"{codes.get(503, 0):,}× 503",
            f"statuses {codes_note(codes)}",
            f"unreadable from A {unreadable[0]}, from B {unreadable[1]} of {len(job_ids):,} jobs",
        ]
        self.rows.append(
            Row(
                "two",
                "sqlite",
                f"2 serve on one file, {clients} clients, {sends:,} sends",
                sends / elapsed,
                "sends/s",
                quantiles[49] * 1e3,
                quantiles[98] * 1e3,
                non_2xx,
                notes,
            )
        )
        log(f"two serve: {sends / elapsed:,.0f} sends/s, {codes}, unreadable {unreadable}")


# ---------------------------------------------------------------------- main


def not_logs(folder: str, names: list[str]) -> list[str]:
    return [name for name in names if not name.endswith(".log")]


def load_average() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def version_of_wrk() -> str:
    import subprocess

    done = subprocess.run(["wrk", "--version"], capture_output=True, text=True, check=False)  # noqa: S607
    return (done.stdout or done.stderr).splitlines()[0] if (done.stdout or done.stderr) else "?"


def git_commit() -> str:
    import subprocess

    done = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],  # noqa: S607
        capture_output=True,
        text=True,
        check=False,
        cwd=HERE,
    )
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"],  # noqa: S607
        capture_output=True,
        text=True,
        check=False,
        cwd=HERE,
    )
    return done.stdout.strip() + (" + uncommitted changes" if dirty.stdout.strip() else "")


async def master_key(tmp: Path) -> str:
    process = await asyncio.create_subprocess_exec(
        *um_command(), "vault", "generate-key", "--json", cwd=tmp, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await process.communicate()
    key: str = json.loads(out)["key_spec"]
    return key


async def main(args: argparse.Namespace) -> None:
    before = load_average()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench_serve_") as name:
        tmp = Path(name)
        bench = Bench(args, tmp, await master_key(tmp))
        try:
            await bench.run()
        finally:
            if args.keep_logs:
                shutil.copytree(tmp, args.keep_logs, dirs_exist_ok=True, ignore=not_logs)
    minutes = (time.perf_counter() - started) / 60
    pythonpath = os.environ.get("PYTHONPATH")
    command = f"PYTHONPATH={pythonpath} " if pythonpath else ""
    command += f"bench_serve.py --duration {args.duration:g} --backend {','.join(args.backend)}"
    if args.http is not None:
        command += f" --http {args.http}"
    print(
        f"\n`{command} --only {','.join(args.only)}`; {time.strftime('%Y-%m-%d %H:%M')}, commit"
        f" {git_commit()}, {version_of_wrk().split(' [')[0]}, {os.cpu_count()} cores; load average"
        f" {before} before, {load_average()} after; {minutes:.1f} min.\n"
    )
    print(table(bench.rows))


def selection(choices: Sequence[str]) -> Callable[[str], list[str]]:
    def parse(text: str) -> list[str]:
        picked = [part.strip() for part in text.split(",") if part.strip()]
        wrong = [p for p in picked if p not in choices]
        if wrong or not picked:
            raise argparse.ArgumentTypeError(f"choose from {','.join(choices)}")
        return picked

    return parse


def absolute_pythonpath() -> None:
    """The servers run in a temporary directory: a relative ``PYTHONPATH`` (``PYTHONPATH=.``
    in a work tree) would name that directory there, and they would import the installed
    package instead of the tree's. Every child inherits the absolute one."""
    path = os.environ.get("PYTHONPATH")
    if path:
        parts = (os.path.abspath(part) for part in path.split(os.pathsep) if part)
        os.environ["PYTHONPATH"] = os.pathsep.join(parts)


def cli() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", type=selection(ROWS), default=list(ROWS), help=",".join(ROWS))
    parser.add_argument("--backend", type=selection(BACKENDS), default=list(BACKENDS))
    parser.add_argument("--duration", type=float, default=10, help="seconds per wrk run")
    parser.add_argument(
        "--http",
        choices=("auto", "h11", "httptools"),
        help="serve's --http (default: serve's own default); the bare endpoint keeps uvicorn's",
    )
    parser.add_argument(
        "--postgres-url", default=os.environ.get("UM_TEST_POSTGRES_URL") or DEFAULT_POSTGRES
    )
    parser.add_argument("--reports", type=int, default=5_000, help="dlr: reports (jobs) made")
    parser.add_argument("--events", type=int, default=2_000, help="webhooks: events queued")
    parser.add_argument(
        "--webhook-workers",
        type=int,
        default=0,
        metavar="N",
        help="webhooks: also run N `unified-messaging worker` processes beside serve",
    )
    parser.add_argument("--sends", type=int, default=2_000, help="two: sends in all")
    parser.add_argument("--rounds", type=int, default=2, help="workers: runs of each server")
    parser.add_argument(
        "--workers-redis", metavar="URL", help="workers: both servers' limiter in this Redis"
    )
    parser.add_argument("--bulk-runs", type=int, default=5, help="bulk: measured rounds")
    parser.add_argument("--delay", type=float, default=0.05, help="bulk: the fake's latency")
    parser.add_argument("--keep-logs", metavar="DIR", help="copy the servers' stderr logs here")
    parser.add_argument(
        "--py-spy",
        metavar="DIR",
        help="post, guard, workers: one more round each, serve (each of its processes) sampled by "
        "py-spy (collapsed stacks into DIR)",
    )
    parser.add_argument("--child", choices=("bare", "netgsm", "receiver"), help=argparse.SUPPRESS)
    parser.add_argument("child_args", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child == "bare":
        child_bare(int(args.child_args[0]) if args.child_args else 1)
    elif args.child == "netgsm":
        child_netgsm(float(args.child_args[0]))
    elif args.child == "receiver":
        child_receiver()
    else:
        absolute_pythonpath()
        if shutil.which("wrk") is None:
            raise SystemExit("wrk is not installed: apt-get install -y wrk (Debian/Ubuntu)")
        asyncio.run(main(args))


if __name__ == "__main__":
    cli()
