"""Benchmark of ``unified-messaging campaign send``: a 100,000-row CSV against the simulator
on SQLite, as an operator runs it, and proof that the file is streamed.

Sets up a test-mode workspace (all providers on the simulator) in a fresh SQLite file, writes
the CSV, then runs the real command line in a subprocess, three times:

1. a small campaign (``--small`` rows, 1,000 by default): the baseline peak RSS;
2. the full campaign (``--rows``, 100,000 by default): wall time, rows/s, peak RSS;
3. the same command again: every chunk is replayed from its idempotency key, nothing sent;

and then ``campaign status`` on the big campaign.

If the file were loaded whole, the second run's peak RSS would grow with it; streaming keeps
it at the small run's. In this process the CSV reader's own peak allocation over the big file
is measured with ``tracemalloc``. Each child's peak RSS is its own ``ru_maxrss``.

    python benchmarks/bench_campaign.py                  # 100k rows, about two minutes
    python benchmarks/bench_campaign.py --rows 20000     # quicker
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from unified_messaging import Messenger, Vault
from unified_messaging.campaigns._csv import CsvSource
from unified_messaging.store.sql import SqlStore
from unified_messaging.testing import create_testbed
from unified_messaging.vault._core import generate_key_spec

TEMPLATE = "order_shipped"
BODY = "Merhaba {{ name }}, {{ order }} numaralı siparişiniz yolda. Takip: {{ url }}"

# Run in the child: the CLI's own main, then its peak RSS (kB on Linux) into a file.
_CHILD = """
import resource, sys
from unified_messaging.cli import main
status = main(sys.argv[2:])
with open(sys.argv[1], "w") as out:
    out.write(str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))
raise SystemExit(status)
"""


def write_csv(path: Path, rows: int) -> int:
    with path.open("w", encoding="utf-8", newline="") as file:
        file.write("\ufeffphone,name,order,url\r\n")  # as Excel's "CSV UTF-8" writes it
        for i in range(rows):
            file.write(f"0532{i:07d},Müşteri {i},ORD-{i:08d},https://kargo.example/t/{i:010d}\r\n")
    return path.stat().st_size


async def setup(database_url: str, keys: str) -> str:
    messenger = Messenger(SqlStore(database_url), vault=Vault.from_spec(keys))
    try:
        bed = await create_testbed(messenger=messenger)
        await messenger.templates.set(bed.workspace.id, TEMPLATE, BODY)
        return bed.workspace.id
    finally:
        await messenger.aclose()


def run_cli(
    args: list[str], env: dict[str, str], cwd: Path
) -> tuple[float, int, dict[str, object]]:
    """Wall seconds, peak RSS (MiB) and the JSON summary of one ``campaign send``."""
    rss_file = cwd / "rss.txt"
    started = time.perf_counter()
    done = subprocess.run(  # noqa: S603 - our own interpreter and fixed arguments
        [sys.executable, "-c", _CHILD, str(rss_file), *args, "--json"],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"campaign send failed ({done.returncode}): {done.stderr}")
    rss_mib = int(rss_file.read_text()) // 1024
    return wall, rss_mib, json.loads(done.stdout)


def reader_peak(path: Path) -> int:
    tracemalloc.start()
    try:
        CsvSource(path).scan()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--small", type=int, default=1_000)
    parser.add_argument("--chunk", type=int, default=100)
    options = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench_campaign_") as tmp:
        work = Path(tmp)
        database_url = f"sqlite+aiosqlite:///{work / 'um.db'}"
        keys = generate_key_spec("k1")
        workspace = asyncio.run(setup(database_url, keys))
        env = {k: v for k, v in os.environ.items() if not k.startswith("UM_")}
        env.update(UM_DATABASE_URL=database_url, UM_MASTER_KEYS=keys)

        small, big = work / "small.csv", work / "big.csv"
        write_csv(small, options.small)
        size = write_csv(big, options.rows)

        def campaign(path: Path, name: str) -> list[str]:
            return [
                "campaign", "send", "--workspace", workspace, "--csv", str(path),
                "--template", TEMPLATE, "--campaign", name, "--chunk", str(options.chunk),
                "--test", "--no-progress", "--results", str(work / f"{name}.results.csv"),
            ]  # fmt: skip

        small_wall, small_rss, _ = run_cli(campaign(small, "small"), env, work)
        wall, rss, summary = run_cli(campaign(big, "big"), env, work)
        again_wall, again_rss, again = run_cli(campaign(big, "big"), env, work)
        status = ["campaign", "status", "--workspace", workspace, "--campaign", "big", "--test"]
        status_wall, _, report = run_cli(status, env, work)
        peak = reader_peak(big)

    print(f"campaign send, SQLite, test mode (simulator), chunk {options.chunk}")
    print(f"  file: {options.rows:,} rows, {size / 1e6:.1f} MB")
    print(
        f"  first run:  {wall:6.1f} s wall, {options.rows / wall:7,.0f} rows/s, "
        f"peak RSS {rss} MiB  (by status: {summary['by_status']})"
    )
    print(
        f"  re-run:     {again_wall:6.1f} s wall, {options.rows / again_wall:7,.0f} rows/s, "
        f"peak RSS {again_rss} MiB  (replayed {again['replayed']:,}, nothing sent)"
    )
    print(
        f"  {options.small:,}-row run: {small_wall:6.1f} s wall, peak RSS {small_rss} MiB "
        f"(the baseline: RSS does not grow with the file)"
    )
    print(
        f"  campaign status: {status_wall:6.1f} s wall ({report['messages']:,} messages "
        f"counted by status: {report['by_status']})"
    )
    print(f"  CSV reader over the big file: peak {peak / 1024:.0f} KiB allocated (tracemalloc)")


if __name__ == "__main__":
    main()
