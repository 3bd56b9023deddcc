"""Polled providers are asked at their own pace, however many workers there are.

Each polled provider's profile declares a :class:`PollPolicy`: Mutlucell blocks accounts that
poll more than once every 15 minutes, NetGSM takes 10 report calls a minute. Two messengers
on one SQLite file stand in for two worker processes (each has its own adapters, so nothing
in memory is shared); the providers are local fakes over real HTTP, and every report call
they receive is stamped with the ManualClock's time.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, cast

import pytest
from fakes._server import serve
from fakes.mutlucell import FakeMutlucell
from fakes.netgsm import NetgsmFake

from unified_messaging import (
    ManualClock,
    Messenger,
    StorageUnavailable,
    Vault,
    generate_key_spec,
)
from unified_messaging._domain import MessageRecord
from unified_messaging._lifecycle.runtime import WORK_POLL
from unified_messaging.providers.base import PROFILES, PollPolicy
from unified_messaging.store.base import ProviderRef, Store
from unified_messaging.store.sql import SqlStore

MINUTE = timedelta(minutes=1)
DAY = timedelta(days=1)


class FindRefFailsOnce:
    """The real store, except that the next look-up of a report's ref (with its message,
    ``find_reported_message``) fails (a store blip)."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.armed = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def find_reported_message(
        self, connection_id: str, provider_message_id: str
    ) -> tuple[ProviderRef, MessageRecord | None] | None:
        if self.armed:
            self.armed = False
            raise StorageUnavailable("blip (test)")
        return await self.inner.find_reported_message(connection_id, provider_message_id)


@dataclass
class Workers:
    """Two "processes" sharing one database, and the provider fake's report calls by time."""

    clock: ManualClock
    messengers: tuple[Messenger, Messenger]
    calls_at: list[datetime]

    async def run(self, *, first: int = 0) -> None:
        """Both workers run what is due, ``first`` one first."""
        order = (first, 1 - first)
        for index in order:
            await self.messengers[index].worker().run_until_idle()

    def most_calls_in_a_minute(self) -> int:
        return max(
            (
                sum(1 for t in self.calls_at if start <= t < start + MINUTE)
                for start in self.calls_at
            ),
            default=0,
        )


@pytest.fixture
async def databases(tmp_path: Path) -> AsyncIterator[tuple[SqlStore, SqlStore]]:
    url = f"sqlite+aiosqlite:///{tmp_path / 'shared.db'}"
    first, second = SqlStore(url), SqlStore(url)
    await first.open()
    await second.open()
    try:
        yield first, second
    finally:
        await first.close()
        await second.close()


def _messengers(clock: ManualClock, stores: Sequence[Store]) -> tuple[Messenger, Messenger]:
    vault_spec = generate_key_spec()  # one master key: both read the sealed credentials
    first, second = (Messenger(store, clock=clock, vault=Vault.from_spec(vault_spec))
                     for store in stores)  # fmt: skip
    return first, second


def test_the_polled_providers_declare_their_pace() -> None:
    assert PROFILES["sms_a"].poll == PollPolicy(MINUTE, calls_per_minute=10)
    assert PROFILES["sms_d"].poll == PollPolicy(
        MINUTE, calls_per_minute=10, first_after=MINUTE, again_after=15 * MINUTE
    )
    pushed = [code for code, profile in PROFILES.items() if profile.pushes_reports is not False]
    assert all(PROFILES[code].poll is None for code in pushed)
    with pytest.raises(ValueError, match="a minute or more"):
        PollPolicy(timedelta(seconds=30), calls_per_minute=10)


async def test_mutlucell_packs_are_asked_at_its_pace_across_two_workers(
    databases: tuple[SqlStore, SqlStore],
) -> None:
    """Each pack's first query at least a minute after its send, then at most
    once every 15 minutes, and at most 10 calls a round; two processes take turns, and
    every pack is asked all the same (a backlog over the cap waits its turn)."""
    clock = ManualClock()
    fake = FakeMutlucell(default_status="2")  # handed to the operator: no receipt yet, ever
    first, second = _messengers(clock, databases)
    sent_at: dict[str, datetime] = {}
    asked_at: dict[str, list[datetime]] = {}
    per_round: Counter[datetime] = Counter()
    async with serve(fake.app) as base:
        workspace = await first.workspaces.create("Acme", recipient_limit=None)
        await first.connections.add(
            workspace.id, "sms_d", credentials={"username": fake.username,
                                                "password": fake.password},
            default_sender="UMTEST", base_url=base,
        )  # fmt: skip
        key = await first.keys.create(workspace.id, livemode=True)
        auth = await first.authenticate(key.secret)
        # 26 packs at once (over a round's cap of 10), then one a minute for 20 minutes.
        singles = [f"+90532{n:07d}" for n in range(24)]
        await first.send_bulk(auth, {"items": [{"to": n, "body": "x"} for n in singles[:12]]})
        await first.send_bulk(auth, {"items": [{"to": n, "body": "y"} for n in singles[12:]]})
        for number in singles:  # a bulk of one text is one pack: split them for the backlog
            await first.send(auth, {"to": number, "body": "z"})
        for step in range(2 * 75):  # an hour and a quarter in 30 s steps
            if step % 2 == 0 and step < 2 * 20:  # a pack a minute for 20 minutes
                await first.send(auth, {"to": f"+90533{step:07d}", "body": "w"})
            for pack in {str(p) for p in fake.packs} - set(sent_at):
                sent_at[pack] = clock.now()
            before = len(fake.received)
            await (first if step % 2 else second).worker().run_until_idle()
            for request in fake.received[before:]:
                if request.path == "/smsgw-ws/gtblkrprtex":
                    asked_at.setdefault(request.xml.get("id", ""), []).append(clock.now())
                    per_round[clock.now()] += 1
            clock.advance(timedelta(seconds=30))
        await first.aclose()
        await second.aclose()

    assert set(asked_at) == set(sent_at)  # every pack was asked
    assert len(sent_at) == 26 + 20
    assert max(per_round.values()) == 10  # the backlog met the cap, and never passed it
    for pack, times in asked_at.items():
        assert times[0] - sent_at[pack] >= MINUTE, pack
        gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
        assert all(gap >= 15 * MINUTE for gap in gaps), (pack, gaps)


async def test_netgsm_gets_at_most_10_report_calls_a_minute_even_after_a_failed_round(
    databases: tuple[SqlStore, SqlStore],
) -> None:
    clock = ManualClock()
    fake = NetgsmFake(monotonic=lambda: clock.now().timestamp())
    blip = FindRefFailsOnce(databases[0])
    first, second = _messengers(clock, [cast(Store, blip), databases[1]])
    workers = Workers(clock, (first, second), [])
    async with serve(fake.app) as base:
        workspace = await first.workspaces.create("Acme")
        await first.connections.add(
            workspace.id, "sms_a", credentials={"usercode": fake.usercode,
                                                "password": fake.password},
            default_sender="ACME", base_url=base,
        )  # fmt: skip
        key = await first.keys.create(workspace.id, livemode=True)
        auth = await first.authenticate(key.secret)
        numbers = [f"+90532{n:07d}" for n in range(100)]
        for _ in range(6):  # six NetGSM jobs of 100 rows: two report calls each (two pages)
            await first.send_bulk(auth, {"items": [{"to": n, "body": "x"} for n in numbers]})
        for row in fake.rows:
            row.status = 1  # delivered: a round that gets through ends them

        blip.armed = True  # the first round's reports cannot be stored
        for step in range(60):
            clock.advance(timedelta(seconds=5))
            before = len(fake.report_calls)
            # The first round runs in the first process; the one after it, in the other
            # (whose own adapter has made no call yet), then they take turns.
            await workers.run(first=0 if step < 12 else (step + 1) % 2)
            workers.calls_at += [clock.now()] * (len(fake.report_calls) - before)
        await first.aclose()
        await second.aclose()

    assert not blip.armed  # the blip happened
    assert workers.calls_at  # and polling went on
    assert workers.most_calls_in_a_minute() <= 10, Counter(workers.calls_at)
    assert all(row.status == 1 for row in fake.rows)
    stored = await databases[1].refs_to_poll(
        (await databases[1].list_connections(workspace.id))[0].id, clock.now() + DAY, 1000
    )
    assert stored == [], Counter(workers.calls_at)  # every report was applied in the end


async def test_there_is_one_poll_item_per_connection(databases: tuple[SqlStore, SqlStore]) -> None:
    clock = ManualClock()
    fake = FakeMutlucell(default_status="2")
    first, _ = _messengers(clock, databases)
    async with serve(fake.app) as base:
        workspace = await first.workspaces.create("Acme")
        await first.connections.add(
            workspace.id, "sms_d", credentials={"username": fake.username,
                                                "password": fake.password},
            default_sender="UMTEST", base_url=base,
        )  # fmt: skip
        key = await first.keys.create(workspace.id, livemode=True)
        auth = await first.authenticate(key.secret)
        for minute in range(20):
            # One recipient a minute: one number would meet the flood guard (D28).
            await first.send(auth, {"to": f"+9053211111{minute:02d}", "body": f"#{minute}"})
            clock.advance(MINUTE)
            await first.worker().run_until_idle()
        due = await databases[1].claim_due_work(
            now=clock.now() + timedelta(days=2), worker_id="census", lease=MINUTE, limit=1000
        )
        await first.aclose()

    [connection] = await databases[1].list_connections(workspace.id)
    assert [item.ref for item in due if item.kind == WORK_POLL] == [connection.id]
