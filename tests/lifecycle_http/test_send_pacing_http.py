"""Per-connection send rates (D27) end to end: the REST app on a real socket, the real NetGSM
adapter and its loopback fake, and a ManualClock that the sends' waits move forward (so each
call reaches the fake at the time its slot was given, and the test takes no real time).

The fake stamps every send call it gets with the clock; the assertions are on those stamps:
never more than the rate, and what did not get a slot within the 2 s bound answers 201
``queued`` and is handed over by the worker when its slot is due.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from _support import bearer, serving
from fakes._server import serve
from fakes.iletimerkezi import IletimerkeziFake
from fakes.netgsm import Canned, NetgsmFake

from unified_messaging import ManualClock, Messenger, Vault
from unified_messaging._domain import Connection
from unified_messaging._routing.breaker import BreakerHealth
from unified_messaging._routing.breaker_state import BreakerState
from unified_messaging._routing.pacing import Pacer, StorePacer
from unified_messaging.asgi import create_app
from unified_messaging.providers.base import SubmitOutcome, SubmitRequest
from unified_messaging.providers.iletimerkezi import IletimerkeziAdapter
from unified_messaging.providers.netgsm import NetgsmAdapter
from unified_messaging.store.base import Store
from unified_messaging.store.sql import SqlStore

TO = "+905551234{:03d}"


class Stamped:
    """The fake's ASGI app, stamping each send call with the test's clock as it arrives."""

    def __init__(self, app: Any, clock: ManualClock) -> None:
        self.app, self.clock = app, clock
        self.arrivals: list[datetime] = []
        self.arrived = asyncio.Event()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"].endswith("/send"):
            self.arrivals.append(self.clock.now())
            self.arrived.set()
        await self.app(scope, receive, send)


class Counted:
    """The real NetGSM adapter, counting the calls it starts (so the clock moves on only once
    every call started before a wait has reached the fake and been stamped)."""

    started = 0

    def __init__(self, connection: Connection, credentials: Mapping[str, str]) -> None:
        self._inner = NetgsmAdapter(connection, credentials)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def submit(self, request: SubmitRequest) -> SubmitOutcome:
        Counted.started += 1
        return await self._inner.submit(request)

    async def submit_batch(self, requests: Sequence[SubmitRequest]) -> list[SubmitOutcome]:
        Counted.started += 1
        return await self._inner.submit_batch(requests)


def moving(clock: ManualClock, waits: list[float], stamps: Stamped) -> Any:
    """The sends' sleep: no real time passes; the calls already started reach the fake at
    the time they were given, then the clock moves on by the wait."""

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        for _ in range(3):  # the groups launched before this wait start their calls
            await asyncio.sleep(0)
        while len(stamps.arrivals) < Counted.started:
            stamps.arrived.clear()
            await stamps.arrived.wait()
        clock.advance(seconds)

    return sleep


@dataclass
class Rig:
    messenger: Messenger
    clock: ManualClock
    client: httpx.AsyncClient
    url: str
    key: str
    workspace_id: str
    connection: Connection
    netgsm: NetgsmFake
    stamps: Stamped
    iletimerkezi: IletimerkeziFake
    waits: list[float] = field(default_factory=list)
    sent: int = 0

    async def send(self, **request: Any) -> httpx.Response:
        self.sent += 1
        body = {"to": TO.format(self.sent), "body": f"Kod {self.sent}", **request}
        return await self.client.post(f"{self.url}/v1/messages", json=body,
                                      headers=bearer(self.key))  # fmt: skip

    async def bulk(self, count: int, **request: Any) -> httpx.Response:
        items = [{"to": TO.format(500 + i), "body": f"Duyuru {i}"} for i in range(count)]
        return await self.client.post(f"{self.url}/v1/messages/bulk",
                                      json={"items": items, **request},
                                      headers=bearer(self.key))  # fmt: skip

    async def record(self, job_id: str) -> dict[str, Any]:
        response = await self.client.get(f"{self.url}/v1/messages/{job_id}",
                                         headers=bearer(self.key))  # fmt: skip
        document: dict[str, Any] = response.json()
        return document

    async def health(self) -> BreakerHealth:
        """The sms_a connection's circuit breaker (D26)."""
        found = await self.messenger.connections.health(self.workspace_id)
        return next(h for h in found if h.connection_id == self.connection.id)

    def offsets(self, since: datetime) -> list[float]:
        return [(at - since).total_seconds() for at in self.stamps.arrivals]

    def messages_per_call(self) -> list[int]:
        return [len(call.json["messages"]) for call in self.netgsm.sends]  # type: ignore[index]

    async def work(self, *, until: datetime) -> None:
        """Run the worker, one item at a time, moving the clock in 0.1 s steps to ``until``."""
        worker = self.messenger.worker(batch=1)
        while True:
            await worker.run_until_idle()
            if self.clock.now() >= until:
                return
            self.clock.advance(0.1)


@contextlib.asynccontextmanager
async def rig(
    *,
    store: Store | None = None,
    vault: Vault | None = None,
    pacer: Pacer | None = None,
    retry_unavailable: bool = False,
    live_sms_b: bool = False,
    **rates: object,
) -> AsyncIterator[Rig]:
    clock = ManualClock()
    waits: list[float] = []
    netgsm, iletimerkezi = NetgsmFake(), IletimerkeziFake()
    stamps = Stamped(netgsm.app, clock)
    Counted.started = 0
    messenger = Messenger(
        store, clock=clock, vault=vault or Vault.generate(), pacer=pacer,
        pace_sleep=moving(clock, waits, stamps),
        live_adapters={"sms_a": Counted, **({"sms_b": IletimerkeziAdapter} if live_sms_b else {})},
    )  # fmt: skip
    async with (
        serve(stamps) as a,
        serve(iletimerkezi.app) as b,
        messenger,
        serving(create_app(messenger, worker=False), lifespan=False) as url,
        httpx.AsyncClient(timeout=10) as client,
    ):
        workspace = await messenger.workspaces.create("paced", recipient_limit=None)
        await messenger.workspaces.set_retry_unavailable(workspace.id, retry_unavailable)
        connection = await messenger.connections.add(
            workspace.id, "sms_a", base_url=a, default_sender="ACME",
            credentials={"usercode": netgsm.usercode, "password": netgsm.password}, **rates,  # type: ignore[arg-type]
        )  # fmt: skip
        await messenger.connections.add(
            workspace.id, "sms_b", base_url=b, default_sender="ACME",
            credentials={"api_key": iletimerkezi.key, "api_hash": iletimerkezi.hash},
        )  # fmt: skip
        key = await messenger.keys.create(workspace.id, livemode=True)
        yield Rig(messenger, clock, client, url, key.secret, workspace.id, connection, netgsm,
                  stamps, iletimerkezi, waits)  # fmt: skip


def most_in_one_second(offsets: list[float]) -> int:
    """The most calls in any half-open second [t, t + 1) starting at a call."""
    return max(sum(1 for o in offsets if start <= o < start + 1) for start in offsets)


async def test_sends_one_after_another_keep_to_the_rate() -> None:
    async with rig(max_rate=2) as r:
        start = r.clock.now()
        answers = [await r.send() for _ in range(6)]

        assert [(a.status_code, a.json()["status"]) for a in answers] == [(201, "sent")] * 6
        assert r.offsets(start) == pytest.approx([0, 0.5, 1.0, 1.5, 2.0, 2.5])
        assert most_in_one_second(r.offsets(start)) == 2
        assert r.waits == pytest.approx([0.5] * 5)


async def test_a_bulk_goes_out_paced_and_what_misses_the_bound_is_queued_then_sent() -> None:
    async with rig(max_rate=2) as r:
        start = r.clock.now()
        answer = await r.bulk(10)

        assert answer.status_code == 201
        statuses = [item["status"] for item in answer.json()["results"]]
        assert statuses == ["sent"] * 5 + ["queued"] * 5  # slots at 0 .. 2.0 s; the bound is 2 s
        assert r.offsets(start) == pytest.approx([0, 0.5, 1.0, 1.5, 2.0])
        queued = [item["job_id"] for item in answer.json()["results"][5:]]
        assert {(await r.record(job))["attempts"] == [] for job in queued} == {True}

        await r.work(until=start + timedelta(seconds=5))

        assert r.offsets(start) == pytest.approx([0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5])
        for job in queued:
            record = await r.record(job)
            assert (record["status"], record["provider"]) == ("sent", "sms_a")
            assert [a["status"] for a in record["attempts"]] == ["accepted"]
        assert len(r.netgsm.sends) == 10  # each message handed over once


async def test_a_send_with_no_slot_in_time_answers_queued_without_falling_back() -> None:
    async with rig(max_rate=2) as r:
        start = r.clock.now()
        # Another process has taken the next 3 seconds of this connection's rate.
        pacer = StorePacer(r.messenger.store)
        for _ in range(6):
            await pacer.reserve(f"{r.connection.id}:messages", cost=1, rate=2, burst=1,
                                max_wait=5, now=start)  # fmt: skip

        answer = await r.send(fallback=["sms_b"])

        assert (answer.status_code, answer.json()["status"]) == (201, "queued")
        assert answer.json()["provider"] == "sms_a"
        assert r.stamps.arrivals == [] and r.iletimerkezi.received == []  # no call, no fallback
        assert r.waits == []  # it did not wait for a slot it could not get in time
        job = answer.json()["job_id"]

        await r.work(until=start + timedelta(seconds=2.9))
        assert (await r.record(job))["status"] == "queued"  # its slot is at 3.0 s
        await r.work(until=start + timedelta(seconds=3.5))
        record = await r.record(job)
        assert (record["status"], record["provider"]) == ("sent", "sms_a")
        assert r.offsets(start) == pytest.approx([3.0])


async def test_a_paced_message_suppressed_before_its_slot_fails_and_gives_its_unit_back() -> None:
    async with rig(max_rate=2) as r:
        start = r.clock.now()
        pacer = StorePacer(r.messenger.store)
        for _ in range(6):  # another process has the next 3 seconds of the rate
            await pacer.reserve(f"{r.connection.id}:messages", cost=1, rate=2, burst=1,
                                max_wait=5, now=start)  # fmt: skip
        answer = await r.send()
        assert (answer.status_code, answer.json()["status"]) == (201, "queued")
        assert (
            await r.messenger.workspaces.quota_usage(r.workspace_id)
        ).used == 1  # D27: taken at once

        entry = {"channel": "sms", "recipient": answer.json()["to"]}
        added = await r.client.post(f"{r.url}/v1/suppressions", json=entry,
                                    headers=bearer(r.key))  # fmt: skip
        assert added.status_code == 201, added.text
        await r.work(until=start + timedelta(seconds=3.5))

        record = await r.record(answer.json()["job_id"])
        assert (record["status"], record["error"]["code"]) == ("failed", "RECIPIENT_SUPPRESSED")
        assert r.stamps.arrivals == []  # no call at its slot
        assert (await r.messenger.workspaces.quota_usage(r.workspace_id)).used == 0  # given back


async def test_a_batch_provider_sends_calls_of_one_burst() -> None:
    async with rig(max_rate=20) as r:  # a burst of 2 messages: 0.1 s of the rate
        start = r.clock.now()
        answer = await r.bulk(10)

        assert answer.json()["sent"] == 10
        assert r.messages_per_call() == [2] * 5
        assert r.offsets(start) == pytest.approx([0, 0.1, 0.2, 0.3, 0.4])


async def test_the_calls_limit_counts_a_batch_once() -> None:
    async with rig(max_rate="off", max_calls=2) as r:
        start = r.clock.now()
        answer = await r.bulk(150)

        assert answer.json()["sent"] == 150
        assert r.messages_per_call() == [100, 50]  # NetGSM's batch, one call each
        assert r.offsets(start) == pytest.approx([0, 0.5])


async def test_a_paced_message_whose_provider_is_down_at_its_slot_fails_as_d7_says() -> None:
    async with rig(max_rate=2) as r:
        start = r.clock.now()
        answer = await r.bulk(6)
        job = answer.json()["results"][5]["job_id"]
        assert answer.json()["results"][5]["status"] == "queued"

        r.netgsm.script(Canned(status=503, body=b"down"))
        await r.work(until=start + timedelta(seconds=3))

        record = await r.record(job)
        assert record["status"] == "failed"
        assert record["error"]["code"] == "PROVIDER_UNAVAILABLE"
        usage = await r.messenger.workspaces.quota_usage(r.workspace_id)
        assert usage.used == 5  # the failed one gave its unit back


async def test_test_keys_are_not_paced() -> None:
    async with rig(max_rate=2) as r:
        test_key = await r.messenger.keys.create(r.workspace_id, livemode=False)
        r.key = test_key.secret
        answers = [await r.send() for _ in range(5)]

        assert {a.json()["status"] for a in answers} == {"sent"}
        assert r.waits == []


async def test_a_connection_without_a_rate_is_never_paced() -> None:
    async with rig() as r:  # NetGSM documents no limit: none by default
        answer = await r.bulk(200)
        assert answer.json()["sent"] == 200
        assert r.waits == [] and r.messages_per_call() == [100, 100]


async def test_an_unreachable_pacer_lets_sends_through_unpaced() -> None:
    pytest.importorskip("redis")
    from unified_messaging._routing.redis_pacing import RedisPacer

    down = RedisPacer("redis://127.0.0.1:1/0", timeout=0.5)
    try:
        async with rig(pacer=down, max_rate=2) as r:
            answers = [await r.send() for _ in range(3)]
            assert {a.json()["status"] for a in answers} == {"sent"}
            assert r.waits == []
    finally:
        await down.aclose()


async def test_two_messengers_on_one_database_share_the_rate(tmp_path: Path) -> None:
    """Two processes' messengers (two SQLite engines on one file, sending in turn) take their
    slots from the same ``um_pacing`` row: together they keep to the rate."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'um.db'}"
    vault = Vault.generate()
    async with rig(store=SqlStore(url), vault=vault, max_rate=2) as r:
        other = Messenger(SqlStore(url), clock=r.clock, vault=vault,
                          live_adapters={"sms_a": Counted},
                          pace_sleep=moving(r.clock, r.waits, r.stamps))  # fmt: skip
        async with other:
            start = r.clock.now()
            principal = await other.authenticate(r.key)
            for index in range(3):
                await r.send()
                await other.send(principal, {"to": TO.format(900 + index), "body": "x"})
        assert r.offsets(start) == pytest.approx([0, 0.5, 1.0, 1.5, 2.0, 2.5])


async def test_a_fallback_to_a_connection_whose_rate_is_full_waits_queued_then_goes() -> None:
    """A fallback after a DLR time-out (not a D7 retry) to a connection with no slot in the
    bound: the message waits ``queued`` at that hop with a hand-over item, and the worker
    sends it when its slot is due (it once stayed ``queued`` with no work to move it)."""
    async with rig(max_rate=2, live_sms_b=True) as r:
        start = r.clock.now()
        sms_b = next(
            c for c in await r.messenger.connections.list(r.workspace_id) if c.provider == "sms_b"
        )
        await r.messenger.store.update_connection(replace(sms_b, dlr_timeout=timedelta(seconds=5)))
        answer = await r.send(provider="sms_b", fallback=["sms_a"])
        sent = answer.json()
        assert (sent["status"], sent["provider"]) == ("sent", "sms_b"), answer.text
        job = answer.json()["job_id"]
        # Another process holds sms_a's slots for 20 s from the time-out on.
        pacer = StorePacer(r.messenger.store)
        for _ in range(40):
            await pacer.reserve(f"{r.connection.id}:messages", cost=1, rate=2, burst=1,
                                max_wait=100, now=start + timedelta(seconds=5))  # fmt: skip

        await r.work(until=start + timedelta(seconds=8))
        record = await r.record(job)
        assert (record["status"], record["provider"]) == ("queued", "sms_a")
        assert r.stamps.arrivals == []

        await r.work(until=start + timedelta(seconds=27))
        record = await r.record(job)
        assert (record["status"], record["provider"]) == ("sent", "sms_a")
        assert len(r.stamps.arrivals) == 1


async def test_a_half_open_probe_the_rate_keeps_back_is_given_back_and_sent_at_its_slot() -> None:
    """D26 with D27: the breaker's cool-down is over, so the next send is its one probe; the
    send rate has no slot for it in the bound. The probe is handed back at once (not held
    for the whole submit time-out), and its own message goes out at its slot, as the probe,
    instead of failing ``PROVIDER_CIRCUIT_OPEN``."""
    async with rig(max_rate=2) as r:
        start = r.clock.now()
        opened = BreakerState(phase="open", until=start - timedelta(seconds=1),
                              opened_at=start - timedelta(seconds=31), reason="down",
                              at=start - timedelta(seconds=1))  # fmt: skip
        assert await r.messenger.store.put_breaker(r.connection.id, opened.to_json(), version=0)
        pacer = StorePacer(r.messenger.store)
        for _ in range(6):  # another process holds the next 3 s of the rate
            await pacer.reserve(f"{r.connection.id}:messages", cost=1, rate=2, burst=1,
                                max_wait=5, now=start)  # fmt: skip

        answer = await r.send()

        assert (answer.status_code, answer.json()["status"]) == (201, "queued"), answer.text
        health = await r.health()
        assert health.state == "open" and health.until is None  # the next call probes
        job = answer.json()["job_id"]

        await r.work(until=start + timedelta(seconds=3.5))

        record = await r.record(job)
        assert (record["status"], record["provider"]) == ("sent", "sms_a"), record
        assert r.offsets(start) == pytest.approx([3.0])
        assert (await r.health()).state == "closed"  # the probe's success closed it


async def test_a_deferred_fallback_that_fails_at_its_slot_keeps_the_unit_a_provider_took() -> None:
    """D17: sms_b took the message (one unit); its DLR time-out falls back to sms_a, whose
    rate defers the hand-over, and sms_a is down at the slot. The message ends ``failed``,
    but a provider had it: its unit is not given back."""
    async with rig(max_rate=2, live_sms_b=True) as r:
        start = r.clock.now()
        sms_b = next(
            c for c in await r.messenger.connections.list(r.workspace_id) if c.provider == "sms_b"
        )
        await r.messenger.store.update_connection(replace(sms_b, dlr_timeout=timedelta(seconds=5)))
        answer = await r.send(provider="sms_b", fallback=["sms_a"])
        assert (answer.json()["status"], answer.json()["provider"]) == ("sent", "sms_b")
        job = answer.json()["job_id"]
        pacer = StorePacer(r.messenger.store)
        for _ in range(6):  # another process holds sms_a's slots for 3 s from the time-out
            await pacer.reserve(f"{r.connection.id}:messages", cost=1, rate=2, burst=1,
                                max_wait=100, now=start + timedelta(seconds=5))  # fmt: skip
        assert (await r.messenger.workspaces.quota_usage(r.workspace_id)).used == 1

        await r.work(until=start + timedelta(seconds=7))
        assert (await r.record(job))["status"] == "queued"
        r.netgsm.script(Canned(status=503, body=b"down"))
        await r.work(until=start + timedelta(seconds=9))

        record = await r.record(job)
        assert (record["status"], record["provider"]) == ("failed", "sms_a"), record
        assert (await r.messenger.workspaces.quota_usage(r.workspace_id)).used == 1
