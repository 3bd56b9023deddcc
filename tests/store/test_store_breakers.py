"""Where circuit breakers share their state (D26): the store (memory, SQLite, PostgreSQL) and
Redis keep one document per connection, changed only by compare-and-set on its version.

The same contract runs on every backend; the last tests run the breakers themselves on each
SQL store and on Redis, with two ``SharedBreakers`` (two processes) racing for the probe, and
a connection's thresholds round-tripping through the store.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from unified_messaging._clock import ManualClock
from unified_messaging._domain import Connection, Workspace
from unified_messaging._errors import StorageUnavailable
from unified_messaging._routing.breaker import BreakerStore, SharedBreakers
from unified_messaging._routing.breaker_policy import BreakerPolicy
from unified_messaging.providers.base import SubmitOutcome
from unified_messaging.store.base import Store

START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
REDIS_URL = os.environ.get("UM_TEST_REDIS_URL")


@pytest.fixture
async def redis_store() -> AsyncIterator[BreakerStore]:
    if not REDIS_URL:
        pytest.skip("set UM_TEST_REDIS_URL (e.g. redis://127.0.0.1:6379/5) for the Redis tests")
    from redis.asyncio import Redis

    from unified_messaging._routing.redis_breaker import RedisBreakerStore

    prefix = f"um:test:cb:{uuid.uuid4().hex}:"
    store = RedisBreakerStore(REDIS_URL, prefix=prefix)
    yield store
    await store.aclose()
    client = Redis.from_url(REDIS_URL)
    keys = [key async for key in client.scan_iter(match=f"{prefix}*")]
    if keys:
        await client.delete(*keys)
    await client.aclose()


async def compare_and_set(backend: BreakerStore) -> None:
    assert await backend.get_breaker("conn_1") is None
    assert not await backend.put_breaker("conn_1", '{"a":1}', version=3)  # none stored yet
    assert await backend.put_breaker("conn_1", '{"a":1}', version=0)
    assert not await backend.put_breaker("conn_1", '{"a":2}', version=0)  # a lost insert race
    stored = await backend.get_breaker("conn_1")
    assert stored is not None
    assert (stored.data, stored.version) == ('{"a":1}', 1)
    assert await backend.put_breaker("conn_1", '{"a":3}', version=1)
    assert not await backend.put_breaker("conn_1", '{"a":4}', version=1)  # a stale writer
    stored = await backend.get_breaker("conn_1")
    assert stored is not None
    assert (stored.data, stored.version) == ('{"a":3}', 2)
    assert await backend.get_breaker("conn_2") is None


async def one_probe_among_racers(backend: BreakerStore) -> None:
    clock = ManualClock(START)
    connection = Connection("conn_1", "ws_1", "sms_a", START, "x")
    processes = [SharedBreakers(backend, clock, probe_lease=timedelta(minutes=2)) for _ in range(4)]
    for _ in range(5):
        admission = await processes[0].allow(connection)
        down = SubmitOutcome.unavailable("time-out")
        await processes[0].record(connection, [down], admission)
    clock.advance(31)

    admissions = await asyncio.gather(*(p.allow(connection) for p in processes * 5))

    assert sum(a.probe for a in admissions) == 1
    assert sum(a.allowed for a in admissions) == 1
    prober = processes[[a.probe for a in admissions].index(True) % len(processes)]
    await prober.record(connection, [SubmitOutcome.accepted("m")], admissions[0])
    assert (await processes[3].health(connection)).state in {"half_open", "closed"}


async def test_a_breaker_state_changes_only_from_the_version_read(store: Store) -> None:
    await compare_and_set(store)


async def test_exactly_one_process_probes_through_the_store(store: Store) -> None:
    await one_probe_among_racers(store)


@pytest.mark.redis
async def test_a_breaker_state_changes_only_from_the_version_read_in_redis(
    redis_store: BreakerStore,
) -> None:
    await compare_and_set(redis_store)


@pytest.mark.redis
async def test_exactly_one_process_probes_through_redis(redis_store: BreakerStore) -> None:
    await one_probe_among_racers(redis_store)


async def test_an_unreachable_redis_is_storage_unavailable() -> None:
    pytest.importorskip("redis")
    from unified_messaging._routing.redis_breaker import RedisBreakerStore

    backend = RedisBreakerStore("redis://:s3cret-pw@127.0.0.1:1/0", timeout=0.5)
    try:
        with pytest.raises(StorageUnavailable) as caught:
            await backend.get_breaker("conn_1")
        assert "s3cret-pw" not in repr(backend) + str(caught.value)
    finally:
        await backend.aclose()


async def test_a_connections_thresholds_are_stored_with_it(store: Store) -> None:
    await store.create_workspace(Workspace("ws_1", "one", START))
    policy = BreakerPolicy.build(window=10, min_calls=3, failure_ratio=0.75, consecutive=2)
    tuned = Connection("conn_1", "ws_1", "sms_a", START, "x", is_default=True, breaker=policy)
    plain = Connection("conn_2", "ws_1", "sms_b", START, "x")
    await store.add_connection(tuned)
    await store.add_connection(plain)

    assert await store.get_connection("conn_1") == tuned
    assert await store.get_connection("conn_2") == plain
    changed = BreakerPolicy.build(policy, cooldown=120)
    await store.update_connection(replace(tuned, breaker=changed))
    found = await store.get_connection("conn_1")
    assert found is not None and found.breaker.cooldown == timedelta(minutes=2)
