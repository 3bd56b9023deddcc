"""Several OS processes on one database: SQLite (one file) and PostgreSQL.

The workers (``_mp_worker.py``, run as scripts) drive the store directly, not through a
façade. Each process has its own engine and pool, so locking is tested across processes,
not just across the connections of one pool. One scenario per dialect, in steps, because
starting processes is what costs time here: four processes open (and so migrate) a fresh
database at once, then all write and claim at once.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections import Counter
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from unified_messaging._domain import Workspace
from unified_messaging.store.base import WorkItem
from unified_messaging.store.sql import SqlStore

if TYPE_CHECKING:
    from _databases import Database

WORKER = Path(__file__).with_name("_mp_worker.py")
PROCESSES = 4
MESSAGES_PER_PROCESS = 20
QUOTA_LIMIT = 50
WORK_ITEMS = 30
T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
# Generous: a hung worker fails the test instead of hanging the run.
STEP_TIMEOUT = 60


class Workers:
    """The worker processes, stepped together through their line protocol."""

    def __init__(self, processes: list[asyncio.subprocess.Process]) -> None:
        self.processes = processes

    @classmethod
    async def start(cls, database: Database) -> Workers:
        processes = []
        for index in range(PROCESSES):
            config = {
                "index": index,
                "url": database.url,
                "connect_args": database.connect_args,
                "workspace_id": "ws_mp",
                "messages": MESSAGES_PER_PROCESS,
                "quota_limit": QUOTA_LIMIT,
            }
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                str(WORKER),
                json.dumps(config),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
            )
            processes.append(process)
        workers = cls(processes)
        await workers.expect("ready")
        return workers

    async def expect(self, word: str) -> None:
        for process in self.processes:
            assert process.stdout is not None
            line = await asyncio.wait_for(process.stdout.readline(), STEP_TIMEOUT)
            assert line.strip() == word.encode(), line

    async def release(self) -> None:
        for process in self.processes:
            assert process.stdin is not None
            process.stdin.write(b"go\n")
            await process.stdin.drain()

    async def results(self) -> list[dict[str, Any]]:
        results = []
        for process in self.processes:
            out, _ = await asyncio.wait_for(process.communicate(), STEP_TIMEOUT)
            assert process.returncode == 0
            results.append(json.loads(out))
        return results

    async def kill(self) -> None:
        for process in self.processes:
            if process.returncode is None:
                process.kill()
                await process.wait()


@pytest.fixture
async def workers(sql_database: Database) -> AsyncIterator[Workers]:
    started = await Workers.start(sql_database)
    try:
        yield started
    finally:
        await started.kill()


async def _seed(store: SqlStore) -> None:
    await store.create_workspace(Workspace("ws_mp", "Multi-process", T0))
    for n in range(WORK_ITEMS):
        await store.enqueue_work(WorkItem(f"w_{n:03d}", "dlr_timeout", f"job_{n}", T0, T0))


async def test_four_processes_migrate_write_and_claim_through_one_database(
    sql_database: Database, workers: Workers
) -> None:
    # Step 1: all four open the fresh database at once; the migration lock lets one build it.
    await workers.release()
    await workers.expect("open")
    store = sql_database.store(migrate=False)
    try:
        await _seed(store)
        # Step 2: all four insert, consume quota and claim due work at once.
        await workers.release()
        results = await workers.results()

        jobs = [job for r in results for job in r["jobs"]]
        assert len(jobs) == len(set(jobs)) == PROCESSES * MESSAGES_PER_PROCESS
        for job_id in jobs:
            assert await store.get_message("ws_mp", True, job_id) is not None
        assert sum(r["quota_ok"] for r in results) == QUOTA_LIMIT
        assert await store.quota_used("ws_mp", "2026-01") == QUOTA_LIMIT
        claimed = Counter(item for r in results for item in r["claimed"])
        assert set(claimed) == {f"w_{n:03d}" for n in range(WORK_ITEMS)}
        assert max(claimed.values()) == 1
    finally:
        await store.close()
