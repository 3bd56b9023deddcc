"""CPU of the store side of a GET, a send's admission check and a bulk.

    .venv/bin/python benchmarks/bench_hot_reads.py [--backend sqlite,postgresql] [--n 5000]

In process, one call at a time, ``time.process_time`` per call (every thread of the
process, so SQLite's writer thread counts), on a store as ``serve`` opens it (1 s cache):

- ``get_message`` (the read of ``GET /v1/messages/{id}`` and of the worker's report),
- ``suppressed`` for one recipient (a single send's admission check),
- a bulk of 200's store calls: ``accept_messages`` (200 messages, 200 submit checks), then
  ``finish_messages`` (200 outcomes, 200 DLR time-outs, 200 refs, the checks removed);
  its wall time too, which on PostgreSQL is mostly the server's.

Compare two checkouts by running this file with ``PYTHONPATH`` set to the other one.
PostgreSQL (``UM_TEST_POSTGRES_URL``) runs in a scratch schema that is dropped afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
from sqlalchemy.engine import make_url

from unified_messaging._domain import Attempt, MessageRecord, Workspace
from unified_messaging.store.base import ProviderRef, WorkItem
from unified_messaging.store.sql import SqlStore

NOW = datetime.now(UTC)
WORKSPACE = "ws_hot"
TO = "+905551112233"


@asynccontextmanager
async def opened(backend: str, postgres: str) -> AsyncIterator[SqlStore]:
    if backend == "sqlite":
        with tempfile.TemporaryDirectory(prefix="um-hot-") as directory:
            store = SqlStore(f"sqlite:///{Path(directory) / 'hot.db'}", cache_ttl=1.0)
            await store.open()
            try:
                yield store
            finally:
                await store.close()
        return
    dsn = make_url(postgres).set(drivername="postgresql").render_as_string(hide_password=False)
    schema = f"um_hot_{uuid.uuid4().hex[:10]}"
    admin = await asyncpg.connect(dsn)
    await admin.execute(f'CREATE SCHEMA "{schema}"')
    settings = {"server_settings": {"search_path": schema}}
    store = SqlStore(postgres, cache_ttl=1.0, connect_args=settings)
    try:
        await store.open()
        yield store
    finally:
        await store.close()
        await admin.execute(f'DROP SCHEMA "{schema}" CASCADE')
        await admin.close()


async def per_call(n: int, once: Callable[[int], Awaitable[object]]) -> tuple[float, float]:
    """CPU and wall seconds per call, after a warm-up."""
    for i in range(min(n, 200)):
        await once(-1 - i)
    cpu, wall = time.process_time(), time.perf_counter()
    for i in range(n):
        await once(i)
    return (time.process_time() - cpu) / n, (time.perf_counter() - wall) / n


def bulk_of(run: int) -> list[MessageRecord]:
    return [
        MessageRecord(
            job_id=f"msg_{run}_{i}",
            workspace_id=WORKSPACE,
            livemode=True,
            status="queued",
            to=f"+90555{i:07d}",
            channel="sms",
            provider="sms_a",
            created_at=NOW,
            updated_at=NOW,
            text=f"Kampanya {run}.{i}",
            phase="submitting",
        )
        for i in range(200)
    ]


async def run(backend: str, n: int, postgres: str) -> str:
    async with opened(backend, postgres) as store:
        await store.create_workspace(Workspace(WORKSPACE, "hot", NOW))
        stored = MessageRecord(
            job_id="msg_read",
            workspace_id=WORKSPACE,
            livemode=True,
            status="sent",
            to=TO,
            channel="sms",
            provider="sms_a",
            created_at=NOW,
            updated_at=NOW,
            text="Siparişiniz yola çıktı.",
            sent_at=NOW,
            attempts=(Attempt("sms_a", "accepted", NOW, "pm_1"),),
        )
        await store.insert_messages([stored])

        async def get(_: int) -> object:
            return await store.get_message(WORKSPACE, True, "msg_read")

        async def suppressed(_: int) -> object:
            return await store.suppressed(WORKSPACE, True, "sms", [TO])

        async def bulk(run: int) -> None:
            records = bulk_of(run)
            checks = [
                WorkItem(f"chk_{r.job_id}", "check", r.job_id, NOW + timedelta(minutes=5), NOW)
                for r in records
            ]
            await store.accept_messages(records, work=checks)
            done = [
                dataclasses.replace(r, status="sent", phase="settled", version=1, sent_at=NOW)
                for r in records
            ]
            timeouts = [
                WorkItem(
                    f"dlr_{r.job_id}",
                    "dlr_timeout",
                    r.job_id,
                    NOW + timedelta(hours=1),
                    NOW,
                    payload={"connection_id": "conn_1"},
                )
                for r in records
            ]
            refs = [
                ProviderRef("conn_1", f"pm_{r.job_id}", r.job_id, WORKSPACE, True) for r in records
            ]
            await store.finish_messages(done, work=timeouts, refs=refs, done=[c.id for c in checks])

        get_cpu, _ = await per_call(n, get)
        sup_cpu, _ = await per_call(n, suppressed)
        bulk_cpu, bulk_wall = await per_call(max(3, n // 500), bulk)
    return (
        f"{backend:<10} get_message {get_cpu * 1e6:6.1f} µs CPU | suppressed (1) "
        f"{sup_cpu * 1e6:6.1f} µs CPU | bulk of 200's store calls {bulk_cpu * 1e3:5.1f} ms CPU, "
        f"{bulk_wall * 1e3:5.1f} ms wall"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="sqlite,postgresql")
    parser.add_argument("--n", type=int, default=5000)
    args = parser.parse_args()
    postgres = os.environ.get("UM_TEST_POSTGRES_URL", "")
    for backend in args.backend.split(","):
        if backend == "postgresql" and not postgres:
            print("postgresql: set UM_TEST_POSTGRES_URL")
            continue
        print(await run(backend, args.n, postgres), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
