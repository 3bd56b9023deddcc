"""What the hand-over gate's consent check (D33, D35 rule 4) adds to a commercial send.

    python benchmarks/bench_consent_check.py [--sends 3000] [--rounds 7]
    python benchmarks/bench_consent_check.py --database-url postgresql+asyncpg://postgres@127.0.0.1/test

The recipients' ONAY is on record and has been read before (the consent's rows are in the
database's page cache, the statement is prepared), as it is for every commercial send after
the first to a recipient. Three figures, each the median of ``--rounds`` alternating runs:

(a) the check alone: ``LocalConsentCheck.refusals`` for one commercial message, as the gate
    asks it at each hand-over (one ``consent_statuses`` lookup), per call;
(b) a single commercial send (``Messenger.send``, test key, the simulator) in a workspace
    whose consent policy is ``local`` minus the same in one whose policy is ``off`` (both in
    one messenger and store; chunks of sends alternate between them), per send: what the
    check adds to the whole send path;
(c) the same for 200-item commercial bulks (one lookup for the whole bulk), per message.

Stores: a fresh SQLite file (the target's store), the memory store for reference, and
``--database-url`` when given (its tables must be empty or absent).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path

from unified_messaging import Messenger, Vault
from unified_messaging.consents.check import LocalConsentCheck
from unified_messaging.store.sql import store_from_url
from unified_messaging.testing import TestBed, create_testbed

RECIPIENTS = 200


def recipient(i: int) -> str:
    return f"+90532{1000000 + i % RECIPIENTS:07d}"


@dataclass(frozen=True)
class Beds:
    """Two workspaces of one messenger and store, the same ONAYs on record: one with the
    consent policy ``off``, one ``local``. Sends alternate between them in short chunks, so
    a change of the machine's load hits both alike."""

    off: TestBed
    local: TestBed


async def new_beds(url: str | None) -> Beds:
    messenger = Messenger(store_from_url(url), vault=Vault.generate())
    beds = []
    for policy in ("off", "local"):
        bed = await create_testbed(messenger=messenger, recipient_limit=None, name=policy)
        await messenger.consents.set_policy(bed.workspace.id, policy)  # type: ignore[arg-type]
        for i in range(RECIPIENTS):
            await messenger.consents.create(
                bed.principal, {"recipient": recipient(i), "status": "ONAY", "source": "HS_WEB"}
            )
        beds.append(replace(bed, principal=await messenger.authenticate(bed.api_key)))
    return Beds(*beds)


async def per_call(run: Callable[[int], Awaitable[object]], count: int, first: int = 0) -> float:
    started = time.perf_counter()
    for i in range(first, first + count):
        await run(i)
    return (time.perf_counter() - started) / count


async def check_alone(bed: TestBed, count: int) -> float:
    """(a): seconds per ``refusals`` call for one commercial message."""
    messenger = bed.messenger
    check = LocalConsentCheck(messenger.store)
    sent = await send_one(bed, 0)
    record = await messenger.store.get_message(bed.workspace.id, False, sent)
    assert record is not None
    [connection] = [c for c in await messenger.connections.list(bed.workspace.id)
                    if c.provider == record.provider]  # fmt: skip
    workspace = bed.principal.workspace
    now = messenger.clock.now()
    records = [replace(record, to=recipient(i)) for i in range(RECIPIENTS)]

    async def one(i: int) -> object:
        verdicts = await check.refusals([records[i % RECIPIENTS]], connection, now=now,
                                        workspace=workspace)  # fmt: skip
        assert verdicts == [None]
        return verdicts

    await per_call(one, 200)  # warm
    return await per_call(one, count)


async def send_one(bed: TestBed, i: int) -> str:
    answer = await bed.messenger.send(bed.principal, {"to": recipient(i), "body": "KAMPANYA",
                                                      "category": "commercial"})  # fmt: skip
    assert answer.status == "sent", answer
    return answer.job_id


async def send_bulk(bed: TestBed, _: int) -> object:
    items = [{"to": recipient(i), "body": "KAMPANYA"} for i in range(RECIPIENTS)]
    answer = await bed.messenger.send_bulk(bed.principal, {"items": items,
                                                           "category": "commercial"})  # fmt: skip
    assert answer.failed == 0, answer
    return answer


async def added(beds: Beds, run: Callable[[TestBed, int], Awaitable[object]], chunks: int,
                size: int) -> float:  # fmt: skip
    """The median over ``chunks`` of (a chunk of ``size`` calls on ``local``) minus (the
    same on ``off``), per call."""
    differences = []
    for chunk in range(chunks):
        first = chunk * size
        off = await per_call(lambda i: run(beds.off, i), size, first)
        local = await per_call(lambda i: run(beds.local, i), size, first)
        differences.append(local - off)
    return statistics.median(differences)


async def measure(name: str, url: str | None, sends: int, rounds: int) -> None:
    beds = await new_beds(url)
    try:
        for bed in (beds.off, beds.local):  # warm: imports, caches, statements
            await per_call(lambda i, b=bed: send_one(b, i), 300)  # type: ignore[misc]
        alone = [await check_alone(beds.local, sends) for _ in range(rounds)]
        single = await added(beds, send_one, rounds * 10, max(1, sends // 10))
        bulk = await added(beds, send_bulk, rounds * 2, 3) / RECIPIENTS
        print(f"{name}: (a) the check alone {statistics.median(alone) * 1e3:.3f} ms/call; "
              f"(b) added to a single send {single * 1e3:.3f} ms; "
              f"(c) added to a 200-item bulk {bulk * 1e3:.4f} ms/message")  # fmt: skip
    finally:
        await beds.off.messenger.aclose()


async def main(count: int, rounds: int, url: str | None) -> None:
    print(f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory() as home:
        sqlite = f"sqlite+aiosqlite:///{Path(home) / 'bench.db'}"
        await measure("SQLite", sqlite, count, rounds)
    await measure("memory", None, count, rounds)
    if url is not None:
        await measure(url.split(":", 1)[0], url, count, rounds)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sends", type=int, default=3000, help="per run (default 3000)")
    parser.add_argument("--rounds", type=int, default=7, help="alternating runs (default 7)")
    parser.add_argument("--database-url", help="also measure this database")
    options = parser.parse_args()
    asyncio.run(main(options.sends, options.rounds, options.database_url))
