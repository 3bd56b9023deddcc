"""One worker process of ``test_sql_multiprocess``: a script, not a test module.

``python _mp_worker.py '<json config>'`` speaks a tiny line protocol with the test, so that
all workers do each step at the same moment:

1. prints ``ready`` once imported, waits for a line on stdin;
2. opens the store (migrating the fresh database, concurrently with the others), prints
   ``open``, waits for a line;
3. interleaves message inserts, quota consumption and claims of due work (completing every
   item it claims), then prints one JSON line of what it did.
"""

from __future__ import annotations

import asyncio
import json
import sys
from datetime import UTC, datetime, timedelta

from unified_messaging._domain import MessageRecord
from unified_messaging.store.sql import SqlStore

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
LEASE = timedelta(minutes=5)


def _message(job_id: str, workspace_id: str) -> MessageRecord:
    return MessageRecord(
        job_id=job_id,
        workspace_id=workspace_id,
        livemode=True,
        status="queued",
        to="+905551234567",
        channel="sms",
        provider="sms_a",
        created_at=NOW,
        updated_at=NOW,
        text="multi-process",
    )


async def _step(name: str) -> None:
    print(name, flush=True)
    await asyncio.to_thread(sys.stdin.readline)


async def _work(config: dict[str, object], store: SqlStore) -> dict[str, object]:
    worker = f"worker-{config['index']}"
    workspace_id = str(config["workspace_id"])
    limit = int(str(config["quota_limit"]))
    jobs: list[str] = []
    claimed: list[str] = []
    quota_ok = 0

    async def claim_some() -> bool:
        batch = await store.claim_due_work(now=NOW, worker_id=worker, lease=LEASE, limit=2)
        for item in batch:
            claimed.append(item.id)
            assert await store.complete_work(item.id, worker)
        return bool(batch)

    for n in range(int(str(config["messages"]))):
        job_id = f"job_{config['index']}_{n:04d}"
        await store.insert_messages([_message(job_id, workspace_id)])
        jobs.append(job_id)
        quota_ok += await store.consume_quota(workspace_id, "2026-01", 1, limit)
        await claim_some()
    while await claim_some():
        pass
    return {"jobs": jobs, "quota_ok": quota_ok, "claimed": claimed}


async def main(config: dict[str, object]) -> None:
    connect_args = config["connect_args"]
    assert isinstance(connect_args, dict)
    store = SqlStore(str(config["url"]), connect_args=connect_args, busy_timeout=30)
    try:
        await _step("ready")
        await store.open()
        await _step("open")
        result = await _work(config, store)
    finally:
        await store.close()
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    asyncio.run(main(json.loads(sys.argv[1])))
