"""Kannel's report that comes while the send is still storing Kannel's answer.

A real Kannel answers ``sendsms`` and reports the delivery a moment apart; the send's outcome
(and with it the provider ref the report looks for) waits for its group commit. The report
waits for that write, then applies as any other: one request, no early-report work item for
the worker to apply later. Here the outcome's write is held back by another connection
holding SQLite's write lock (taken once Kannel has the message, so the send's write-ahead is
stored), and released only once the report is waiting for it.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from _support import bearer, eventually, live_kannel_bed
from fakes.kannel import PASSWORD, USERNAME, KannelFake
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from unified_messaging import ManualClock, Messenger, Vault, generate_key_spec
from unified_messaging._lifecycle.early_reports import WORK_EARLY_REPORT
from unified_messaging.store.sql import SqlStore

TO = "+905321234567"
RECEIPT = "id:0A1B2C sub:001 dlvrd:001 stat:DELIVRD err:000 text:Kodunuz 1234"


@dataclass
class LockingKannel:
    """Kannel, which takes the message while another writer holds the database's lock."""

    database: Path
    fake: KannelFake = field(default_factory=KannelFake)
    blocker: sqlite3.Connection | None = None

    @property
    def app(self) -> Starlette:
        return Starlette(routes=[Route("/cgi-bin/sendsms", self._sendsms)])

    async def _sendsms(self, request: Request) -> Response:
        self.blocker = sqlite3.connect(self.database, isolation_level=None)
        self.blocker.execute("BEGIN IMMEDIATE")
        return await self.fake._handle(request)

    def release(self) -> None:
        assert self.blocker is not None
        self.blocker.execute("ROLLBACK")
        self.blocker.close()


@dataclass
class World:
    messenger: Messenger
    store: SqlStore
    http: httpx.AsyncClient
    kannel: LockingKannel
    api_key: str

    async def get(self, job_id: str) -> dict[str, Any]:
        response = await self.http.get(f"/v1/messages/{job_id}", headers=bearer(self.api_key))
        assert response.status_code == 200, response.text
        document: dict[str, Any] = response.json()
        return document


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    database = tmp_path / "landing.db"
    store = SqlStore(f"sqlite+aiosqlite:///{database}")
    messenger = Messenger(store, clock=ManualClock(), vault=Vault.from_spec(generate_key_spec()))
    kannel = LockingKannel(database)
    try:
        bed = live_kannel_bed(messenger, kannel.app, username=USERNAME, password=PASSWORD)
        async with bed as (http, key):
            yield World(messenger, store, http, kannel, key)
    finally:
        await messenger.aclose()


async def test_a_report_that_outruns_the_sends_write_waits_for_it(world: World) -> None:
    sending = asyncio.ensure_future(
        world.http.post("/v1/messages", json={"to": TO, "body": "Kodunuz 1234"},
                        headers=bearer(world.api_key))
    )  # fmt: skip
    received = world.kannel.fake.received
    await eventually(lambda: asyncio.sleep(0, received), bool)  # Kannel has it
    path, query = world.kannel.fake.report(received[0], 1, answer=RECEIPT)
    job_id = query["id"].split(".")[0]
    reporting = asyncio.ensure_future(world.http.get(path, params=query))
    landings = world.messenger._lifecycle.landings
    await eventually(lambda: asyncio.sleep(0, landings.waiting), lambda n: n == 1)
    world.kannel.release()  # the send's outcome is stored now
    report = await reporting
    sent = await sending

    assert sent.status_code == 201, sent.text
    assert report.json() == {"received": 1, "matched": 1, "changed": 1}
    assert (await world.get(job_id))["status"] == "delivered"
    connection_id = path.split("/")[3]
    ref = await world.store.find_provider_ref(connection_id, query["id"])
    # Kannel pushes its reports, so no poll ever asks about the ref: stored closed, its
    # final report had no ref to close.
    assert ref is not None and (ref.job_id, ref.open) == (job_id, False)
    stored_work = await world.store.work_stats(world.messenger._clock.now())
    assert WORK_EARLY_REPORT not in {stats.kind for stats in stored_work}  # nothing kept
