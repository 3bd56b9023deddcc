"""Benchmark of the dashboard's Messages page and Overview on SQLite at 1M messages: each
must answer within 100 ms at p95 on the server.

Loads the same data as ``bench_search.py`` (N messages over 30 days in four workspaces, 70%
in ``ws_big``, 90% live), signs an operator in, and times whole requests to the dashboard app
in process (httpx's ASGI transport: routing, the session, the store's queries and the
template; no socket), one at a time, with the clock at the end of the data, so "today" holds
a day of traffic (about 23,000 messages of ``ws_big`` at 1M).

    python benchmarks/bench_dashboard.py                 # 1M rows, a few minutes
    python benchmarks/bench_dashboard.py --rows 100000   # quicker
    python benchmarks/bench_dashboard.py --keep /tmp/s.db  # reuse bench_search's file
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import re
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from bench_search import BIG, NOW, load

from unified_messaging import ManualClock, Messenger
from unified_messaging._errors import AlreadyExists
from unified_messaging.dashboard import create_dashboard
from unified_messaging.store.sql import SqlStore
from unified_messaging.vault._core import Vault

PASSWORD = "benchmark password"  # noqa: S105
PAGES = (
    ("overview", "/"),
    ("messages", "/messages"),
    ("messages ?status=failed", "/messages?status=failed"),
    ("messages ?provider=sms_b", "/messages?provider=sms_b"),
)


async def measure(path: Path, runs: int) -> list[tuple[str, float, float]]:
    clock = ManualClock(NOW - timedelta(minutes=1))
    store = SqlStore(f"sqlite+aiosqlite:///{path}", cache_ttl=1.0)
    messenger = Messenger(store, clock=clock, vault=Vault.generate())
    await messenger.open()
    try:
        email = "bench@example.com"
        # AlreadyExists when the file was kept from an earlier run.
        with contextlib.suppress(AlreadyExists):
            await messenger.users.create(email, PASSWORD, operator=True)
        app = create_dashboard(messenger, open_messenger=False)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://bench") as http:
            form = await http.get("/login")
            token = re.search(r'name="csrf_token" value="([^"]+)"', form.text)
            assert token is not None
            signed = await http.post("/login", data={"email": email, "password": PASSWORD,
                                                     "csrf_token": token.group(1)})  # fmt: skip
            assert signed.status_code == 303, signed.text
            view = await http.get("/")
            token = re.search(r'"X-CSRF-Token": "([^"]+)"', view.text)
            assert token is not None
            # ws_big, live data: the busiest view.
            await http.post("/view", data={"workspace_id": BIG, "livemode": "live"},
                            headers={"X-CSRF-Token": token.group(1)})  # fmt: skip
            results = []
            for name, path_ in PAGES:
                times = []
                for _ in range(runs):
                    started = time.perf_counter()
                    answer = await http.get(path_)
                    times.append((time.perf_counter() - started) * 1000)
                    assert answer.status_code == 200, (path_, answer.status_code)
                times.sort()
                p95 = times[max(0, int(len(times) * 0.95) - 1)]
                results.append((name, statistics.median(times), p95))
            return results
    finally:
        await messenger.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="messages to store")
    parser.add_argument("--runs", type=int, default=100, help="requests per page")
    parser.add_argument("--keep", type=Path, help="a SQLite file to fill once and reuse")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="um-bench-dashboard-") as directory:
        path = args.keep or Path(directory) / "dashboard.db"
        if not path.exists():
            seconds = load(path, args.rows)
            print(f"loaded {args.rows:,} messages in {seconds:.1f} s")
        results = asyncio.run(measure(path, args.runs))
    print(f"{'page (ws_big, live)':<28}  {'p50 ms':>8}  {'p95 ms':>8}")
    for name, p50, p95 in results:
        print(f"{name:<28}  {p50:8.2f}  {p95:8.2f}")


if __name__ == "__main__":
    main()
