"""Statements, transactions and round trips of the served write/read path, per operation.

    .venv/bin/python benchmarks/count_store_path.py [--backend sqlite,postgresql] [--n 50]

The app as ``serve`` builds it (``create_app(messenger, worker=False)``, the SQL store with
the server's 1 s metadata cache), driven in process through httpx's ``ASGITransport``, one
request at a time, so every statement is one request's own. Counted per operation, after a
warm-up (the cache is warm, as under load):

- ``POST /v1/messages`` with the flood guard off and on (a workspace each; every request
  to another number),
- ``GET /v1/messages/{job_id}``,
- applying a simulated delivery report: the worker's round that claims the report item,
  applies it and completes the item (the worker claims in batches; one report per round
  here, so nothing is shared);
- the live path, from write-ahead to final state: ``POST /v1/messages`` with a live key
  through an ``sms_e`` (Kannel) connection whose ``--base-url`` is a loopback stand-in for
  smsbox (it answers ``202 0: Accepted for delivery`` at once, keep-alive), then Kannel's
  two delivery reports for that message in, as Kannel makes them (``GET`` of the message's
  ``dlr-url``): type 8 (delivered to the SMSC, ``pending``) and type 1 (delivered,
  final). The three rows add up to one live message.

Statements are counted with SQLAlchemy's ``before_cursor_execute`` (an ``executemany`` is
one), transactions by their ``commit`` events. On PostgreSQL the store talks to the server
through a counting proxy: a round trip is one ``ReadyForQuery`` message from the server
(each ends one exchange the client waits for), so ``BEGIN``, ``COMMIT`` and statement
preparation count too. On SQLite a "round trip" is a hop off the event loop: one per group
commit (the writer thread); reads run on the loop's thread.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import struct
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import event
from sqlalchemy.engine import make_url

from unified_messaging import Messenger
from unified_messaging._access.ratelimit import RateLimitPolicy
from unified_messaging._clock import ManualClock
from unified_messaging.asgi import create_app
from unified_messaging.store.sql import SqlStore
from unified_messaging.testing import create_testbed
from unified_messaging.vault._core import Vault

DEFAULT_POSTGRES = "postgresql+asyncpg://postgres@127.0.0.1:5432/test"


class Counts:
    def __init__(self) -> None:
        self.statements = 0
        self.transactions = 0
        self.round_trips = 0
        self.kinds: Counter[str] = Counter()

    def snapshot(self) -> tuple[int, int, int]:
        return self.statements, self.transactions, self.round_trips


class PgProxy:
    """A loopback TCP proxy to PostgreSQL that counts the server's ReadyForQuery messages."""

    def __init__(self, host: str, port: int, counts: Counts) -> None:
        self.host, self.port, self.counts = host, port, counts
        self.server: asyncio.Server | None = None

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._client, "127.0.0.1", 0)
        return int(self.server.sockets[0].getsockname()[1])

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(self.host, self.port)

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(Exception):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            dst.close()

        async def count(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            buffer = b""
            with contextlib.suppress(Exception):
                while data := await src.read(65536):
                    dst.write(data)
                    buffer += data
                    while len(buffer) >= 5:
                        kind = buffer[:1]
                        (length,) = struct.unpack("!I", buffer[1:5])
                        if len(buffer) < 1 + length:
                            break
                        if kind == b"Z":
                            self.counts.round_trips += 1
                        buffer = buffer[1 + length :]
                    await dst.drain()
            dst.close()

        await asyncio.gather(pipe(reader, up_writer), count(up_reader, writer))


def instrument(store: SqlStore, counts: Counts) -> None:
    engines = store._get_engines()
    if engines.sync_write is not None and engines.sync_read is not None:
        base = engines.sync_write._proxied  # the engine both views were made from
        views = [engines.sync_write, engines.sync_read]
    else:
        base = engines.root.sync_engine
        views = [engines.read.sync_engine, engines.write.sync_engine]
    for view in views:
        # An option engine copies its parent's "has events" flag when made, and then runs
        # the parent's listeners only if it is set.
        view._has_events = True
    targets = [base]
    for engine in targets:

        @event.listens_for(engine, "before_cursor_execute")
        def _statement(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
            counts.statements += 1
            counts.kinds[" ".join(statement.split()[:3])[:60]] += 1

        @event.listens_for(engine, "commit")
        def _commit(conn: Any) -> None:
            counts.transactions += 1

    if engines.sync_write is not None:
        writer_run = store._transactions  # one hop per group commit

        def transactions() -> Any:
            made = writer_run()
            original = made.run

            async def run(operations: Any) -> Any:
                counts.round_trips += 1
                return await original(operations)

            made.run = run  # type: ignore[method-assign]
            return made

        store._transactions = transactions  # type: ignore[method-assign]

    _count_hot(counts)


def _count_hot(counts: Counts) -> None:
    # Hot statements run on the driver's cursor, past SQLAlchemy's events: counted here.
    try:
        from unified_messaging.store._sql_hot import Hot
    except ImportError:  # a tree from before them (run with PYTHONPATH, to compare)
        return
    original_execute, original_many = Hot.execute, Hot.executemany
    labels: dict[int, str] = {}

    def label(hot: Any) -> str:  # str() of a statement compiles it: once per statement
        found = labels.get(id(hot))
        if found is None:
            found = labels[id(hot)] = "hot: " + " ".join(str(hot._statement).split()[:3])[:54]
        return found

    def execute(self: Any, conn: Any, params: Any) -> Any:
        counts.statements += 1
        counts.kinds[label(self)] += 1
        return original_execute(self, conn, params)

    def executemany(self: Any, conn: Any, rows: Any) -> None:
        if rows:
            counts.statements += 1
            counts.kinds[label(self)] += 1
        original_many(self, conn, rows)

    from unified_messaging.store import _sql_hot

    original_combined = _sql_hot._combined

    def combined(dialect: Any, runs: Any) -> Any:
        counts.statements += 1
        counts.kinds[f"hot: WITH ({len(runs)} writes in one statement)"] += 1
        return original_combined(dialect, runs)

    _sql_hot._combined = combined
    original_gated = getattr(_sql_hot, "_compare_and_combined", None)
    if original_gated is not None:  # a tree from before it: nothing to count

        def gated(dialect: Any, cas: Any, row: Any, runs: Any) -> Any:
            found = original_gated(dialect, cas, row, runs)
            if found is not None:
                counts.statements += 1
                counts.kinds[f"hot: WITH (a compare-and-set and {len(runs)} writes)"] += 1
            return found

        _sql_hot._compare_and_combined = gated
    Hot.execute = execute  # type: ignore[method-assign]
    Hot.executemany = executemany  # type: ignore[method-assign]


class SmsboxStandIn:
    """Answers every HTTP/1.1 request as smsbox does a good ``sendsms``, keep-alive."""

    ANSWER = (
        b"HTTP/1.1 202 Accepted\r\nContent-Type: text/html\r\nContent-Length: 24\r\n\r\n"
        b"0: Accepted for delivery"
    )

    async def start(self) -> str:
        server = await asyncio.start_server(self._client, "127.0.0.1", 0)
        self.server = server
        return f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(Exception):
            while True:
                await reader.readuntil(b"\r\n\r\n")  # a GET: no body
                writer.write(self.ANSWER)
                await writer.drain()
        writer.close()


async def measure(
    label: str, counts: Counts, n: int, once: Callable[[int], Awaitable[None]]
) -> dict[str, Any]:
    before = counts.snapshot()
    kinds = counts.kinds.copy()
    cpu = time.process_time()
    for i in range(n):
        await once(i)
    cpu = time.process_time() - cpu
    after = counts.snapshot()
    per = [(b - a) / n for a, b in zip(before, after, strict=True)]
    diff = counts.kinds - kinds
    return {
        "op": label,
        "statements": per[0],
        "transactions": per[1],
        "round_trips": per[2],
        "cpu_ms": cpu / n * 1000,
        "kinds": {k: v / n for k, v in diff.most_common()},
    }


@contextlib.asynccontextmanager
async def database(backend: str, tmp: Path, counts: Counts, pg: str) -> AsyncIterator[str]:
    if backend == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp / 'count.db'}"
        return
    import asyncpg

    url = make_url(pg)
    name = f"um_count_{os.getpid()}"
    admin = url.set(drivername="postgresql").render_as_string(hide_password=False)
    conn = await asyncpg.connect(admin)
    await conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
    await conn.execute(f'CREATE DATABASE "{name}"')
    await conn.close()
    proxy = PgProxy(url.host or "127.0.0.1", url.port or 5432, counts)
    port = await proxy.start()
    try:
        yield url.set(database=name, host="127.0.0.1", port=port).render_as_string(
            hide_password=False
        )
    finally:
        assert proxy.server is not None
        proxy.server.close()
        conn = await asyncpg.connect(admin)
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await conn.close()


async def run(backend: str, n: int, pg: str) -> list[dict[str, Any]]:
    counts = Counts()
    with tempfile.TemporaryDirectory() as tmp:
        async with database(backend, Path(tmp), counts, pg) as url:
            connect_args = {"ssl": False} if backend == "postgresql" else None
            store = SqlStore(url, cache_ttl=1e9, connect_args=connect_args)
            clock = ManualClock()
            vault = Vault.load_or_create_key_file(Path(tmp) / "master.key")
            unlimited = RateLimitPolicy(1e9, 1_000_000_000)
            messenger = Messenger(store, clock=clock, vault=vault, default_rate_policy=unlimited)
            await messenger.open()
            off = await create_testbed(messenger=messenger, recipient_limit=None, name="off")
            on = await create_testbed(messenger=messenger, name="on")
            instrument(store, counts)
            app = create_app(messenger, worker=False)
            transport = httpx.ASGITransport(app=app)
            results = []
            async with httpx.AsyncClient(transport=transport, base_url="http://x") as client:
                job_ids: list[str] = []

                def poster(key: str, prefix: str) -> Callable[[int], Awaitable[None]]:
                    async def once(i: int) -> None:
                        body = {"to": f"{prefix}{i:06d}", "body": "Siparişiniz yola çıktı."}
                        answer = await client.post(
                            "/v1/messages", json=body, headers={"Authorization": f"Bearer {key}"}
                        )
                        assert answer.status_code == 201, answer.text
                        job_ids.append(answer.json()["job_id"])

                    return once

                await poster(off.api_key, "+905320")(999_999)  # warm-up
                await poster(on.api_key, "+905321")(999_999)
                results.append(
                    await measure("POST, guard off", counts, n, poster(off.api_key, "+905328"))
                )
                results.append(
                    await measure("POST, guard on", counts, n, poster(on.api_key, "+905329"))
                )

                async def get(i: int) -> None:
                    answer = await client.get(
                        f"/v1/messages/{job_ids[2 + i]}",
                        headers={"Authorization": f"Bearer {off.api_key}"},
                    )
                    assert answer.status_code == 200, answer.text

                results.append(await measure("GET /v1/messages/{id}", counts, n, get))
                worker = messenger.worker(batch=1, concurrency=1)
                clock.advance(timedelta(hours=1))
                await worker.run_once()  # warm-up

                async def report(i: int) -> None:
                    await worker.run_once()

                results.append(await measure("apply a report (worker round)", counts, n, report))
                results += await live_rows(messenger, client, counts, n)
            await messenger.aclose()
            return results


async def live_rows(
    messenger: Messenger, client: httpx.AsyncClient, counts: Counts, n: int
) -> list[dict[str, Any]]:
    """A live sms_e send and Kannel's two reports for it, each counted on its own."""
    smsbox = SmsboxStandIn()
    smsbox_url = await smsbox.start()
    workspace = await messenger.workspaces.create("live", recipient_limit=None)
    connection = await messenger.connections.add(
        workspace.id, "sms_e", default_sender="ACME", base_url=smsbox_url,
        credentials={"username": "u", "password": "p", "dlr_url": "http://x"},
        max_rate=None, max_calls=None,
    )  # fmt: skip
    key = await messenger.keys.create(workspace.id, livemode=True, rate_limit=1e9,
                                      rate_burst=1_000_000_000)  # fmt: skip
    headers = {"Authorization": f"Bearer {key.secret}"}
    dlr_path = f"/v1/dlr/{connection.id}/{connection.dlr_token}"
    job_ids: list[str] = []

    async def send(i: int) -> None:
        body = {"to": f"+90533{i:07d}", "body": "Siparisiniz yola cikti."}
        answer = await client.post("/v1/messages", json=body, headers=headers)
        assert answer.status_code == 201, answer.text
        assert answer.json()["status"] == "sent", answer.text
        job_ids.append(answer.json()["job_id"])

    def reporter(dlr_type: int, answer: str) -> Callable[[int], Awaitable[None]]:
        async def once(i: int) -> None:
            job_id = job_ids[1 + i]
            query = {"id": f"{job_id}.0", "type": str(dlr_type), "answer": answer,
                     "ts": "1764633600", "to": f"+90533{i:07d}"}  # fmt: skip
            got = await client.get(dlr_path, params=query)
            assert got.status_code == 200, got.text
            assert got.json()["matched"] == 1, got.text

        return once

    await send(9_999_999)  # warm-up: the adapter, its pool, the caches
    await reporter(8, "ACK/")(-1)
    await reporter(1, "id:1 sub:001 dlvrd:001 stat:DELIVRD err:000")(-1)
    rows = [
        await measure("live POST (sms_e, Kannel 202)", counts, n, send),
        await measure("live report in, type 8 (pending)", counts, n, reporter(8, "ACK/")),
        await measure(
            "live report in, type 1 (final)", counts, n,
            reporter(1, "id:1 sub:001 dlvrd:001 stat:DELIVRD err:000"),
        ),
    ]  # fmt: skip
    for job_id in job_ids[1:3]:
        got = await client.get(f"/v1/messages/{job_id}", headers=headers)
        assert got.json()["status"] == "delivered", got.text
    smsbox.server.close()
    return rows


async def main(args: argparse.Namespace) -> None:
    for backend in args.backend:
        for result in await run(backend, args.n, args.postgres_url):
            print(
                f"{backend:10} {result['op']:32} statements {result['statements']:5.2f}"
                f"  transactions {result['transactions']:5.2f}"
                f"  round trips {result['round_trips']:5.2f}"
                f"  CPU {result['cpu_ms']:.2f} ms (process, in process)"
            )
            if args.verbose:
                for kind, per in result["kinds"].items():
                    print(f"{'':12}{per:5.2f}  {kind}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--backend", default="sqlite,postgresql")
    parser.add_argument("--n", type=int, default=50)
    parser.add_argument(
        "--postgres-url", default=os.environ.get("UM_TEST_POSTGRES_URL") or DEFAULT_POSTGRES
    )
    parser.add_argument("-v", "--verbose", action="store_true")
    ns = parser.parse_args()
    ns.backend = ns.backend.split(",")
    asyncio.run(main(ns))
    sys.exit(0)
