"""Where send slots are handed out (D27): the same GCRA contract in this process
(:class:`MemoryPacer`), in the store (memory, SQLite, PostgreSQL through :class:`StorePacer`)
and in Redis (:class:`RedisPacer`).

The last tests race two engines on one database, and two Redis clients, reserving at the
same instant: whatever the interleaving, the slots granted are exactly the ones the rate
allows, each handed out once.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
from _databases import Database

from unified_messaging._errors import StorageUnavailable
from unified_messaging._routing.pacing import MemoryPacer, Pacer, StorePacer, gcra, micros
from unified_messaging.store.base import Store

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
REDIS_URL = os.environ.get("UM_TEST_REDIS_URL")


def later(seconds: float) -> datetime:
    return NOW + timedelta(seconds=seconds)


@pytest.fixture
async def redis_pacer() -> AsyncIterator[Pacer]:
    if not REDIS_URL:
        pytest.skip("set UM_TEST_REDIS_URL (e.g. redis://127.0.0.1:6379/5) for the Redis tests")
    from unified_messaging._routing.redis_pacing import RedisPacer

    prefix = f"um:test:pace:{uuid.uuid4().hex}:"
    pacer = RedisPacer(REDIS_URL, prefix=prefix)
    yield pacer
    await pacer.aclose()
    await _forget_keys(prefix)


async def _forget_keys(prefix: str) -> None:
    from redis.asyncio import Redis

    assert REDIS_URL is not None
    client = Redis.from_url(REDIS_URL)
    keys = [key async for key in client.scan_iter(match=f"{prefix}*")]
    if keys:
        await client.delete(*keys)
    await client.aclose()


# --------------------------------------------------------------------------- the contract


async def a_burst_then_the_rate(pacer: Pacer) -> None:
    """10/s with a burst of 3: three slots now, then one every 100 ms."""
    waits = []
    for _ in range(5):
        got = await pacer.reserve("conn_1:messages", cost=1, rate=10, burst=3, max_wait=2,
                                  now=NOW)  # fmt: skip
        assert got.granted
        waits.append(got.wait)
    assert waits == pytest.approx([0, 0, 0, 0.1, 0.2])


async def a_refusal_takes_nothing(pacer: Pacer) -> None:
    """Past ``max_wait`` nothing is reserved, and the answer says how long it would take."""
    for _ in range(3):
        assert (await pacer.reserve("k", cost=1, rate=2, burst=1, max_wait=1, now=NOW)).granted
    refused = await pacer.reserve("k", cost=1, rate=2, burst=1, max_wait=1, now=NOW)
    assert not refused.granted
    assert refused.wait == pytest.approx(1.5)
    again = await pacer.reserve("k", cost=1, rate=2, burst=1, max_wait=1.5, now=NOW)
    assert again.granted and again.wait == pytest.approx(1.5)  # the same slot: none was taken


async def time_frees_slots(pacer: Pacer) -> None:
    for _ in range(4):
        await pacer.reserve("k", cost=1, rate=4, burst=2, max_wait=5, now=NOW)
    assert (await pacer.reserve("k", cost=1, rate=4, burst=2, max_wait=5, now=NOW)).wait == (
        pytest.approx(0.75)
    )
    idle = await pacer.reserve("k", cost=2, rate=4, burst=2, max_wait=0, now=later(60))
    assert idle.granted and idle.wait == 0  # a whole burst again after an idle minute


async def costs_and_keys(pacer: Pacer) -> None:
    """A chunk of 5 messages costs 5 slots; another connection's key is untouched."""
    first = await pacer.reserve("a:messages", cost=5, rate=10, burst=5, max_wait=2, now=NOW)
    second = await pacer.reserve("a:messages", cost=5, rate=10, burst=5, max_wait=2, now=NOW)
    other = await pacer.reserve("b:messages", cost=5, rate=10, burst=5, max_wait=2, now=NOW)
    assert (first.wait, second.wait, other.wait) == (0, pytest.approx(0.5), 0)
    too_big = await pacer.reserve("c", cost=30, rate=10, burst=5, max_wait=2, now=NOW)
    assert not too_big.granted and too_big.wait == pytest.approx(2.5)


async def released_slots_come_back(pacer: Pacer) -> None:
    for _ in range(3):
        await pacer.reserve("k", cost=1, rate=1, burst=1, max_wait=5, now=NOW)
    await pacer.release("k", cost=1, rate=1, now=NOW)
    assert (await pacer.reserve("k", cost=1, rate=1, burst=1, max_wait=5, now=NOW)).wait == (
        pytest.approx(2)
    )
    await pacer.release("k", cost=50, rate=1, now=NOW)  # never before now
    assert (await pacer.reserve("k", cost=1, rate=1, burst=1, max_wait=5, now=NOW)).wait == 0
    await pacer.release("never-used", cost=1, rate=1, now=NOW)  # nothing to give back


CONTRACT = [
    a_burst_then_the_rate,
    a_refusal_takes_nothing,
    time_frees_slots,
    costs_and_keys,
    released_slots_come_back,
]


@pytest.mark.parametrize("case", CONTRACT, ids=lambda case: case.__name__)
async def test_the_store_pacer(store: Store, case: object) -> None:
    assert callable(case)
    await case(StorePacer(store))


@pytest.mark.parametrize("case", CONTRACT, ids=lambda case: case.__name__)
async def test_the_memory_pacer(case: object) -> None:
    assert callable(case)
    await case(MemoryPacer())


@pytest.mark.redis
@pytest.mark.parametrize("case", CONTRACT, ids=lambda case: case.__name__)
async def test_the_redis_pacer(redis_pacer: Pacer, case: object) -> None:
    assert callable(case)
    await case(redis_pacer)


def test_the_arithmetic_is_the_one_the_backends_share() -> None:
    t = micros(NOW)
    assert gcra(0, t, 100, 300, 0) == (True, t + 100, 0)
    assert gcra(t + 250, t, 100, 300, 0) == (False, t + 250, 50)
    assert gcra(t + 300, t, 100, 300, 0) == (False, t + 300, 100)
    assert gcra(t + 300, t, 100, 300, 100) == (True, t + 400, 100)


# --------------------------------------------------------------------------- racing


async def race(pacers: list[Pacer]) -> list[float]:
    """60 reservations from the given pacers at one instant, 20/s, burst 4, up to 1 s: the
    waits of those granted."""

    async def one(index: int) -> float | None:
        pacer = pacers[index % len(pacers)]
        got = await pacer.reserve("conn_race:messages", cost=1, rate=20, burst=4, max_wait=1,
                                  now=NOW)  # fmt: skip
        return got.wait if got.granted else None

    results = await asyncio.gather(*(one(i) for i in range(60)))
    return sorted(w for w in results if w is not None)


def assert_each_slot_once(waits: list[float]) -> None:
    # The burst (4) at once, then one every 50 ms up to 1 s: 24 slots, none handed out twice.
    expected = [0.0] * 4 + [0.05 * k for k in range(1, 21)]
    assert waits == pytest.approx(expected)


async def test_two_stores_on_one_database_hand_each_slot_out_once(
    sql_database: Database,
) -> None:
    first, second = sql_database.store(), sql_database.store()
    await first.open()
    await second.open()
    try:
        assert_each_slot_once(await race([StorePacer(first), StorePacer(second)]))
    finally:
        await first.close()
        await second.close()


@pytest.mark.redis
async def test_two_redis_clients_hand_each_slot_out_once() -> None:
    if not REDIS_URL:
        pytest.skip("set UM_TEST_REDIS_URL for the Redis tests")
    from unified_messaging._routing.redis_pacing import RedisPacer

    prefix = f"um:test:pace:{uuid.uuid4().hex}:"
    pacers = [RedisPacer(REDIS_URL, prefix=prefix), RedisPacer(REDIS_URL, prefix=prefix)]
    try:
        assert_each_slot_once(await race(list(pacers)))
    finally:
        for pacer in pacers:
            await pacer.aclose()
        await _forget_keys(prefix)


async def test_an_unreachable_redis_is_storage_unavailable_without_its_password() -> None:
    pytest.importorskip("redis")
    from unified_messaging._routing.redis_pacing import RedisPacer

    pacer = RedisPacer("redis://:s3cret-pw@127.0.0.1:1/0", timeout=0.5)
    try:
        with pytest.raises(StorageUnavailable) as caught:
            await pacer.reserve("k", cost=1, rate=1, burst=1, max_wait=1, now=NOW)
        assert "s3cret-pw" not in repr(pacer) + str(caught.value)
    finally:
        await pacer.aclose()
