"""Throughput of the delivery lifecycle: reports in, webhook events out.

    python benchmarks/bench_lifecycle.py [--reports 2000] [--events 2000]
    python benchmarks/bench_lifecycle.py --database-url postgresql+asyncpg://postgres@127.0.0.1/test

(a) Delivery reports ingested per second: ``--reports`` test sends are stored, then every one
gets a simulator-format report (``{"provider_message_id", "status": "delivered"}``) POSTed to
``/v1/dlr/{connection_id}/{token}`` of ``create_app(messenger, worker=False)``, one report
per request or 100 per request, ``--concurrency`` requests in flight. Over httpx's
ASGITransport (the app alone) and over uvicorn on loopback (client and server share this
process's event loop, as a test would run them).

(b) Webhook events delivered per second: ``--events`` events are queued for one endpoint
(``WebhookOutbox.emit``), then ``worker.run_until_idle()`` delivers them to a receiver that
answers 204, run by uvicorn in a process of its own.

Stores: memory and a fresh SQLite file; ``--database-url`` adds that database (its tables
must be empty or absent: the run adds rows and does not remove them).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path

import httpx
import uvicorn

from unified_messaging import Messenger, Vault
from unified_messaging.asgi import create_app
from unified_messaging.providers.simulator import SimulatorSettings
from unified_messaging.store.sql import store_from_url
from unified_messaging.testing import TestBed, create_testbed
from unified_messaging.webhooks._sender import TargetPolicy

# The receiver of (b): a bare ASGI app answering 204, run with ``python -c``.
RECEIVER = """
import sys, uvicorn
async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    await send({"type": "http.response.start", "status": 204, "headers": []})
    await send({"type": "http.response.body", "body": b""})
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning",
            access_log=False, lifespan="off")
"""


def recipient(i: int) -> str:
    return f"+90555{1000000 + i % 1000:07d}"


async def new_bed(url: str | None) -> TestBed:
    # Reports are pushed by the benchmark, not simulated: keep the simulated ones far away.
    messenger = Messenger(
        store_from_url(url),
        vault=Vault.generate(),
        simulator_settings=SimulatorSettings(report_delay=timedelta(days=1)),
        webhook_policy=TargetPolicy(allow_private=True),
    )
    return await create_testbed(messenger=messenger, recipient_limit=None)  # no D28 guard


async def sent_message_ids(bed: TestBed, count: int) -> list[str]:
    """``count`` test sends (in bulks of 200); the provider message id of each."""
    ids: list[str] = []
    while len(ids) < count:
        size = min(200, count - len(ids))
        items = [{"to": recipient(len(ids) + i), "body": "Rapor bekleniyor"} for i in range(size)]
        response = await bed.messenger.send_bulk(bed.principal, {"items": items})
        for item in response.results:
            record = await bed.messenger.store.get_message(bed.workspace.id, False, item.job_id)
            assert record is not None and record.attempts
            message_id = record.attempts[-1].provider_message_id
            assert message_id is not None
            ids.append(message_id)
    return ids


@asynccontextmanager
async def loopback(app: object) -> AsyncIterator[str]:
    config = uvicorn.Config(
        app, host="127.0.0.1", port=0, log_level="warning", lifespan="off", access_log=False
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:  # noqa: ASYNC110 - uvicorn offers no event to wait on
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task


async def in_flight(jobs: list[Callable[[], Awaitable[None]]], concurrency: int) -> None:
    gate = asyncio.Semaphore(concurrency)

    async def one(job: Callable[[], Awaitable[None]]) -> None:
        async with gate:
            await job()

    await asyncio.gather(*(one(job) for job in jobs))


async def bench_reports(
    label: str, url: str | None, reports: int, concurrency: int
) -> list[tuple[str, str, int, float]]:
    rows: list[tuple[str, str, int, float]] = []
    for transport in ("asgi", "uvicorn"):
        for batch in (1, 100):
            bed = await new_bed(url)
            ids = await sent_message_ids(bed, reports)
            connection = next(
                c
                for c in await bed.messenger.connections.available(bed.principal)
                if c.provider == "sms_a"
            )
            path = f"/v1/dlr/{connection.id}/{connection.dlr_token}"
            bodies = [
                json.dumps(
                    [
                        {"provider_message_id": pm, "status": "delivered"}
                        for pm in ids[i : i + batch]
                    ]
                )
                for i in range(0, len(ids), batch)
            ]
            app = create_app(bed.messenger, worker=False)

            async def run(
                client: httpx.AsyncClient, bodies: list[str] = bodies, path: str = path
            ) -> float:
                async def post(body: str) -> None:
                    response = await client.post(
                        path, content=body, headers={"content-type": "application/json"}
                    )
                    assert response.status_code < 300, response.text

                started = time.perf_counter()
                await in_flight([lambda b=body: post(b) for body in bodies], concurrency)
                return time.perf_counter() - started

            if transport == "asgi":
                asgi = httpx.ASGITransport(app=app)
                async with httpx.AsyncClient(
                    transport=asgi, base_url="http://um", timeout=60
                ) as client:
                    elapsed = await run(client)
            else:
                async with (
                    loopback(app) as base,
                    httpx.AsyncClient(base_url=base, timeout=60) as client,
                ):
                    elapsed = await run(client)
            record = await bed.messenger.store.get_message(
                bed.workspace.id, False, ids[-1].split("-")[2]
            )
            assert record is not None and record.status == "delivered", record
            rate = reports / elapsed
            print(f"reports  {label:<10} {transport:<8} batch {batch:>3}: {rate:>8,.0f} reports/s")
            rows.append((label, transport, batch, rate))
            await bed.messenger.aclose()
    return rows


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def bench_webhooks(label: str, url: str | None, events: int, receiver: str) -> float:
    bed = await new_bed(url)
    messenger = bed.messenger
    await messenger.webhooks.create(bed.workspace.id, receiver + "/hook")
    job_id = (await messenger.send(bed.principal, {"to": recipient(0), "body": "x"})).job_id
    record = await messenger.store.get_message(bed.workspace.id, False, job_id)
    assert record is not None
    worker = messenger.worker()
    await worker.run_until_idle()  # the send's own "message.sent"
    for _ in range(events):
        await messenger._webhooks.emit(record, "message.delivered")
    started = time.perf_counter()
    done = await worker.run_until_idle()
    elapsed = time.perf_counter() - started
    assert done == events, done
    endpoint = (await messenger.webhooks.list(bed.workspace.id))[0]
    log = await messenger.webhooks.list_deliveries(endpoint.id)
    assert sum(d.status == "delivered" for d in log) == events + 1
    await messenger.aclose()
    rate = events / elapsed
    print(f"webhooks {label:<10} {events} events in {elapsed:.2f} s = {rate:,.0f} events/s")
    return rate


async def main(reports: int, events: int, url: str | None, concurrency: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        stores: list[tuple[str, str | None]] = [("memory", None)]
        stores.append(("sqlite", f"sqlite+aiosqlite:///{Path(tmp) / 'bench.db'}"))
        if url is not None:
            stores.append((url.split(":")[0].split("+")[0], url))
        for label, store_url in stores:
            # SQLite: 16 writers in flight wait out the 5 s busy time-out and answer 503.
            gate = min(concurrency, 4) if label == "sqlite" else concurrency
            await bench_reports(label, store_url, reports, gate)
        port = free_port()
        receiver = subprocess.Popen([sys.executable, "-c", RECEIVER, str(port)])  # noqa: S603, ASYNC220 - started once, before any timing
        try:
            await asyncio.sleep(1.0)
            for label, store_url in stores:
                await bench_webhooks(label, store_url, events, f"http://127.0.0.1:{port}")
        finally:
            receiver.terminate()
            receiver.wait()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reports", type=int, default=2_000)
    parser.add_argument("--events", type=int, default=2_000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--database-url", default=None, help="also this database")
    args = parser.parse_args()
    asyncio.run(main(args.reports, args.events, args.database_url, args.concurrency))
