"""One-time codes through the product as users run it: ``unified-messaging serve`` on SQLite,
``POST /v1/verifications`` and ``POST /v1/verifications/{id}/check`` over keep-alive HTTP.

    .venv/bin/python benchmarks/bench_verify.py [--count 2000] [--connections 16] [--rounds 3]

Set up as a user would: ``unified-messaging workspaces create`` (the per-recipient flood
guard off), ``connections add sms_a`` and ``keys create --test`` with a rate limit that never
runs dry, then ``unified-messaging serve --json --port 0 --log-level warning`` (its worker on)
on a new SQLite file, as a subprocess (the helpers of ``bench_serve.py``). Load comes from
httpx in this process: ``--connections`` clients, one keep-alive connection each, each
sending its share of ``--count`` requests one after the other.

Rows:

- ``start``: ``POST /v1/verifications``, each to another number, with the SMS-pumping guard
  at its defaults (20 starts per range of +90 5XX YYY in 10 minutes: the numbers are spread
  over 5,000 ranges, so it refuses none and its cost is in the figure). A start is a stored
  verification, a sent test-mode message (the simulator) and its write-ahead.
- ``start, guard off``: the same with both guard rules off (set through the library on the
  file before ``serve`` starts), on a workspace of its own: the guard's cost is the gap.
  The two alternate, ``--rounds`` of each, the server idle before each; medians.
- ``check``: ``POST …/check`` with the right code of as many verifications started before
  (their codes read from ``GET /v1/messages/{job_id}``, test mode, not timed): each approves.
- ``check, wrong code``: the same with a wrong code, on verifications allowing 100 wrong
  codes: each counts one and answers ``pending``.

Every answer's status is counted; a row whose answers are not all the expected one says so.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_serve import git_commit, load_average, master_key, running, settled, um_command

CODE = re.compile(r"(?<![0-9])[0-9]{6}(?![0-9])")
#: Mobile operator codes of Turkey the numbers are spread over (5 × 1,000 ranges).
OPERATORS = ("530", "532", "542", "505", "555")


def numbers(offset: int, count: int) -> list[str]:
    """``count`` numbers, each range (+90 5XX YYY) used as rarely as it can be."""
    found = []
    for n in range(offset, offset + count):
        operator = OPERATORS[n % len(OPERATORS)]
        block = (n // len(OPERATORS)) % 1000
        line = n // (len(OPERATORS) * 1000)
        found.append(f"+90{operator}{block:03d}{line:04d}")
    return found


async def cli(env: dict[str, str], cwd: Path, *argv: str, stdin: str | None = None) -> Any:
    process = await asyncio.create_subprocess_exec(
        *um_command(), *argv, "--json", env=env, cwd=cwd, stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await process.communicate(None if stdin is None else stdin.encode())
    if process.returncode != 0:
        raise RuntimeError(f"unified-messaging {' '.join(argv)}: {err.decode().strip()}")
    return json.loads(out)


async def workspace(env: dict[str, str], cwd: Path, name: str) -> tuple[str, str]:
    """A workspace with an sms_a connection and an unlimited test key: (id, key)."""
    created = await cli(env, cwd, "workspaces", "create", name, "--recipient-limit", "off")
    await cli(
        env, cwd, "connections", "add", "--workspace", created["id"], "sms_a",
        "--credentials-file", "-", "--default-sender", "ACME", "--approved-sender", "ACME",
        stdin=json.dumps({"usercode": "8503334455", "password": "bench-pass"}),
    )  # fmt: skip
    key = await cli(
        env, cwd, "keys", "create", "--workspace", created["id"], "--test",
        "--rate-limit", "1e9", "--rate-burst", "1000000000",
    )  # fmt: skip
    return created["id"], key["api_key"]


async def configure(database_url: str, master: str, guard_off: str, wrong_ok: str) -> None:
    """The two settings no command line sets: the guard off in one workspace, 100 wrong
    codes allowed in another."""
    from unified_messaging import Messenger, Vault
    from unified_messaging.store.sql import SqlStore

    store = SqlStore(database_url)
    messenger = Messenger(store, vault=Vault.from_spec(master))
    await messenger.open()
    try:
        guard = messenger.verifications.guard
        await guard.update_settings(guard_off, prefix_limit=None, address_limit=None)
        await messenger.verifications.update_settings(wrong_ok, max_checks=100)
    finally:
        await messenger.aclose()


class Run:
    def __init__(self, url: str, connections: int) -> None:
        self.url = url
        self.connections = connections

    async def drive(
        self, key: str, requests: Sequence[tuple[str, dict[str, Any]]]
    ) -> tuple[float, list[float], Counter[int], list[httpx.Response]]:
        """Send ``requests`` (path, JSON body) over ``connections`` keep-alive clients;
        (seconds, latencies, status counts, answers in order)."""
        answers: list[httpx.Response | None] = [None] * len(requests)
        latencies: list[float] = []
        queue = list(range(len(requests)))[::-1]
        headers = {"Authorization": f"Bearer {key}"}

        async def client() -> None:
            limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
            async with httpx.AsyncClient(base_url=self.url, limits=limits, timeout=30) as http:
                while queue:
                    index = queue.pop()
                    path, body = requests[index]
                    began = time.perf_counter()
                    answers[index] = await http.post(path, json=body, headers=headers)
                    latencies.append(time.perf_counter() - began)

        began = time.perf_counter()
        await asyncio.gather(*(client() for _ in range(self.connections)))
        seconds = time.perf_counter() - began
        done = [a for a in answers if a is not None]
        return seconds, latencies, Counter(a.status_code for a in done), done


def row(name: str, seconds: float, latencies: list[float], codes: Counter[int], want: int) -> str:
    ordered = sorted(latencies)
    p50 = statistics.median(ordered) * 1000
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000
    count = sum(codes.values())
    note = "" if set(codes) == {want} else f" (statuses {dict(sorted(codes.items()))})"
    return f"| {name} | {count / seconds:,.0f}/s | {p50:.1f} ms | {p99:.1f} ms | {count}{note} |"


async def codes_of(run: Run, key: str, started: list[httpx.Response]) -> list[str]:
    """Each verification's code, read as a test-mode user does: from its message's body."""
    found: list[str] = []
    async with httpx.AsyncClient(base_url=run.url, timeout=30) as http:
        for answer in started:
            if answer.status_code != 201:
                found.append("")
                continue
            job_id = answer.json()["sends"][0]["job_id"]
            headers = {"Authorization": f"Bearer {key}"}
            body = (await http.get(f"/v1/messages/{job_id}", headers=headers)).json()["body"]
            match = CODE.search(body)
            assert match is not None, body
            found.append(match[0])
    return found


async def main(args: argparse.Namespace) -> None:
    before = load_average()
    with tempfile.TemporaryDirectory(prefix="bench_verify_") as name:
        tmp = Path(name)
        master = await master_key(tmp)
        database_url = f"sqlite+aiosqlite:///{tmp / 'um.db'}"
        env = {k: v for k, v in os.environ.items() if k != "UM_REDIS_URL"}
        env |= {"UM_DATABASE_URL": database_url, "UM_MASTER_KEYS": master}
        _, guarded = await workspace(env, tmp, "guarded")
        off_id, unguarded = await workspace(env, tmp, "unguarded")
        wrong_id, lenient = await workspace(env, tmp, "lenient")
        await configure(database_url, master, off_id, wrong_id)
        argv = [*um_command(), "serve", "--json", "--port", "0", "--log-level", "warning"]
        lines = []
        async with running("serve", argv, env=env, cwd=tmp) as serve:
            run = Run(serve.url, args.connections)
            count = args.count

            def starts(offset: int) -> list[tuple[str, dict[str, Any]]]:
                return [("/v1/verifications", {"to": to}) for to in numbers(offset, count)]

            await run.drive(guarded, starts(10**6)[:200])  # warm-up
            # Guarded and unguarded rounds alternate (the machine is shared); medians.
            results: dict[str, list[tuple[float, list[float], Counter[int]]]] = {}
            started: list[httpx.Response] = []
            for round_ in range(args.rounds):
                for label, key in (("start", guarded), ("start, guard off", unguarded)):
                    seconds, lat, codes, answers = await run.drive(key, starts(round_ * count))
                    results.setdefault(label, []).append((seconds, lat, codes))
                    if key == guarded and not started:
                        started = answers
                    odd = [a for a in answers if a.status_code != 201]
                    if odd:
                        print(f"{label}: {len(odd)} answers not 201, e.g. {odd[0].text[:300]}")
                    await settled(serve)
            for label, runs in results.items():
                seconds, lat, codes = sorted(runs, key=lambda r: r[0])[len(runs) // 2]
                lines.append(row(label, seconds, lat, codes, 201))
            right = await codes_of(run, guarded, started)
            checks = [(f"/v1/verifications/{a.json()['id']}/check", {"code": c})
                      for a, c in zip(started, right, strict=True) if c]  # fmt: skip
            seconds, lat, codes, _ = await run.drive(guarded, checks)
            lines.append(row("check", seconds, lat, codes, 200))
            _, _, _, pending = await run.drive(lenient, starts(2 * 10**6))
            await settled(serve)
            wrong = [(f"/v1/verifications/{a.json()['id']}/check", {"code": "000000x"})
                     for a in pending if a.status_code == 201]  # fmt: skip
            seconds, lat, codes, _ = await run.drive(lenient, wrong)
            lines.append(row("check, wrong code", seconds, lat, codes, 200))
            if any("503" in line for line in lines):
                print(f"serve's log ends:\n{serve.tail(40)}")
    print(
        f"\n`bench_verify.py --count {args.count} --connections {args.connections} "
        f"--rounds {args.rounds}`; "
        f"{time.strftime('%Y-%m-%d %H:%M')}, commit {git_commit()}, {os.cpu_count()} cores; "
        f"load average {before} before, {load_average()} after.\n"
    )
    print("| request | rate | p50 | p99 | answers |")
    print("|---|---|---|---|---|")
    print("\n".join(lines))


def cli_main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=2000, help="requests per row")
    parser.add_argument("--connections", type=int, default=16, help="keep-alive clients")
    parser.add_argument("--rounds", type=int, default=3, help="start rounds of each kind")
    asyncio.run(main(parser.parse_args()))


if __name__ == "__main__":
    cli_main()
