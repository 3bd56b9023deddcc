"""Throughput of the façade with the simulator (issue targets, memory store: >= 5,000 single
sends/s on one core, a 200-item bulk in <= 50 ms).

    python benchmarks/bench_messenger.py [--sends 20000] [--bulks 50]
    python benchmarks/bench_messenger.py --database-url sqlite+aiosqlite:///./bench.db
    python benchmarks/bench_messenger.py --database-url postgresql+asyncpg://postgres@127.0.0.1/test

With a database URL it also measures sends with ``--concurrency`` of them in flight, which
is how a server with many clients uses it: each send writes its record twice (before and
after the provider call), and concurrent sends share the database's commit work.

Recipients cycle through 1,000 distinct numbers, so the recipient cache is exercised the
way a real sender's traffic would (many repeats, some new numbers), not a single hot key.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from unified_messaging import Messenger, Vault
from unified_messaging.store.sql import store_from_url
from unified_messaging.testing import create_testbed


def recipient(i: int) -> str:
    return f"+90555{1000000 + i % 1000:07d}"


async def main(sends: int, bulks: int, url: str | None, concurrency: int) -> None:
    messenger = None if url is None else Messenger(store_from_url(url), vault=Vault.generate())
    bed = await create_testbed(messenger=messenger, recipient_limit=None)  # no D28 guard
    messenger, principal = bed.messenger, bed.principal
    # Warm-up: imports, caches, first-call paths.
    for i in range(500):
        await messenger.send(principal, {"to": recipient(i), "body": "warm up"})
    bed.outbox.clear()

    started = time.perf_counter()
    for i in range(sends):
        await messenger.send(principal, {"to": recipient(i), "body": "Siparişiniz yola çıktı."})
    elapsed = time.perf_counter() - started
    print(f"single sends: {sends} in {elapsed:.3f} s = {sends / elapsed:,.0f} sends/s")

    if url is not None:
        gate = asyncio.Semaphore(concurrency)

        async def one(i: int) -> None:
            async with gate:
                await messenger.send(principal, {"to": recipient(i), "body": "Paralel gönderim"})

        started = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(sends)))
        elapsed = time.perf_counter() - started
        print(f"concurrent sends ({concurrency} in flight): {sends / elapsed:,.0f} sends/s")

    items = [{"to": recipient(i), "body": f"Kampanya {i}"} for i in range(200)]
    timings = []
    for _ in range(bulks):
        started = time.perf_counter()
        response = await messenger.send_bulk(principal, {"items": items})
        timings.append(time.perf_counter() - started)
        assert response.sent == 200
    timings.sort()
    p95 = timings[int(len(timings) * 0.95) - 1]
    print(
        f"200-item bulk: median {statistics.median(timings) * 1000:.1f} ms, "
        f"p95 {p95 * 1000:.1f} ms, best {timings[0] * 1000:.1f} ms ({bulks} runs)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sends", type=int, default=20_000)
    parser.add_argument("--bulks", type=int, default=50)
    parser.add_argument("--database-url", default=None, help="default: the memory store")
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    asyncio.run(main(args.sends, args.bulks, args.database_url, args.concurrency))
