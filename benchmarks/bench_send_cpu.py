"""CPU per test send, the store's client side and PostgreSQL's server side, in process.

    .venv/bin/python benchmarks/bench_send_cpu.py [--backend sqlite,postgresql] [--n 1500]
        [--concurrency 16] [--no-stats-triggers] [--postgres-url URL]

The app as ``serve`` builds it (``create_app(messenger)`` with its worker, the SQL store
with the server's 1 s metadata cache), driven in process through httpx's ``ASGITransport``
by ``--concurrency`` clients: ``--n`` test-key ``POST /v1/messages`` (one recipient, flood
guard off) after a warm-up, then until the worker has applied their simulated reports (due
2 s after each send) and the process is idle. Printed per send: this process's user and
system CPU (everything but HTTP parsing, which is the same on both stores), and on
PostgreSQL the CPU of the database's server backends (``/proc`` of each backend connected
to the benchmark's database, which this script creates and drops): the server shares the
machine's cores, so its work per send limits ``serve``'s rate as much as ``serve``'s own.
CPU time moves far less with the machine's load than a rate does.

``--no-stats-triggers`` disables the triggers that log each message write for the delivery
figures (``um_stat_changes``, migration 0027) after the store is set up (SQLite: drops
them): their cost on the send path is the difference.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

import asyncpg
import httpx
from sqlalchemy.engine import make_url

from unified_messaging import Messenger
from unified_messaging._access.ratelimit import RateLimitPolicy
from unified_messaging.asgi import app_lifespan, create_app
from unified_messaging.store.sql import SqlStore
from unified_messaging.testing import create_testbed
from unified_messaging.vault._core import Vault

DEFAULT_POSTGRES = "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
BODY = {"to": "+905321234567", "body": "Siparişiniz yola çıktı."}
_TRIGGERS = ("um_stats_message_insert", "um_stats_message_update")


def process_cpu() -> tuple[float, float]:
    times = os.times()
    return times.user, times.system


async def backends_cpu(admin: str, database: str) -> float:
    """User + system CPU of the server backends connected to ``database`` (Linux /proc)."""
    conn = await asyncpg.connect(admin)
    try:
        rows = await conn.fetch("SELECT pid FROM pg_stat_activity WHERE datname = $1", database)
    finally:
        await conn.close()
    return sum(cpu_of(pid) for (pid,) in rows)


def cpu_of(pid: int) -> float:
    """User + system CPU of process ``pid`` (0 if it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def idle(settle: float = 0.5, quiet: float = 0.01) -> None:
    """Until this process used under ``quiet`` CPU seconds in ``settle`` seconds."""
    before = sum(process_cpu())
    while True:
        await asyncio.sleep(settle)
        now = sum(process_cpu())
        if now - before < quiet:
            return
        before = now


async def run(backend: str, args: argparse.Namespace) -> str:
    pg = make_url(args.postgres_url)
    name = f"um_send_cpu_{os.getpid()}"
    admin = pg.set(drivername="postgresql").render_as_string(hide_password=False)
    with tempfile.TemporaryDirectory() as tmp:
        if backend == "postgresql":
            conn = await asyncpg.connect(admin)
            await conn.execute(f'CREATE DATABASE "{name}"')
            await conn.close()
            url = pg.set(database=name).render_as_string(hide_password=False)
            store = SqlStore(url, cache_ttl=1.0, connect_args={"ssl": False})
        else:
            store = SqlStore(f"sqlite+aiosqlite:///{tmp}/send.db", cache_ttl=1.0)
        try:
            return await measure(backend, store, Path(tmp), args, admin, name)
        finally:
            if backend == "postgresql":
                conn = await asyncpg.connect(admin)
                await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
                await conn.close()


async def measure(
    backend: str,
    store: SqlStore,
    tmp: Path,
    args: argparse.Namespace,
    admin: str,
    database: str,
) -> str:
    vault = Vault.load_or_create_key_file(tmp / "master.key")
    unlimited = RateLimitPolicy(1e9, 1_000_000_000)
    messenger = Messenger(store, vault=vault, default_rate_policy=unlimited)
    await messenger.open()
    bed = await create_testbed(messenger=messenger, recipient_limit=None, name="cpu")
    if args.no_stats_triggers:
        await disable_stats_triggers(store)
    app = create_app(messenger, worker=True)
    headers = {"Authorization": f"Bearer {bed.api_key}"}
    postgres = backend == "postgresql"
    async with app_lifespan(app)(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://x") as client:

            async def sends(n: int) -> None:
                todo = iter(range(n))

                async def one_client() -> None:
                    for _ in todo:
                        answer = await client.post("/v1/messages", json=BODY, headers=headers)
                        assert answer.status_code == 201, answer.text

                await asyncio.gather(*(one_client() for _ in range(args.concurrency)))

            await sends(200)  # warm-up: caches, prepared statements, pools
            await asyncio.sleep(3)
            await idle()
            server = await backends_cpu(admin, database) if postgres else 0.0
            user, system = process_cpu()
            await sends(args.n)
            await idle()  # the worker applied the reports
            user2, system2 = process_cpu()
            server = (await backends_cpu(admin, database) - server) if postgres else 0.0
    await messenger.aclose()
    per = 1000 / args.n
    line = (
        f"{backend:10} this process {(user2 - user + system2 - system) * per:.3f} ms per send "
        f"(user {(user2 - user) * per:.3f}, system {(system2 - system) * per:.3f})"
    )
    if postgres:
        line += f"; PostgreSQL backends {server * per:.3f} ms per send"
    return line


async def disable_stats_triggers(store: SqlStore) -> None:
    # SQLite has no DISABLE TRIGGER; its database is this run's own, so they go.
    sqlite = store._dialect == "sqlite"
    async with store._get_engines().write.begin() as conn:
        for trigger in _TRIGGERS:
            await conn.exec_driver_sql(
                f"DROP TRIGGER {trigger}"
                if sqlite
                else f"ALTER TABLE um_messages DISABLE TRIGGER {trigger}"
            )


async def main(args: argparse.Namespace) -> None:
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(f"{started}; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for backend in args.backend:
        print(await run(backend, args), flush=True)
    print(f"load average after {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--backend", default="sqlite,postgresql")
    parser.add_argument("--n", type=int, default=1500)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--no-stats-triggers", action="store_true")
    parser.add_argument(
        "--postgres-url", default=os.environ.get("UM_TEST_POSTGRES_URL") or DEFAULT_POSTGRES
    )
    ns = parser.parse_args()
    ns.backend = ns.backend.split(",")
    asyncio.run(main(ns))
    sys.exit(0)
