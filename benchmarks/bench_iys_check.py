"""Time the hand-over gate's consent check (D33): ``python benchmarks/bench_iys_check.py
[DATABASE_URL]`` (default: the in-memory store; e.g. ``sqlite+aiosqlite:///bench.db``).

What the check adds to a commercial SMS's hand-over: the gate's consent rule
(``messenger.iys.check.refusals``) asked for one commercial test message, under the
workspace's consent policy ``off`` (no check), ``local`` (the recipient has a record here:
one store lookup) and ``iys`` with no record here and İYS's answer in the status-lookup
cache (the simulated İYS answered once). Each row is the median of 5 runs. On a SQL store
the record lookup is one query per hand-over, whatever the number of its messages (a bulk's
100 messages share it: the last row), kept for the store's ``cache_ttl`` (1 s, as ``serve``
and ``worker`` run it).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from dataclasses import replace

from unified_messaging import Messenger, Vault
from unified_messaging.iys import MAGIC_ONAY
from unified_messaging.store.sql import store_from_url
from unified_messaging.testing import create_testbed

RUNS = 5


async def per_check(url: str, policy: str, to: str, *, record: bool, bulk: int = 1) -> float:
    """Microseconds per commercial message of a consent check under ``policy`` (``bulk``
    copies of one message asked about at once)."""
    store = store_from_url(url, cache_ttl=1.0)  # as serve and worker keep their reads
    await store.open()
    messenger = Messenger(store, vault=Vault.generate())
    bed = await create_testbed(messenger=messenger)
    workspace_id = bed.workspace.id
    await messenger.consents.set_policy(workspace_id, policy)  # type: ignore[arg-type]
    principal = await messenger.principal(workspace_id, livemode=False)
    if record:
        await messenger.consents.create(
            principal, {"recipient": to, "status": "ONAY", "source": "HS_WEB"}
        )
    sent = await messenger.send(principal, {"to": to, "body": "Kampanya", "category": "commercial"})
    assert sent.status == "sent", sent
    message = await messenger.store.get_message(workspace_id, False, sent.job_id)
    assert message is not None
    message = replace(message, status="queued")
    connection = next(
        c for c in await messenger.store.list_connections(workspace_id) if c.provider == "sms_a"
    )
    workspace = await messenger.workspaces.get(workspace_id)
    check = messenger.iys.check
    now = messenger.clock.now()
    messages = [message] * bulk
    calls = 20_000 if url == "memory" else 1_000
    runs = []
    for _ in range(RUNS):
        start = time.perf_counter()
        for _ in range(calls):
            verdicts = await check.refusals(messages, connection, now=now, workspace=workspace)
        runs.append((time.perf_counter() - start) / calls / bulk * 1e6)
        assert verdicts == [None] * bulk, verdicts
    await messenger.aclose()
    return statistics.median(runs)


async def main() -> None:
    url = sys.argv[1] if len(sys.argv) > 1 else "memory"
    off = await per_check(url, "off", "+905321000001", record=False)
    local = await per_check(url, "local", "+905321000001", record=True)
    cached = await per_check(url, "iys", MAGIC_ONAY, record=False)
    bulk = await per_check(url, "iys", MAGIC_ONAY, record=False, bulk=100)
    print(f"store: {url}")
    print(f"policy off                          {off:8.2f} µs/message")
    print(f"policy local (a record here)        {local:8.2f} µs/message  (+{local - off:.2f})")
    print(f"policy iys (İYS's answer cached)    {cached:8.2f} µs/message  (+{cached - off:.2f})")
    print(f"policy iys, a bulk of 100           {bulk:8.2f} µs/message  (+{bulk - off:.2f})")


if __name__ == "__main__":
    asyncio.run(main())
