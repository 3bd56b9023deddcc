"""The worker's CPU per simulated report: one at a time against batches.

    .venv/bin/python benchmarks/bench_report_batch.py [--sends 300] [--rounds 2]
        [--backend sqlite,postgresql] [--postgres-url URL]

A messenger on a fresh store (a SQLite file; a PostgreSQL database this script creates and
drops, on ``--postgres-url``, default ``$UM_TEST_POSTGRES_URL``), the store's 1 s cache on as
in ``serve``, makes ``--sends`` test sends (each queues a simulated report), moves its manual
clock past their due time and runs the worker until idle (``batch=50``). The figure is the
process's CPU time (``time.process_time``: every thread, the SQLite writer's included) over
the sends: the worker's cost of one report. ``one by one`` runs the worker without batch
handlers (the path before batches); ``batched`` with them. Rounds alternate.

``pushed``: the same sends to ``+905550000008`` (accepted, no simulated report), then one
pushed report each (``Lifecycle.ingest`` of one report per call, as ``POST /v1/dlr/…`` with
one report per request makes it, 16 at a time): the CPU of applying a pushed report.

Run it with ``PYTHONPATH`` at an older checkout to measure that one (its worker takes no
``batch_handlers``: only the one-by-one figure is printed).
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import os
import tempfile
import time
from datetime import timedelta
from urllib.parse import urlsplit, urlunsplit

from unified_messaging import ManualClock, Messenger, Vault, Worker
from unified_messaging.providers.simulator import SimulatorSettings
from unified_messaging.store.sql import SqlStore
from unified_messaging.testing import create_testbed

DEFAULT_PG = "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
BENCH_DB = "um_bench_report_batch"


async def one_run(url: str, *, batched: bool | None, sends: int) -> float:
    """CPU ms per report; ``batched=None``: a worker that knows no batch handlers."""
    store = SqlStore(url, cache_ttl=1.0)
    messenger = Messenger(
        store,
        clock=ManualClock(),
        vault=Vault.generate(),
        simulator_settings=SimulatorSettings(report_delay=timedelta(seconds=2)),
    )
    bed = await create_testbed(messenger=messenger, recipient_limit=None)
    for n in range(sends):
        await messenger.send(bed.principal, {"to": f"+90555{3000000 + n:07d}", "body": "x"})
    bed.clock.advance(timedelta(seconds=3))  # type: ignore[attr-defined]
    options = {} if batched is None or batched else {"batch_handlers": {}}
    worker = messenger.worker(batch=50, **options)
    started = time.process_time()
    await worker.run_until_idle(max_rounds=100_000)
    cpu = time.process_time() - started
    await messenger.aclose()
    return cpu / sends * 1000


async def pushed_run(url: str, *, sends: int) -> float:
    """CPU ms per pushed report (``Lifecycle.ingest`` with one report per call)."""
    from unified_messaging.providers.simulator import simulated_report

    store = SqlStore(url, cache_ttl=1.0)
    messenger = Messenger(store, clock=ManualClock(), vault=Vault.generate())
    bed = await create_testbed(messenger=messenger, recipient_limit=None)
    jobs = [
        (await messenger.send(bed.principal, {"to": "+905550000008", "body": f"x{n}"})).job_id
        for n in range(sends)
    ]
    connections = {c.provider: c for c in await store.list_connections(bed.workspace.id)}
    reports = []
    for job_id in jobs:
        record = await store.get_message(bed.workspace.id, False, job_id)
        assert record is not None
        attempt = record.attempts[-1]
        assert attempt.provider_message_id is not None
        report = simulated_report(attempt.provider_message_id, "delivered")
        reports.append((connections[attempt.provider], report))
    lifecycle = messenger._lifecycle
    limit = asyncio.Semaphore(16)

    async def push(connection: object, report: object) -> None:
        async with limit:
            await lifecycle.ingest(connection, [report], livemode=False)  # type: ignore[arg-type, list-item]

    started = time.process_time()
    await asyncio.gather(*(push(c, r) for c, r in reports))
    cpu = time.process_time() - started
    await messenger.aclose()
    return cpu / sends * 1000


async def fresh_postgres(server_url: str) -> str:
    import asyncpg

    parts = urlsplit(server_url.replace("+asyncpg", ""))
    admin = await asyncpg.connect(urlunsplit(parts))
    try:
        await admin.execute(f"DROP DATABASE IF EXISTS {BENCH_DB}")
        await admin.execute(f"CREATE DATABASE {BENCH_DB}")
    finally:
        await admin.close()
    return urlunsplit(urlsplit(server_url)._replace(path=f"/{BENCH_DB}"))


async def drop_postgres(server_url: str) -> None:
    import asyncpg

    admin = await asyncpg.connect(urlunsplit(urlsplit(server_url.replace("+asyncpg", ""))))
    try:
        await admin.execute(f"DROP DATABASE IF EXISTS {BENCH_DB}")
    finally:
        await admin.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sends", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--backend", default="sqlite,postgresql")
    parser.add_argument("--only", default="simulated,pushed", help="simulated, pushed")
    pg_url = os.environ.get("UM_TEST_POSTGRES_URL", DEFAULT_PG)
    parser.add_argument("--postgres-url", default=pg_url)
    args = parser.parse_args()
    knows_batches = "batch_handlers" in inspect.signature(Worker).parameters
    modes: list[bool | str | None] = [False, True] if knows_batches else [None]
    modes = [m for m in modes if "simulated" in args.only]
    if "pushed" in args.only:
        modes.append("pushed")
    print(f"load average {os.getloadavg()[0]:.2f}; {args.sends} sends per run")
    for backend in args.backend.split(","):
        for _ in range(args.rounds):
            for batched in modes:
                with tempfile.TemporaryDirectory() as tmp:
                    if backend == "sqlite":
                        url = f"sqlite+aiosqlite:///{tmp}/um.db"
                    else:
                        url = await fresh_postgres(args.postgres_url)
                    try:
                        if batched == "pushed":
                            ms = await pushed_run(url, sends=args.sends)
                        else:
                            mode = batched if isinstance(batched, bool) else None
                            ms = await one_run(url, batched=mode, sends=args.sends)
                    finally:
                        if backend != "sqlite":
                            await drop_postgres(args.postgres_url)
                name = {"pushed": "pushed", True: "batched"}.get(batched, "one by one")
                print(f"{backend:10} {name:10} {ms:.3f} ms CPU per report")
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    asyncio.run(main())
