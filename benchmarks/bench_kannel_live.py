"""The live path through a real gateway: ``POST /v1/messages`` with a live ``sms_e`` key into
Debian's Kannel 1.4.5, beside Kannel's own ``sendsms`` taking the same load.

    apt-get install -y kannel kannel-extras wrk
    PYTHONPATH=. .venv/bin/python benchmarks/bench_kannel_live.py [--duration 10] [--rounds 2]
        [--bulk-runs 3] [--settle 60] [--py-spy DIR]

What runs, all on loopback:

- Kannel: ``bearerbox`` (``store-type = spool``: every message it takes is a file on disk
  until the SMSC has it), ``smsbox`` (the ``sendsms`` HTTP interface), and the fake SMS
  centre ``fakesmsc`` from ``kannel-extras``, which takes every message and reports it
  delivered: Kannel makes two delivery reports per message (type 8, delivered to the SMSC,
  then type 1, delivered to the phone), each a GET of the message's ``dlr-url``.
- ``unified-messaging serve --json --port N --log-level warning`` on the durable default
  store (a new SQLite file), with its worker, set up the way a user does it with the command
  line: ``workspaces create --recipient-limit off``, ``connections add sms_e`` with
  ``--base-url`` at smsbox and the credentials ``{"username", "password", "dlr_url"}``, the
  ``dlr_url`` being the server itself, and a live key with a rate limit that never runs dry.

Rounds alternate in one run (``--rounds`` each, after one warm-up of each): wrk (2 threads,
16 keep-alive connections, ``benchmarks/wrk/bench.lua``, a distinct recipient in every
request) against Kannel's ``GET /cgi-bin/sendsms`` alone, then against our live
``POST /v1/messages``. Per round: requests/s, p50/p99 from wrk; then the script waits (at most
``--settle`` s) until every message of the round reached ``fakesmsc`` and, for our rounds,
until every accepted message is in a final state (``delivered``) in the store. CPU per
message is process CPU from ``/proc`` (user + system), counted from the round's start until
that point: for our server, ``serve``'s whole process tree (the POSTs *and* the two reports
per message it takes in); for Kannel, bearerbox + smsbox (fakesmsc, the stand-in SMSC, is
counted apart). CPU per message is the measure that survives a busy machine; the rates do
not, so every figure is printed with the load average it was taken under.

``bulk``: ``POST /v1/messages/bulk`` of 200 recipients with the live key (after one warm-up),
beside the yardstick: the same 200 messages as 200 ``sendsms`` GETs over 16 keep-alive
connections. Medians of ``--bulk-runs``; serve's CPU per bulk, its reports included.

``--py-spy DIR``: one more round of our POST with ``serve`` sampled (collapsed stacks).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import secrets
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_serve import (  # noqa: E402
    LUA,
    Child,
    Load,
    cpu_of,
    git_commit,
    load_average,
    log,
    master_key,
    um_command,
    version_of_wrk,
)

BEARERBOX = Path("/usr/sbin/bearerbox")
SMSBOX = Path("/usr/sbin/smsbox")
FAKESMSC = Path("/usr/lib/kannel/test/fakesmsc")
SENDER = "ACME"
TEXT = "Siparisiniz yola cikti."  # GSM 7-bit, one part: the same text both ways
TO_PREFIX = "90532"  # + the wrk thread's digit and a 6-digit counter: a new number each time
SENDSMS = "/cgi-bin/sendsms"
_GOT = re.compile(rb"Got message \d+:")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# ---------------------------------------------------------------------- Kannel


@dataclass
class Kannel:
    sendsms: str
    user: str
    password: str
    smsc_log: Path
    pids: dict[str, int] = field(default_factory=dict)

    def delivered(self) -> int:
        """Messages the fake SMS centre got so far."""
        return len(_GOT.findall(self.smsc_log.read_bytes()))

    def cpu(self) -> float:
        return cpu_of(self.pids["bearerbox"]) + cpu_of(self.pids["smsbox"])

    def smsc_cpu(self) -> float:
        return cpu_of(self.pids["fakesmsc"])


def kannel_config(tmp: Path, ports: dict[str, int], admin: str, password: str) -> Path:
    spool = tmp / "spool"
    spool.mkdir()
    path = tmp / "kannel.conf"
    path.write_text(
        f"""group = core
admin-port = {ports["admin"]}
admin-password = {admin}
smsbox-port = {ports["smsbox"]}
dlr-storage = internal
store-type = spool
store-location = "{spool}"
log-level = 2
log-file = "{tmp / "bearerbox.log"}"

group = smsc
smsc = fake
smsc-id = fake
port = {ports["smsc"]}
connect-allow-ip = 127.0.0.1

group = smsbox
bearerbox-host = 127.0.0.1
sendsms-port = {ports["sendsms"]}
log-level = 2
log-file = "{tmp / "smsbox.log"}"

group = sendsms-user
username = bench
password = {password}
"""
    )
    return path


async def wait_listening(port: int, what: str) -> None:
    deadline = time.monotonic() + 30
    while True:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} is not listening on {port}")
        await asyncio.sleep(0.05)


@contextlib.asynccontextmanager
async def kannel_running(tmp: Path) -> AsyncIterator[Kannel]:
    ports = {name: free_port() for name in ("admin", "smsbox", "smsc", "sendsms")}
    admin, password = secrets.token_hex(8), secrets.token_hex(8)
    config = kannel_config(tmp, ports, admin, password)
    smsc_log = tmp / "fakesmsc.out"
    procs: dict[str, subprocess.Popen[bytes]] = {}
    try:
        with (tmp / "boxes.out").open("wb") as out, smsc_log.open("wb") as smsc_out:
            procs["bearerbox"] = subprocess.Popen([BEARERBOX, config], stdout=out, stderr=out)  # noqa: S603, ASYNC220
            await wait_listening(ports["smsbox"], "bearerbox")
            await wait_listening(ports["smsc"], "bearerbox")
            procs["smsbox"] = subprocess.Popen([SMSBOX, config], stdout=out, stderr=out)  # noqa: S603, ASYNC220
            # -m 0: it sends nothing itself; stdin kept open, or it ends its interactive mode.
            argv = [FAKESMSC, "-H", "127.0.0.1", "-r", str(ports["smsc"]), "-m", "0"]
            procs["fakesmsc"] = subprocess.Popen(  # noqa: S603, ASYNC220
                argv, stdin=subprocess.PIPE, stdout=smsc_out, stderr=smsc_out
            )
        status = f"http://127.0.0.1:{ports['admin']}/status.txt?password={admin}"
        sendsms = f"http://127.0.0.1:{ports['sendsms']}"
        deadline = time.monotonic() + 30
        async with httpx.AsyncClient(timeout=2) as http:
            while True:
                with contextlib.suppress(httpx.HTTPError):
                    online = "online" in (await http.get(status)).text
                    answer = await http.get(sendsms + "/cgi-bin/sendsms")
                    if online and answer.status_code < 500:
                        break
                if time.monotonic() > deadline:
                    raise RuntimeError("Kannel did not come up: see " + str(tmp))
                await asyncio.sleep(0.1)
        yield Kannel(
            sendsms, "bench", password, smsc_log, {name: p.pid for name, p in procs.items()}
        )
    finally:
        for proc in reversed(list(procs.values())):
            proc.terminate()
        for proc in reversed(list(procs.values())):
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
            if proc.stdin is not None:
                proc.stdin.close()


# ---------------------------------------------------------------------- wrk


async def wrk(
    url: str, *, duration: float, path: str | None = None, body: str | None = None,
    auth: str | None = None,
) -> Load:  # fmt: skip
    """16 connections, 2 threads, a distinct recipient in each request (``@TO@``)."""
    env = os.environ | {"WRK_THREADS": "2", "WRK_TO": TO_PREFIX}
    for name in ("WRK_BODY", "WRK_BODIES", "WRK_AUTH", "WRK_PATH", "WRK_METHOD"):
        env.pop(name, None)
    if body is not None:
        env |= {"WRK_METHOD": "POST", "WRK_BODY": body, "WRK_TO": "+" + TO_PREFIX}
    if path is not None:
        env["WRK_PATH"] = path
    if auth is not None:
        env["WRK_AUTH"] = auth
    argv = ["wrk", "-t", "2", "-c", "16", "-d", f"{duration:g}s", "--timeout", "15s"]
    argv += ["-s", str(LUA), url]
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


# ---------------------------------------------------------------------- our server


def tree_cpu(child: Child) -> float:
    return child.tree_cpu_seconds()


def final_count(db: Path) -> tuple[int, int]:
    """(messages, messages in a final state) in the SQLite store."""
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)) as c:
        rows = dict(
            c.execute("SELECT status, count(*) FROM um_messages GROUP BY status").fetchall()
        )
    final = sum(n for status, n in rows.items() if status in ("delivered", "failed", "expired",
                                                              "rejected", "unknown"))  # fmt: skip
    return sum(rows.values()), final


async def cli(env: dict[str, str], cwd: Path, *argv: str, stdin: str | None = None) -> dict:  # type: ignore[type-arg]
    process = await asyncio.create_subprocess_exec(
        *um_command(), *argv, "--json", env=env, cwd=cwd, stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await process.communicate(None if stdin is None else stdin.encode())
    if process.returncode != 0:
        raise RuntimeError(f"unified-messaging {' '.join(argv)}: {err.decode().strip()}")
    result: dict = json.loads(out)  # type: ignore[type-arg]
    return result


@dataclass
class Round:
    who: str
    load: Load
    cpu_ms: float  # per message, until every message of the round settled
    reached: int
    final: int | None
    settle_s: float
    smsc_cpu_ms: float


class Run:
    def __init__(self, args: argparse.Namespace, tmp: Path) -> None:
        self.args = args
        self.tmp = tmp
        self.rounds: list[Round] = []
        self.lines: list[str] = []

    async def settle(
        self, kannel: Kannel, expect_smsc: int, expect_final: int | None
    ) -> tuple[int, int | None, float]:
        """Wait until fakesmsc has ``expect_smsc`` messages and the store ``expect_final``
        final ones (at most ``--settle`` s), then a quiet second; what was reached."""
        started = time.monotonic()
        reached, final = kannel.delivered(), None
        while time.monotonic() - started < self.args.settle:
            reached = kannel.delivered()
            if expect_final is not None:
                final = final_count(self.db)[1]
            if reached >= expect_smsc and (expect_final is None or (final or 0) >= expect_final):
                break
            await asyncio.sleep(0.2)
        took = time.monotonic() - started
        await asyncio.sleep(1)  # the last report's answer, the last commit
        return reached, final, took

    async def kannel_round(self, kannel: Kannel, duration: float) -> Round:
        path = (
            f"/cgi-bin/sendsms?username={kannel.user}&password={kannel.password}"
            f"&from={SENDER}&to=%2B@TO@&text={quote(TEXT)}&charset=UTF-8&coding=0"
        )
        before_smsc, cpu, smsc_cpu = kannel.delivered(), kannel.cpu(), kannel.smsc_cpu()
        load = await wrk(kannel.sendsms + "/cgi-bin/sendsms", duration=duration, path=path)
        accepted = sum(n for code, n in load.codes.items() if 200 <= code < 300)
        reached, _, took = await self.settle(kannel, before_smsc + accepted, None)
        per = 1000 / max(accepted, 1)
        return Round(
            "kannel", load, (kannel.cpu() - cpu) * per, reached - before_smsc, None, took,
            (kannel.smsc_cpu() - smsc_cpu) * per,
        )  # fmt: skip

    async def our_round(self, kannel: Kannel, server: Child, duration: float) -> Round:
        body = json.dumps({"to": "@TO@", "body": TEXT})
        before_smsc, smsc_cpu = kannel.delivered(), kannel.smsc_cpu()
        before_final = final_count(self.db)[1]
        cpu = tree_cpu(server)
        load = await wrk(
            server.url + "/v1/messages", duration=duration, body=body, auth=f"Bearer {self.key}"
        )
        accepted = sum(n for code, n in load.codes.items() if 200 <= code < 300)
        reached, final, took = await self.settle(
            kannel, before_smsc + accepted, before_final + accepted
        )
        per = 1000 / max(accepted, 1)
        return Round(
            "serve", load, (tree_cpu(server) - cpu) * per, reached - before_smsc,
            (final or 0) - before_final, took, (kannel.smsc_cpu() - smsc_cpu) * per,
        )  # fmt: skip

    async def bulk(self, kannel: Kannel, server: Child) -> None:
        def items(run: int) -> list[dict[str, str]]:
            return [{"to": f"+90555{run:02d}{n:05d}", "body": TEXT} for n in range(200)]

        api = httpx.AsyncClient(
            base_url=server.url, timeout=60, headers={"Authorization": f"Bearer {self.key}"}
        )
        raw = httpx.AsyncClient(
            base_url=kannel.sendsms, timeout=60, limits=httpx.Limits(max_connections=16)
        )
        ours: list[float] = []
        theirs: list[float] = []
        cpu_per_bulk: list[float] = []
        failures: list[str] = []
        async with api, raw:
            for run in range(self.args.bulk_runs + 1):
                params = {"username": kannel.user, "password": kannel.password, "from": SENDER,
                          "text": TEXT, "charset": "UTF-8", "coding": "0"}  # fmt: skip
                started = time.perf_counter()
                answers = await asyncio.gather(
                    *(raw.get(SENDSMS, params={**params, "to": f"+90544{run:02d}{n:05d}"})
                      for n in range(200))
                )  # fmt: skip
                their = time.perf_counter() - started
                failures += [a.text for a in answers if a.status_code != 202][:1]
                before_smsc, before_final = kannel.delivered(), final_count(self.db)[1]
                cpu = tree_cpu(server)
                started = time.perf_counter()
                response = await api.post("/v1/messages/bulk", json={"items": items(run)})
                our = time.perf_counter() - started
                if response.status_code != 201 or response.json().get("sent") != 200:
                    failures.append(f"bulk {response.status_code}: {response.text[:200]}")
                reached, final, _ = await self.settle(kannel, before_smsc + 200, before_final + 200)
                if run:
                    ours.append(our)
                    theirs.append(their)
                    cpu_per_bulk.append(tree_cpu(server) - cpu)
                    self.lines.append(
                        f"bulk run {run}: ours {our * 1e3:.0f} ms,"
                        f" 200 sendsms {their * 1e3:.0f} ms,"
                        f" reached fakesmsc {reached - before_smsc}/200,"
                        f" final {(final or 0) - before_final}/200"
                    )
        b, y = statistics.median(ours), statistics.median(theirs)
        self.lines.append(
            f"bulk-200: ours median {b * 1e3:.0f} ms, 200 sendsms GETs on 16 connections "
            f"{y * 1e3:.0f} ms ({b / y:.2f}×); serve CPU "
            f"{statistics.median(cpu_per_bulk) * 1e3:.0f} ms/bulk = "
            f"{statistics.median(cpu_per_bulk) / 200 * 1e3:.2f} ms/message with its reports"
            + (f"; FAILURES {len(failures)}: {failures[0][:200]}" if failures else "")
        )

    async def run(self) -> None:
        args = self.args
        async with kannel_running(self.tmp) as kannel:
            self.db = self.tmp / "um.db"
            env = dict(os.environ) | {
                "UM_DATABASE_URL": f"sqlite+aiosqlite:///{self.db}",
                "UM_MASTER_KEYS": await master_key(self.tmp),
            }
            env.pop("UM_REDIS_URL", None)
            port = free_port()
            base = f"http://127.0.0.1:{port}"
            argv = [*um_command(), "serve", "--json", "--port", str(port), "--log-level", "warning"]
            # The store is made by the first command; provision before the server starts.
            ws = await cli(env, self.tmp, "workspaces", "create", "bench",
                           "--recipient-limit", "off")  # fmt: skip
            creds = json.dumps(
                {"username": kannel.user, "password": kannel.password, "dlr_url": base}
            )
            await cli(
                env, self.tmp, "connections", "add", "--workspace", ws["id"], "sms_e",
                "--credentials-file", "-", "--default-sender", SENDER, "--approved-sender",
                SENDER, "--base-url", kannel.sendsms, stdin=creds,
            )  # fmt: skip
            key = await cli(env, self.tmp, "keys", "create", "--workspace", ws["id"],
                            "--rate-limit", "1e9", "--rate-burst", "1000000000")  # fmt: skip
            self.key = key["api_key"]
            log_path = self.tmp / "serve.log"
            with log_path.open("ab") as stderr:
                process = await asyncio.create_subprocess_exec(
                    *argv, env=env, cwd=self.tmp, stdout=asyncio.subprocess.PIPE, stderr=stderr
                )
            server = Child("serve", process, {}, log_path)
            try:
                assert process.stdout is not None
                server.info = json.loads(await asyncio.wait_for(process.stdout.readline(), 60))
                log("warm-up")
                await self.kannel_round(kannel, 2)
                await self.our_round(kannel, server, 2)
                for n in range(args.rounds):
                    log(f"round {n + 1}: kannel")
                    self.rounds.append(await self.kannel_round(kannel, args.duration))
                    log(f"round {n + 1}: serve")
                    self.rounds.append(await self.our_round(kannel, server, args.duration))
                if args.py_spy:
                    await self.profiled(kannel, server)
                if args.bulk_runs:
                    log("bulk")
                    await self.bulk(kannel, server)
            finally:
                if process.returncode is None:
                    process.terminate()
                    await process.wait()

    async def profiled(self, kannel: Kannel, server: Child) -> None:
        out = Path(self.args.py_spy)
        out.mkdir(parents=True, exist_ok=True)  # noqa: ASYNC240
        spy_bin = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
        spies = []
        for pid in {server.process.pid, *server_children(server.process.pid)}:
            seconds = f"{int(self.args.duration) + 5}"
            argv = ["record", "--pid", str(pid), "--format", "raw", "--threads"]
            argv += ["--duration", seconds, "--output", str(out / f"serve-{pid}.txt")]
            spies.append(
                await asyncio.create_subprocess_exec(
                    spy_bin,
                    *argv,
                    stdout=asyncio.subprocess.DEVNULL,
                    stderr=asyncio.subprocess.DEVNULL,
                )
            )
        await self.our_round(kannel, server, self.args.duration)
        for spy in spies:
            await spy.wait()
        log(f"profiles in {out}")


def server_children(pid: int) -> list[int]:
    from bench_serve import descendants

    return [p for p in descendants(pid) if p != pid]


TARGETS = {"kannel": "Kannel sendsms", "serve": "serve POST, live sms_e"}


def report(run: Run, args: argparse.Namespace, before: str, minutes: float) -> str:
    head = ["round", "target", "req/s", "p50", "p99", "non-2xx", "CPU ms/msg", "fakesmsc CPU",
            "reached SMSC", "final", "settled in"]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for n, r in enumerate(run.rounds):
        accepted = sum(c for code, c in r.load.codes.items() if 200 <= code < 300)
        lines.append(
            f"| {n // 2 + 1} | {TARGETS[r.who]}"
            f" | {r.load.rate:,.0f} | {r.load.p50_ms:.1f} ms | {r.load.p99_ms:.1f} ms"
            f" | {r.load.non_2xx} | {r.cpu_ms:.3f} | {r.smsc_cpu_ms:.3f}"
            f" | {r.reached:,}/{accepted:,} | "
            + ("—" if r.final is None else f"{r.final:,}/{accepted:,}")
            + f" | {r.settle_s:.1f} s |"
        )
    ours = [r for r in run.rounds if r.who == "serve"]
    theirs = [r for r in run.rounds if r.who == "kannel"]
    summary = []
    if ours and theirs:
        rate = statistics.median(r.load.rate for r in ours)
        their_rate = statistics.median(r.load.rate for r in theirs)
        summary.append(
            f"median: serve {rate:,.0f}/s, Kannel {their_rate:,.0f}/s ({rate / their_rate:.3f}×);"
            f" serve CPU {statistics.median(r.cpu_ms for r in ours):.3f} ms/message with its 2"
            f" reports; Kannel (bearerbox + smsbox) "
            f"{statistics.median(r.cpu_ms for r in theirs):.3f} ms/message"
        )
    command = (
        f"bench_kannel_live.py --duration {args.duration:g} --rounds {args.rounds}"
        f" --bulk-runs {args.bulk_runs}"
    )
    return (
        f"`{command}`; {time.strftime('%Y-%m-%d %H:%M')}, commit {git_commit()},"
        f" {version_of_wrk().split(' [')[0]}, {os.cpu_count()} cores; load average {before}"
        f" before, {load_average()} after; {minutes:.1f} min.\n\n"
        + "\n".join(lines)
        + "\n\n"
        + "\n".join(summary + run.lines)
    )


async def main(args: argparse.Namespace) -> None:
    before = load_average()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench_kannel_") as name:
        run = Run(args, Path(name))
        try:
            await run.run()
        finally:
            if args.keep_logs:
                shutil.copytree(name, args.keep_logs, dirs_exist_ok=True)
    print(report(run, args, before, (time.perf_counter() - started) / 60))


def cli_main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--duration", type=float, default=10, help="seconds per wrk round")
    parser.add_argument("--rounds", type=int, default=2, help="measured rounds of each")
    parser.add_argument("--bulk-runs", type=int, default=3, help="measured bulks (0: none)")
    parser.add_argument("--settle", type=float, default=60, help="most seconds to wait")
    parser.add_argument("--py-spy", metavar="DIR", help="one more round of ours, profiled")
    parser.add_argument("--keep-logs", metavar="DIR", help="copy the run's folder here")
    args = parser.parse_args()
    missing = [str(p) for p in (BEARERBOX, SMSBOX, FAKESMSC) if not p.exists()]
    if missing or shutil.which("wrk") is None:
        raise SystemExit("needs apt-get install -y kannel kannel-extras wrk")
    asyncio.run(main(args))


if __name__ == "__main__":
    cli_main()
