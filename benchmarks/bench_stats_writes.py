"""What the delivery counts cost the send path: the same sends with the counting triggers of
migration 0027 and with them dropped, on SQLite and PostgreSQL.

Each round is a fresh database: a test-mode workspace (the simulator, no flood guard), then
``--sends`` single sends with ``--concurrency`` in flight through the library, then the
worker until every simulated delivery report is applied (each message written three times:
write-ahead, outcome, report: each write fires a trigger). Rounds alternate with and
without the triggers, so load on the machine falls on both alike.

    python benchmarks/bench_stats_writes.py                          # SQLite
    python benchmarks/bench_stats_writes.py --backend postgresql     # UM_TEST_POSTGRES_URL
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path

import asyncpg
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from unified_messaging import Messenger, Vault
from unified_messaging.store.sql import SqlStore
from unified_messaging.testing import create_testbed

TRIGGERS = (
    ("um_stats_message_insert", "um_messages"),
    ("um_stats_message_update", "um_messages"),
    ("um_stats_verification_insert", "um_verifications"),
    ("um_stats_verification_update", "um_verifications"),
)


def recipient(i: int) -> str:
    return f"+90555{1000000 + i % 1000:07d}"


async def _drop_triggers(store: SqlStore) -> None:
    engine = store._get_engines().write
    async with engine.begin() as connection:
        for name, table in TRIGGERS:
            on = "" if store.dialect == "sqlite" else f" ON {table}"
            await connection.execute(sa.text(f"DROP TRIGGER {name}{on}"))


async def one_round(url: str, args: argparse.Namespace, *, triggers: bool) -> tuple[float, float]:
    """Sends per second, and reports applied per second, of one fresh database."""
    store = SqlStore(url, connect_args=_connect_args(url))
    messenger = Messenger(store, vault=Vault.generate())
    bed = await create_testbed(messenger=messenger, recipient_limit=None)
    if not triggers:
        await _drop_triggers(store)
    principal = bed.principal
    for i in range(100):  # warm: caches, statements
        await messenger.send(principal, {"to": recipient(i), "body": "warm up"})
    await messenger.worker().run_until_idle()
    gate = asyncio.Semaphore(args.concurrency)

    async def one(i: int) -> None:
        async with gate:
            await messenger.send(principal, {"to": recipient(i), "body": "Siparişiniz yolda."})

    started = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(args.sends)))
    sent = time.perf_counter() - started
    started = time.perf_counter()
    await messenger.worker(batch=200).run_until_idle(max_rounds=100_000)
    reported = time.perf_counter() - started
    await messenger.aclose()
    return args.sends / sent, args.sends / reported


_SCHEMA: dict[str, str] = {}


def _connect_args(url: str) -> dict[str, object]:
    schema = _SCHEMA.get(url)
    return {} if schema is None else {"server_settings": {"search_path": schema}}


async def _postgres_schema(url: str) -> tuple[str, str]:
    schema = f"um_bench_{uuid.uuid4().hex[:10]}"
    dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    connection = await asyncpg.connect(dsn)
    await connection.execute(f'CREATE SCHEMA "{schema}"')
    await connection.close()
    return dsn, schema


async def _drop_schema(dsn: str, schema: str) -> None:
    connection = await asyncpg.connect(dsn)
    await connection.execute(f'DROP SCHEMA "{schema}" CASCADE')
    await connection.close()


async def main(args: argparse.Namespace) -> None:
    results: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    with tempfile.TemporaryDirectory(prefix="um-bench-stats-") as directory:
        for round_ in range(args.rounds):
            for triggers in (True, False) if round_ % 2 == 0 else (False, True):
                if args.backend == "sqlite":
                    url = f"sqlite+aiosqlite:///{Path(directory) / f'{round_}{triggers}.db'}"
                    results[triggers].append(await one_round(url, args, triggers=triggers))
                    continue
                base = os.environ["UM_TEST_POSTGRES_URL"]
                dsn, schema = await _postgres_schema(base)
                try:
                    results[triggers].append(await _in_schema(base, schema, args, triggers))
                finally:
                    await _drop_schema(dsn, schema)
    print(
        f"{args.backend}: {args.sends} sends x {args.rounds} rounds, {args.concurrency} in flight"
    )
    print(f"{'triggers':<10} {'sends/s (median)':>18} {'reports/s (median)':>20}")
    for triggers in (True, False):
        sends = statistics.median(s for s, _ in results[triggers])
        reports = statistics.median(r for _, r in results[triggers])
        print(f"{'on' if triggers else 'off':<10} {sends:18,.0f} {reports:20,.0f}")


async def _in_schema(
    base: str, schema: str, args: argparse.Namespace, triggers: bool
) -> tuple[float, float]:
    _SCHEMA[base] = schema
    try:
        return await one_round(base, args, triggers=triggers)
    finally:
        del _SCHEMA[base]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument("--sends", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=4)
    asyncio.run(main(parser.parse_args()))
