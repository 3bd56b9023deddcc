"""Benchmark of listing messages (D29) and the provider scorecard on SQLite at 1M messages.

Writes N messages (1,000,000 by default) straight into a migrated SQLite file with the
``sqlite3`` module (minutes faster than the store's write path, which is not what is
measured here), then times, one call at a time, what ``GET /v1/messages`` runs below HTTP
(``search_messages``: the cursor lookup, the store's query and the status records) for a
few typical queries, and ``Store.connection_stats`` over the last 24 hours.

    python benchmarks/bench_search.py                 # 1M rows, about two minutes
    python benchmarks/bench_search.py --rows 100000   # quicker
    python benchmarks/bench_search.py --keep /tmp/s.db  # reuse the file on the next run

The data: 70% of the messages in one big workspace, the rest in three others; 90% live;
50,000 recipients (a few of them frequent); 30 days of traffic; statuses and providers
drawn with realistic weights (85% delivered, 6% failed ...; sms_a half the traffic).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from unified_messaging._search import MessageSearch, search_messages
from unified_messaging.store.sql import SqlStore

NOW = datetime(2026, 3, 1, tzinfo=UTC)
DAYS = 30
BIG = "ws_big"
OTHERS = ("ws_b", "ws_c", "ws_d")
RECIPIENTS = 50_000
STATUSES = (("delivered", 85), ("sent", 5), ("failed", 6), ("expired", 2), ("unknown", 2))
PROVIDERS = (("sms_a", 50), ("sms_b", 25), ("sms_c", 15), ("chatbot", 5), ("bizchat", 5))
COLUMNS = (
    'job_id, workspace_id, livemode, status, "to", channel, provider, text, sender, '
    "template_key, created_at, updated_at, sent_at, final_at, error_code, error_message, "
    "attempts, dlr, segments, encoding, fallback_left, fallback_requested, template_params, "
    "version, requested_sender"
)


def _stamp(moment: datetime) -> str:
    # What UtcDateTime stores on SQLite: naive UTC, fixed width.
    return moment.strftime("%Y-%m-%d %H:%M:%S.%f")


def _weighted(pairs: tuple[tuple[str, int], ...], rng: random.Random, n: int) -> list[str]:
    names = [name for name, _ in pairs]
    weights = [weight for _, weight in pairs]
    return rng.choices(names, weights, k=n)


def recipient(index: int) -> str:
    return f"+90555{index:07d}"


def rows(count: int, seed: int = 7) -> Iterator[tuple[Any, ...]]:
    rng = random.Random(seed)
    statuses = _weighted(STATUSES, rng, count)
    providers = _weighted(PROVIDERS, rng, count)
    start = NOW - timedelta(days=DAYS)
    step = timedelta(days=DAYS) / count
    for i in range(count):
        created = start + step * i
        status, provider = statuses[i], providers[i]
        workspace = BIG if rng.random() < 0.7 else rng.choice(OTHERS)
        # Zipf-ish: a few recipients get much of the traffic.
        to = recipient(min(int(rng.paretovariate(1.2)) - 1, RECIPIENTS - 1) if rng.random() < 0.3
                       else rng.randrange(RECIPIENTS))  # fmt: skip
        channel = "chatbot" if provider == "chatbot" else (
            "bizchat" if provider == "bizchat" else "sms")  # fmt: skip
        sent = created + timedelta(milliseconds=rng.randrange(50, 400))
        final = None
        if status in ("delivered", "failed", "expired", "unknown"):
            final = sent + timedelta(milliseconds=int(rng.lognormvariate(7.5, 0.8)))
        attempt_status = {"sent": "accepted", "failed": "failed"}.get(status, status)
        attempts = [
            {"provider": provider, "status": attempt_status, "at": created.isoformat(),
             "provider_message_id": f"p{i}", "error": None},
        ]  # fmt: skip
        yield (
            f"msg_{i:026d}", workspace, rng.random() < 0.9, status, to, channel, provider,
            "Kodunuz 123456.", "ACME", None, _stamp(created), _stamp(final or sent),
            _stamp(sent), None if final is None else _stamp(final), None, None,
            json.dumps(attempts), None, 1, "gsm7", "[]", False, "[]", 1, None,
        )  # fmt: skip


def load(path: Path, count: int) -> float:
    """Migrate ``path`` with the store, then bulk-insert ``count`` rows; returns seconds."""

    async def migrate() -> None:
        store = SqlStore(f"sqlite+aiosqlite:///{path}")
        await store.open()
        for workspace in (BIG, *OTHERS):
            await store.create_workspace(_workspace(workspace))
        await store.close()

    asyncio.run(migrate())
    started = time.perf_counter()
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        connection.execute("PRAGMA journal_mode = WAL")
        connection.execute("PRAGMA synchronous = OFF")
        connection.execute("BEGIN")
        placeholders = ", ".join("?" * 25)
        statement = f"INSERT INTO um_messages ({COLUMNS}) VALUES ({placeholders})"  # noqa: S608
        connection.executemany(statement, rows(count))
        connection.execute("COMMIT")
        connection.execute("ANALYZE")
    finally:
        connection.close()
    return time.perf_counter() - started


def _workspace(workspace_id: str) -> Any:
    from unified_messaging._domain import Workspace

    return Workspace(id=workspace_id, name=workspace_id, created_at=NOW - timedelta(days=60))


@dataclass
class Timing:
    name: str
    p50_ms: float
    p99_ms: float
    found: float


async def timed(name: str, runs: int, call: Callable[[int], Awaitable[int]]) -> Timing:
    await call(runs)  # warm: statement cache, page cache (the spare argument)
    samples, found = [], []
    for n in range(runs):
        started = time.perf_counter()
        found.append(await call(n))
        samples.append((time.perf_counter() - started) * 1000)
    samples.sort()
    p99 = samples[min(len(samples) - 1, int(len(samples) * 0.99))]
    return Timing(name, statistics.median(samples), p99, statistics.mean(found))


async def measure(path: Path, count: int, runs: int) -> list[Timing]:
    store = SqlStore(f"sqlite+aiosqlite:///{path}")
    await store.open()
    rng = random.Random(11)
    # Every random argument is drawn before the clock starts.
    frequent = [recipient(rng.randrange(5)) for _ in range(runs + 1)]
    anyone = [recipient(rng.randrange(RECIPIENTS)) for _ in range(runs + 1)]
    days = [NOW - timedelta(days=rng.randrange(1, DAYS)) for _ in range(runs + 1)]
    cursors = _live_jobs_near(path, [count // 2 + rng.randrange(1000) for _ in range(runs + 1)])
    try:

        def page(**fixed: Any) -> Callable[[int], Awaitable[int]]:
            async def call(n: int) -> int:
                query = {k: (v[n] if isinstance(v, list) else v) for k, v in fixed.items()}
                if "day" in query:
                    day = query.pop("day")
                    query |= {"created_after": day, "created_before": day + timedelta(days=1)}
                result = await search_messages(store, BIG, True, MessageSearch(**query))
                return len(result.data)

            return call

        both = page(status="failed", provider="sms_c")
        rare = page(status="unknown", provider="bizchat")  # 0.1% of the messages
        timings = [
            await timed("first page, no filter", runs, page()),
            await timed("to=<a frequent recipient>", runs, page(to=frequent)),
            await timed("to=<any recipient>", runs, page(to=anyone)),
            await timed("status=failed", runs, page(status="failed")),
            await timed("provider=sms_b", runs, page(provider="sms_b")),
            await timed("status=failed&provider=sms_c", runs, both),
            await timed("status=unknown&provider=bizchat", runs, rare),
            await timed("created_after/before: one day", runs, page(day=days)),
            await timed("starting_after: halfway down", runs, page(starting_after=cursors)),
            await timed("limit=100", runs, page(limit=100)),
        ]

        async def scorecard(_: int) -> int:
            return len(await store.connection_stats(BIG, True, NOW - timedelta(hours=24)))

        timings.append(await timed("connection_stats, last 24 h", max(5, runs // 20), scorecard))
        return timings
    finally:
        await store.close()


def _live_jobs_near(path: Path, indexes: list[int]) -> list[str]:
    """For each index, the first live message of the big workspace from there on."""
    connection = sqlite3.connect(path)
    try:
        return [
            str(
                connection.execute(
                    "SELECT job_id FROM um_messages WHERE workspace_id = ? AND livemode = 1 "
                    "AND job_id >= ? ORDER BY job_id LIMIT 1",
                    (BIG, f"msg_{index:026d}"),
                ).fetchone()[0]
            )
            for index in indexes
        ]
    finally:
        connection.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="messages to store")
    parser.add_argument("--runs", type=int, default=200, help="calls per query")
    parser.add_argument("--keep", type=Path, help="a SQLite file to fill once and reuse")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="um-bench-search-") as directory:
        path = args.keep or Path(directory) / "search.db"
        if not path.exists():
            seconds = load(path, args.rows)
            size = path.stat().st_size >> 20
            print(f"loaded {args.rows:,} messages in {seconds:.1f} s ({size} MiB)")
        timings = asyncio.run(measure(path, args.rows, args.runs))
    width = max(len(t.name) for t in timings)
    print(f"{'query (ws_big, live, limit 20)':<{width}}  {'p50 ms':>8}  {'p99 ms':>8}  rows")
    for t in timings:
        print(f"{t.name:<{width}}  {t.p50_ms:8.2f}  {t.p99_ms:8.2f}  {t.found:.0f}")


if __name__ == "__main__":
    main()
