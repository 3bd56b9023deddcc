"""Circuit breaker (D26) under a hanging provider, through the real ``unified-messaging serve``:

    .venv/bin/python benchmarks/bench_breaker.py [--sends 200] [--database-url URL]

``sms_a`` is a loopback NetGSM fake (``tests/fakes/netgsm.py``) wrapped in fault injection
(``tests/fakes/faults.py``) that never answers; ``sms_b`` is a healthy İletimerkezi fake.
Both run in this script's event loop. The workspace, its connections (default breaker:
open after 5 unavailable calls in a row, 30 s cool-down) and a live key are made with the
library on a fresh SQLite file (or ``--database-url``); then ``serve --json --port 0`` runs as
a subprocess on it with its defaults (NetGSM's read time-out: 15 s) and the breakers in the
store (no Redis).

1. ``--sends`` single sends (``fallback: ["sms_b"]``) one after another over HTTP: each one's
   latency, provider and attempts. Before the breaker opens, a send waits out the read
   time-out and falls back; once it is open, sms_a is skipped with no call. Reported: how
   many sends paid the time-out, p50/p95/max of the sends after the breaker opened (target:
   p95 <= 0.5 s), and the calls sms_a received.
2. Recovery: sms_a is healed, then one send every ``--probe-every`` seconds until one goes
   through sms_a (the half-open probe, after the cool-down): the time from the heal to it
   (target: within one cool-down, 30 s).

Before and after: the load average (the machine is shared).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from fakes._server import serve  # noqa: E402
from fakes.faults import Faults  # noqa: E402
from fakes.iletimerkezi import IletimerkeziFake  # noqa: E402
from fakes.netgsm import NetgsmFake  # noqa: E402

from unified_messaging import Messenger, Vault  # noqa: E402
from unified_messaging.store.sql import store_from_url  # noqa: E402
from unified_messaging.vault._core import generate_key_spec  # noqa: E402


async def set_up(database_url: str, keys: str, a: str, b: str, netgsm: NetgsmFake,
                 ilet: IletimerkeziFake) -> tuple[str, str]:  # fmt: skip
    messenger = Messenger(store_from_url(database_url), vault=Vault.from_spec(keys))
    async with messenger:
        workspace = await messenger.workspaces.create("bench", recipient_limit=None)
        await messenger.connections.add(
            workspace.id, "sms_a", base_url=a, default_sender="ACME",
            credentials={"usercode": netgsm.usercode, "password": netgsm.password},
        )  # fmt: skip
        await messenger.connections.add(
            workspace.id, "sms_b", base_url=b, default_sender="ACME",
            credentials={"api_key": ilet.key, "api_hash": ilet.hash},
        )  # fmt: skip
        key = await messenger.keys.create(workspace.id, livemode=True, rate_limit=1000)
        return workspace.id, key.secret


@contextlib.asynccontextmanager
async def serving(database_url: str, keys: str, log: Path) -> AsyncIterator[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("UM_")}
    env["UM_MASTER_KEYS"] = keys
    args = ["serve", "--port", "0", "--json", "--log-level", "warning",
            "--database-url", database_url]  # fmt: skip
    with log.open("a") as stderr:
        proc = subprocess.Popen(  # noqa: S603, ASYNC220 - our interpreter and fixed arguments
            [sys.executable, "-m", "unified_messaging", *args],
            env=env, stdout=subprocess.PIPE, stderr=stderr, text=True,
        )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = await asyncio.to_thread(proc.stdout.readline)
        if not line:
            raise SystemExit(f"serve did not start:\n{log.read_text()}")  # noqa: ASYNC240
        yield json.loads(line)["url"]
    finally:
        proc.terminate()
        await asyncio.to_thread(proc.wait, 60)
        if proc.stdout is not None:
            proc.stdout.close()


@contextlib.asynccontextmanager
async def healed_at_the_end(faults: Faults) -> AsyncIterator[None]:
    """Heal on the way out, whatever happened: the fake's server waits for hanging requests."""
    try:
        yield
    finally:
        faults.heal()


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered) + 0.5) - 1))]


async def run(options: argparse.Namespace) -> dict[str, Any]:
    keys = generate_key_spec("bench")
    netgsm, ilet = NetgsmFake(), IletimerkeziFake()
    sms_a = Faults(netgsm.app)
    with tempfile.TemporaryDirectory() as tmp:
        database_url = options.database_url or f"sqlite+aiosqlite:///{tmp}/bench.db"
        log = Path(tmp) / "serve.log"
        async with serve(sms_a) as a, serve(ilet.app) as b:
            _, api_key = await set_up(database_url, keys, a, b, netgsm, ilet)
            headers = {"Authorization": f"Bearer {api_key}"}
            async with (
                serving(database_url, keys, log) as url,
                httpx.AsyncClient(headers=headers, timeout=60) as client,
                healed_at_the_end(sms_a),
            ):
                sms_a.hang()
                counter = 0

                async def send() -> tuple[float, dict[str, Any]]:
                    nonlocal counter
                    counter += 1
                    body = {"to": "+905551234567", "body": f"Kod {counter:05d}",
                            "fallback": ["sms_b"]}  # fmt: skip
                    start = time.perf_counter()
                    response = await client.post(f"{url}/v1/messages", json=body)
                    elapsed = time.perf_counter() - start
                    if response.status_code != 201:
                        raise SystemExit(f"send answered {response.status_code}: {response.text}")
                    return elapsed, response.json()

                rows: list[tuple[float, str, list[str]]] = []
                for _ in range(options.sends):
                    elapsed, answer = await send()
                    attempts = [(a.get("error") or {}).get("code") for a in answer["attempts"]]
                    rows.append((elapsed, answer["provider"], attempts))
                calls_while_hanging = sms_a.requests

                sms_a.heal()
                healed = time.perf_counter()
                probes = 0
                while True:
                    probes += 1
                    _, answer = await send()
                    if answer["provider"] == "sms_a":
                        break
                    if time.perf_counter() - healed > options.recovery_limit:
                        raise SystemExit("sms_a was not found again within the limit")
                    await asyncio.sleep(options.probe_every)
                recovered = time.perf_counter() - healed

    paid = [r for r in rows if "PROVIDER_CIRCUIT_OPEN" not in r[2]]
    opened_at = next((i for i, r in enumerate(rows) if "PROVIDER_CIRCUIT_OPEN" in r[2]), None)
    after = [r[0] for r in rows[opened_at:]] if opened_at is not None else []
    return {
        "sends": len(rows),
        "sends_that_paid_the_time_out": len(paid),
        "breaker_open_after_send": opened_at,
        "time_out_s": round(statistics.mean(r[0] for r in paid), 3) if paid else None,
        "after_open": {
            "count": len(after),
            "p50_ms": round(percentile(after, 50) * 1000, 1) if after else None,
            "p95_ms": round(percentile(after, 95) * 1000, 1) if after else None,
            "max_ms": round(max(after) * 1000, 1) if after else None,
        },
        "all_through_sms_b": all(r[1] == "sms_b" for r in rows),
        "sms_a_calls_while_hanging": calls_while_hanging,
        "recovery_s": round(recovered, 2),
        "recovery_sends": probes,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sends", type=int, default=200)
    parser.add_argument("--database-url", help="default: a fresh SQLite file")
    parser.add_argument("--probe-every", type=float, default=0.5,
                        help="seconds between sends while waiting for recovery")  # fmt: skip
    parser.add_argument("--recovery-limit", type=float, default=120.0)
    options = parser.parse_args()
    print(f"load average before: {os.getloadavg()}", flush=True)
    result = asyncio.run(run(options))
    print(json.dumps(result, indent=2))
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
