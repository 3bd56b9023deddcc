"""Benchmark of the SQL store: insert throughput and GET-by-job-id latency.

Bulk-loads N messages (10k by default, 1M with ``--big``) into SQLite and/or PostgreSQL,
then measures:

- bulk insert throughput (``insert_messages`` in batches),
- single-message insert throughput (one committed transaction per message, the shape of
  write-ahead acceptance),
- ``get_message`` latency for random job ids (p50 / p95 / p99), one call at a time.

    python benchmarks/bench_store.py                      # SQLite, 10k rows
    python benchmarks/bench_store.py --backend both       # + PostgreSQL (UM_TEST_POSTGRES_URL)
    python benchmarks/bench_store.py --backend both --big # 1M rows

PostgreSQL runs in a scratch schema that is dropped afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
from sqlalchemy.engine import make_url

from unified_messaging._domain import Attempt, MessageRecord, Workspace
from unified_messaging._ids import new_id
from unified_messaging.store.sql import SqlStore

T0 = datetime(2026, 1, 1, tzinfo=UTC)
WORKSPACE = "ws_bench"


@dataclass
class Result:
    backend: str
    rows: int
    bulk_per_s: float
    single_per_s: float
    get_p50_us: float
    get_p95_us: float
    get_p99_us: float


def message(job_id: str, n: int) -> MessageRecord:
    at = T0 + timedelta(milliseconds=n)
    return MessageRecord(
        job_id=job_id,
        workspace_id=WORKSPACE,
        livemode=n % 10 != 0,
        status="sent",
        to="+905551234567",
        channel="sms",
        provider="sms_a",
        created_at=at,
        updated_at=at,
        text="Kodunuz 123456. Bu kodu kimseyle paylaşmayın.",
        sender="ACME",
        sent_at=at,
        attempts=(Attempt("sms_a", "accepted", at, f"prov-{n}"),),
        segments=1,
        encoding="gsm7_turkish",
    )


@asynccontextmanager
async def sqlite_store() -> AsyncIterator[SqlStore]:
    with tempfile.TemporaryDirectory(prefix="um-bench-") as directory:
        store = SqlStore(f"sqlite+aiosqlite:///{Path(directory) / 'bench.db'}")
        await store.open()
        try:
            yield store
        finally:
            await store.close()


@asynccontextmanager
async def postgres_store(url: str) -> AsyncIterator[SqlStore]:
    dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    schema = f"um_bench_{uuid.uuid4().hex[:10]}"
    admin = await asyncpg.connect(dsn)
    await admin.execute(f'CREATE SCHEMA "{schema}"')
    store = SqlStore(url, connect_args={"server_settings": {"search_path": schema}})
    try:
        await store.open()
        yield store
    finally:
        await store.close()
        await admin.execute(f'DROP SCHEMA "{schema}" CASCADE')
        await admin.close()


async def bulk_load(store: SqlStore, rows: int, batch: int) -> tuple[list[str], float]:
    ids: list[str] = []
    started = time.perf_counter()
    for start in range(0, rows, batch):
        chunk = [message(new_id("job"), n) for n in range(start, min(rows, start + batch))]
        await store.insert_messages(chunk)
        ids.extend(m.job_id for m in chunk)
    return ids, rows / (time.perf_counter() - started)


async def single_inserts(store: SqlStore, count: int) -> float:
    started = time.perf_counter()
    for n in range(count):
        await store.insert_messages([message(new_id("job"), n)])
    return count / (time.perf_counter() - started)


async def get_latencies(store: SqlStore, ids: list[str], lookups: int) -> list[float]:
    rng = random.Random(7)
    sample = [rng.choice(ids) for _ in range(lookups)]
    for job_id in sample[:100]:  # warm the pool and the caches
        await store.get_message(WORKSPACE, True, job_id)
    timings = []
    for n, job_id in enumerate(sample):
        started = time.perf_counter()
        await store.get_message(WORKSPACE, n % 10 != 0, job_id)
        timings.append((time.perf_counter() - started) * 1e6)
    return timings


async def run(backend: str, store: SqlStore, args: argparse.Namespace) -> Result:
    await store.create_workspace(Workspace(WORKSPACE, "Benchmark", T0))
    ids, bulk_rate = await bulk_load(store, args.rows, args.batch)
    single_rate = await single_inserts(store, args.single)
    timings = await get_latencies(store, ids, args.lookups)
    cuts = statistics.quantiles(timings, n=100)
    return Result(backend, args.rows, bulk_rate, single_rate, cuts[49], cuts[94], cuts[98])


def report(results: list[Result]) -> None:
    header = (
        f"{'backend':<10} {'rows':>9} {'bulk ins/s':>11} {'single ins/s':>13} "
        f"{'GET p50 µs':>11} {'p95 µs':>8} {'p99 µs':>8}"
    )
    print(header)
    print("-" * len(header))
    for r in results:
        print(
            f"{r.backend:<10} {r.rows:>9,} {r.bulk_per_s:>11,.0f} {r.single_per_s:>13,.0f} "
            f"{r.get_p50_us:>11,.0f} {r.get_p95_us:>8,.0f} {r.get_p99_us:>8,.0f}"
        )


async def main(args: argparse.Namespace) -> None:
    results = []
    if args.backend in ("sqlite", "both"):
        async with sqlite_store() as store:
            results.append(await run("sqlite", store, args))
    if args.backend in ("postgres", "both"):
        if not args.postgres_url:
            raise SystemExit("PostgreSQL: pass --postgres-url or set UM_TEST_POSTGRES_URL")
        async with postgres_store(args.postgres_url) as store:
            results.append(await run("postgres", store, args))
    report(results)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=["sqlite", "postgres", "both"], default="sqlite")
    parser.add_argument("--rows", type=int, default=10_000, help="messages to bulk-load")
    parser.add_argument("--big", action="store_true", help="bulk-load 1,000,000 messages")
    parser.add_argument("--batch", type=int, default=1_000, help="messages per bulk insert")
    parser.add_argument("--single", type=int, default=500, help="one-by-one inserts to time")
    parser.add_argument("--lookups", type=int, default=5_000, help="GETs to time")
    parser.add_argument(
        "--postgres-url",
        default=os.environ.get("UM_TEST_POSTGRES_URL"),
        help="postgresql+asyncpg:// URL (default: $UM_TEST_POSTGRES_URL)",
    )
    args = parser.parse_args()
    if args.big:
        args.rows = 1_000_000
        args.batch = max(args.batch, 5_000)
    return args


if __name__ == "__main__":
    asyncio.run(main(parse_args()))
