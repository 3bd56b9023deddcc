"""Benchmark of D30's metrics: what recording costs a send, and what a scrape costs.

1. Sends through the façade on the memory store in test mode (no I/O, so the recording is
   as visible as it can be), without metrics and with ``PrometheusMetrics``: sends/s of
   each, best of a few rounds, and the difference per send.
2. A scrape (``take_snapshot`` on a SQLite store holding N work items, then the text
   exposition) at a few table sizes: milliseconds per scrape, best of a few.

    python benchmarks/bench_metrics.py                  # 3,000 sends; 10k and 100k items
    python benchmarks/bench_metrics.py --sends 10000 --items 1000000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from prometheus_client import CollectorRegistry

from unified_messaging import ManualClock, Messenger, PrometheusMetrics
from unified_messaging._observability.metrics import take_snapshot
from unified_messaging.store.sql import SqlStore
from unified_messaging.testing import create_testbed
from unified_messaging.vault._core import Vault

NOW = datetime(2026, 3, 1, tzinfo=UTC)
KINDS = ("dlr_timeout", "dlr_simulated", "webhook", "event", "fallback")


async def sends_per_second(count: int, *, metrics: bool) -> float:
    registry = CollectorRegistry()
    messenger = Messenger(
        clock=ManualClock(), metrics=PrometheusMetrics(registry) if metrics else None
    )
    bed = await create_testbed(messenger=messenger, recipient_limit=None)
    request = {"to": "+905551234567", "body": "Merhaba", "fallback": ["sms_b"]}
    started = time.perf_counter()
    for _ in range(count):
        await messenger.send(bed.principal, request)
    elapsed = time.perf_counter() - started
    await messenger.aclose()
    return count / elapsed


async def scrape_ms(items: int, rounds: int) -> float:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "metrics.db"
        store = SqlStore(f"sqlite+aiosqlite:///{path}")
        await store.open()
        await store.close()
        _fill(path, items)
        store = SqlStore(f"sqlite+aiosqlite:///{path}")
        await store.open()
        messenger = Messenger(store, vault=Vault.generate(), metrics=PrometheusMetrics())
        exposition = messenger.metrics
        assert isinstance(exposition, PrometheusMetrics)
        best = float("inf")
        for _ in range(rounds):
            started = time.perf_counter()
            snapshot = await take_snapshot(store, NOW)
            exposition.exposition(snapshot)
            best = min(best, time.perf_counter() - started)
        await store.close()
        return best * 1000


def _fill(path: Path, items: int) -> None:
    """N work items straight into the table (the write path is not what is measured)."""
    db = sqlite3.connect(path)
    rows = (
        (f"w{i}", KINDS[i % len(KINDS)], f"msg_{i}", "{}",
         (NOW + timedelta(seconds=(i % 7200) - 3600)).strftime("%Y-%m-%d %H:%M:%S.%f"),
         None, None, 0, NOW.strftime("%Y-%m-%d %H:%M:%S.%f"))
        for i in range(items)
    )  # fmt: skip
    db.executemany("INSERT INTO um_due_work VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    db.commit()
    db.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sends", type=int, default=3000)
    parser.add_argument("--items", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    off = max([await sends_per_second(args.sends, metrics=False) for _ in range(3)])
    on = max([await sends_per_second(args.sends, metrics=True) for _ in range(3)])
    result: dict[str, object] = {
        "sends_per_s_without_metrics": round(off),
        "sends_per_s_with_metrics": round(on),
        "recording_us_per_send": round((1 / on - 1 / off) * 1e6, 1),
        "scrape_ms": {str(n): round(await scrape_ms(n, args.rounds), 1) for n in args.items},
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
