"""A Kannel send whose submit timed out is settled by the gateway's report (D10), even when the
report comes first.

Kannel takes the message and its answer never comes back in time: the submit check ends the
message ``unknown`` (``SUBMIT_INTERRUPTED``) with no provider ref stored. Kannel's report to
the ``dlr-url`` names the id we minted, the job's own, so it still settles the message. Here it
reaches the real app over HTTP *before* the submit check fires: the app keeps it as an early
report, and it applies once the check has ended the send. The SIGKILL version of this is
``tests/crash/test_minted_id_crash.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import timedelta
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
from unified_messaging.store.base import Store
from unified_messaging.store.memory import MemoryStore
from unified_messaging.store.sql import SqlStore

TO = "+905321234567"
SUBMIT_TIMEOUT = timedelta(seconds=30)
RECEIPT = (
    "id:0A1B2C sub:001 dlvrd:001 submit date:2612020100 done date:2612020101 "
    "stat:DELIVRD err:000 text:Kodunuz 1234"
)


@dataclass
class SlowKannel:
    """Kannel that takes the message at once and answers only when :attr:`answer` is set."""

    fake: KannelFake = field(default_factory=KannelFake)
    answer: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def app(self) -> Starlette:
        return Starlette(routes=[Route("/cgi-bin/sendsms", self._sendsms)])

    async def _sendsms(self, request: Request) -> Response:
        answer = await self.fake._handle(request)
        await self.answer.wait()
        return answer


@dataclass
class World:
    clock: ManualClock
    messenger: Messenger
    http: httpx.AsyncClient
    kannel: SlowKannel
    api_key: str

    async def get(self, job_id: str) -> dict[str, Any]:
        response = await self.http.get(f"/v1/messages/{job_id}", headers=bearer(self.api_key))
        assert response.status_code == 200, response.text
        document: dict[str, Any] = response.json()
        return document

    async def work(self, advance: timedelta) -> None:
        self.clock.advance(advance)
        await self.messenger.worker().run_until_idle()


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    if request.param == "memory":
        return MemoryStore()
    return SqlStore(f"sqlite+aiosqlite:///{tmp_path / 'cut.db'}")


@pytest.fixture
async def world(store: Store) -> AsyncIterator[World]:
    clock = ManualClock()
    messenger = Messenger(
        store, clock=clock, vault=Vault.from_spec(generate_key_spec()),
        submit_timeout=SUBMIT_TIMEOUT,
    )  # fmt: skip
    kannel = SlowKannel()
    try:
        bed = live_kannel_bed(messenger, kannel.app, username=USERNAME, password=PASSWORD)
        async with bed as (http, key):
            yield World(clock, messenger, http, kannel, key)
            kannel.answer.set()  # a call still hanging ends, so the servers can stop
    finally:
        await messenger.aclose()


async def test_an_early_report_settles_a_send_whose_submit_timed_out(world: World) -> None:
    sending = asyncio.ensure_future(
        world.http.post("/v1/messages", json={"to": TO, "body": "Kodunuz 1234"},
                        headers=bearer(world.api_key))
    )  # fmt: skip
    received = world.kannel.fake.received
    await eventually(lambda: asyncio.sleep(0, received), bool)  # Kannel has it

    # Kannel delivers and reports at once, to the dlr-url it was handed: our answer is late.
    path_and_query = world.kannel.fake.report(received[0], 1, answer=RECEIPT)
    early = await world.http.get(path_and_query[0], params=path_and_query[1])
    job_id = path_and_query[1]["id"].split(".")[0]
    await world.work(SUBMIT_TIMEOUT)  # the submit check: the send was cut off
    cut_off = await world.get(job_id)
    await world.work(timedelta(seconds=2))  # the early report looks again
    settled = await world.get(job_id)
    world.kannel.answer.set()  # Kannel's answer, long after: it changes nothing now
    late = await sending

    assert early.json() == {"received": 1, "matched": 0, "changed": 0}
    assert (cut_off["status"], cut_off["error"]["code"]) == ("unknown", "SUBMIT_INTERRUPTED")
    assert settled["status"] == "delivered"
    assert settled["dlr"]["provider_status"] == "1:DELIVRD"
    assert [(a["provider"], a["status"], a["provider_message_id"])
            for a in settled["attempts"]] == [("sms_e", "delivered", f"{job_id}.0")]  # fmt: skip
    assert late.status_code == 201, late.text
    assert (await world.get(job_id))["status"] == "delivered"
