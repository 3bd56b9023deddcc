"""Per-key rate limiting (D16): one contract for the in-process and the Redis token bucket.

The contract suite runs on both backends; the Redis half needs ``UM_TEST_REDIS_URL``. The memory
backend runs on a ManualClock; Redis reads the server's clock, so its tests use policies whose
refill during a test is negligible, or wait (briefly) for a refill they then assert on.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from unified_messaging._access.ratelimit import (
    MemoryRateLimiter,
    RateLimitDecision,
    RateLimiter,
    RateLimitPolicy,
    retry_after_header,
    retry_after_seconds,
)
from unified_messaging._access.redis_ratelimit import RedisRateLimiter, rate_limiter_from_url
from unified_messaging._clock import ManualClock
from unified_messaging._errors import RecipientRateLimited, StorageUnavailable
from unified_messaging.asgi._errors import error_response
from unified_messaging.cli._serve_http import server_answer

REDIS_URL = os.environ.get("UM_TEST_REDIS_URL")
NO_REDIS = (
    "set UM_TEST_REDIS_URL (e.g. redis://127.0.0.1:6379/0) to run the Redis rate limiter tests"
)

# Refills well under one token over any test's lifetime, so counts are exact on real time too.
NEGLIGIBLE_RATE = 0.001
# Time-derived numbers on Redis drift by the test's own run time; memory is exact.
SLACK = 0.25


@dataclass
class Backend:
    name: str
    limiter: RateLimiter
    wait: Callable[[float], Awaitable[None]]


@pytest.fixture
def redis_url() -> str:
    if not REDIS_URL:
        pytest.skip(NO_REDIS)
    return REDIS_URL


@pytest.fixture
def redis_prefix(redis_url: str) -> Iterator[str]:
    """A key prefix of this test alone, whose keys are deleted afterwards."""
    # Sync on purpose: the async `backend` fixture asks for it, and teardown needs no loop.
    from redis import Redis

    prefix = f"um:test:rl:{uuid.uuid4().hex}:"
    yield prefix
    with Redis.from_url(redis_url) as client:
        keys = list(client.scan_iter(match=f"{prefix}*"))
        if keys:
            client.delete(*keys)


async def memory_backend() -> AsyncIterator[Backend]:
    clock = ManualClock()
    limiter = MemoryRateLimiter(clock)

    async def advance(seconds: float) -> None:
        clock.advance(seconds)

    yield Backend("memory", limiter, advance)
    await limiter.aclose()


async def redis_backend(url: str, prefix: str) -> AsyncIterator[Backend]:
    limiter = RedisRateLimiter(url, prefix=prefix)

    async def sleep(seconds: float) -> None:
        # Server time: the slack covers the round trip, not the refill itself.
        await asyncio.sleep(seconds + 0.01)

    yield Backend("redis", limiter, sleep)
    await limiter.aclose()


async def socket_backend(directory: Path) -> AsyncIterator[Backend]:
    """The parent's buckets of ``serve --workers`` (no Redis), over its Unix socket."""
    from unified_messaging._access.socket_ratelimit import RateLimitHost, SocketRateLimiter

    host = RateLimitHost(str(directory / "rl.sock"))
    host.start()
    limiter = SocketRateLimiter(host.path)

    async def sleep(seconds: float) -> None:
        await asyncio.sleep(seconds + 0.01)  # the host's clock is real time

    try:
        yield Backend("socket", limiter, sleep)
    finally:
        await limiter.aclose()
        host.stop()


@pytest.fixture(params=["memory", "socket", pytest.param("redis", marks=pytest.mark.redis)])
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backend]:
    if request.param == "memory":
        source = memory_backend()
    elif request.param == "socket":
        source = socket_backend(tmp_path)
    else:
        url = request.getfixturevalue("redis_url")
        source = redis_backend(url, request.getfixturevalue("redis_prefix"))
    async for made in source:
        yield made


async def hits(limiter: RateLimiter, key: str, policy: RateLimitPolicy, n: int) -> list[bool]:
    return [(await limiter.hit(key, policy)).allowed for _ in range(n)]


# --- the contract, on every backend -------------------------------------------------------


async def test_burst_is_allowed_then_refused(backend: Backend) -> None:
    policy = RateLimitPolicy(rate=NEGLIGIBLE_RATE, burst=5)

    assert await hits(backend.limiter, "k", policy, 6) == [True] * 5 + [False]


async def test_tokens_refill_over_time(backend: Backend) -> None:
    policy = RateLimitPolicy(rate=20, burst=2)
    refused = None
    # A loop, not a fixed count: on real time a slow run may refill a token in between.
    for _ in range(100):
        decision = await backend.limiter.hit("k", policy)
        if not decision.allowed:
            refused = decision
            break
    assert refused is not None
    assert 0 < refused.retry_after <= 1 / 20 + 1e-9

    await backend.wait(refused.retry_after)

    assert (await backend.limiter.hit("k", policy)).allowed


async def test_decision_reports_remaining_reset_and_retry_after(backend: Backend) -> None:
    policy = RateLimitPolicy(rate=0.5, burst=4)

    first = await backend.limiter.hit("k", policy)
    assert (first.allowed, first.limit, first.remaining, first.window) == (True, 4, 3, 8)
    assert first.reset_after == pytest.approx(2.0, abs=SLACK)
    assert first.retry_after == 0

    last = [await backend.limiter.hit("k", policy) for _ in range(3)][-1]
    assert (last.allowed, last.remaining) == (True, 0)
    assert last.reset_after == pytest.approx(8.0, abs=SLACK)

    refused = await backend.limiter.hit("k", policy)
    assert (refused.allowed, refused.limit, refused.remaining) == (False, 4, 0)
    assert refused.retry_after == pytest.approx(2.0, abs=SLACK)
    assert refused.reset_after == pytest.approx(8.0, abs=SLACK)


async def test_cost_takes_that_many_tokens_and_a_refusal_takes_none(backend: Backend) -> None:
    policy = RateLimitPolicy(rate=NEGLIGIBLE_RATE, burst=10)

    spent = await backend.limiter.hit("k", policy, cost=4)
    too_much = await backend.limiter.hit("k", policy, cost=7)
    rest = await backend.limiter.hit("k", policy, cost=6)

    assert (spent.allowed, spent.remaining) == (True, 6)
    assert (too_much.allowed, too_much.remaining) == (False, 6)
    assert too_much.retry_after == pytest.approx(1 / NEGLIGIBLE_RATE, rel=1e-3)
    assert (rest.allowed, rest.remaining) == (True, 0)


@pytest.mark.parametrize("cost", [0, -1, 11])
async def test_cost_outside_one_to_burst_is_refused_as_a_value_error(
    backend: Backend, cost: int
) -> None:
    with pytest.raises(ValueError, match="cost"):
        await backend.limiter.hit("k", RateLimitPolicy(rate=1, burst=10), cost=cost)


async def test_empty_key_is_a_value_error(backend: Backend) -> None:
    with pytest.raises(ValueError, match="key"):
        await backend.limiter.hit("", RateLimitPolicy())


async def test_keys_have_separate_buckets(backend: Backend) -> None:
    policy = RateLimitPolicy(rate=NEGLIGIBLE_RATE, burst=2)
    await hits(backend.limiter, "a", policy, 3)

    assert await hits(backend.limiter, "b", policy, 3) == [True, True, False]


async def test_concurrent_hits_never_overspend_the_bucket(backend: Backend) -> None:
    policy = RateLimitPolicy(rate=NEGLIGIBLE_RATE, burst=100)

    decisions = await asyncio.gather(*(backend.limiter.hit("k", policy) for _ in range(200)))

    assert sum(d.allowed for d in decisions) == 100


async def test_lowered_burst_caps_a_bucket_filled_under_the_old_one(backend: Backend) -> None:
    await backend.limiter.hit("k", RateLimitPolicy(rate=NEGLIGIBLE_RATE, burst=10))

    decision = await backend.limiter.hit("k", RateLimitPolicy(rate=NEGLIGIBLE_RATE, burst=3))

    assert (decision.allowed, decision.limit, decision.remaining) == (True, 3, 2)


async def test_limiters_satisfy_the_protocol(backend: Backend) -> None:
    assert isinstance(backend.limiter, RateLimiter)


# --- headers ----------------------------------------------------------------------------


def test_headers_of_an_allowed_request() -> None:
    decision = RateLimitDecision(
        allowed=True, limit=100, remaining=57, reset_after=0.86, retry_after=0.0, window=2
    )

    assert decision.headers() == {
        "RateLimit-Policy": '"default";q=100;w=2',
        "RateLimit": '"default";r=57;t=1',
        "RateLimit-Limit": "100",
        "RateLimit-Remaining": "57",
        "RateLimit-Reset": "1",
    }


def test_headers_of_a_refused_request_add_retry_after_of_at_least_one_second() -> None:
    decision = RateLimitDecision(
        allowed=False, limit=100, remaining=0, reset_after=1.98, retry_after=0.02, window=2
    )

    assert decision.headers() == {
        "RateLimit-Policy": '"default";q=100;w=2',
        "RateLimit": '"default";r=0;t=2',
        "RateLimit-Limit": "100",
        "RateLimit-Remaining": "0",
        "RateLimit-Reset": "2",
        "Retry-After": "1",
    }


def test_header_times_round_up_to_whole_seconds() -> None:
    decision = RateLimitDecision(
        allowed=False, limit=5, remaining=0, reset_after=10.2, retry_after=2.01, window=10
    )

    headers = decision.headers()

    assert (headers["RateLimit-Reset"], headers["Retry-After"]) == ("11", "3")


# --- Retry-After: one rule for the rate limiter, the flood guard and the server's own 503 ---


@pytest.mark.parametrize(
    ("seconds", "header"),
    [
        (-3.0, "1"),
        (0, "1"),
        (0.0000001, "1"),
        (1.0, "1"),
        # Float noise above a whole second (the limiter admits it too): not a second more.
        (1.0000000001, "1"),
        (1.000001, "2"),
        (2.5, "3"),
        (1e12, "1000000000000"),
        (2.0**60, str(2**60)),
    ],
)
def test_retry_after_is_whole_seconds_rounded_up_and_at_least_one(
    seconds: float, header: str
) -> None:
    assert retry_after_header(seconds) == header
    assert retry_after_seconds(seconds) == int(header)


@given(st.timedeltas(min_value=timedelta(0), max_value=timedelta(days=3650)))
def test_retry_after_of_a_flood_guard_wait_is_never_early(wait: timedelta) -> None:
    # The flood guard's waits are timedeltas: whole microseconds, never within the epsilon.
    assert retry_after_seconds(wait.total_seconds()) >= wait.total_seconds()


@pytest.mark.parametrize("seconds", [0.02, 1.0, 1.0000000001, 1.000001, 59.5])
def test_every_retry_after_header_follows_the_one_rule(seconds: float) -> None:
    expected = retry_after_header(seconds)
    decision = RateLimitDecision(
        allowed=False, limit=5, remaining=0, reset_after=60, retry_after=seconds, window=60
    )
    flood = error_response(RecipientRateLimited("over the limit", retry_after=seconds))
    answer = server_answer(503, "STORAGE_UNAVAILABLE", "busy", retry_after=seconds)

    assert decision.headers()["Retry-After"] == expected
    assert flood.headers["retry-after"] == expected
    assert f"retry-after: {expected}\r\n".encode() in answer


def test_headers_leave_out_w_when_the_window_is_unknown() -> None:
    decision = RateLimitDecision(
        allowed=True, limit=10, remaining=9, reset_after=0.1, retry_after=0.0
    )

    assert decision.headers()["RateLimit-Policy"] == '"default";q=10'


async def test_headers_of_the_default_policy_after_43_requests() -> None:
    limiter = MemoryRateLimiter(ManualClock())
    decision = [await limiter.hit("k", RateLimitPolicy()) for _ in range(43)][-1]

    assert decision.headers() == {
        "RateLimit-Policy": '"default";q=100;w=2',
        "RateLimit": '"default";r=57;t=1',
        "RateLimit-Limit": "100",
        "RateLimit-Remaining": "57",
        "RateLimit-Reset": "1",
    }


# --- the policy ---------------------------------------------------------------------------


def test_default_policy_is_50_per_second_with_burst_100() -> None:
    policy = RateLimitPolicy()

    assert (policy.rate, policy.burst, policy.window) == (50.0, 100, 2)


@pytest.mark.parametrize(
    ("rate", "burst"),
    [(0, 10), (-1, 10), (math.nan, 10), (math.inf, 10), (1, 0), (1, -5)],
)
def test_policy_refuses_non_positive_or_non_finite_values(rate: float, burst: int) -> None:
    with pytest.raises(ValueError, match="must be"):
        RateLimitPolicy(rate=rate, burst=burst)


@pytest.mark.parametrize(("rate", "burst"), [(True, 10), ("5", 10), (1, 1.5), (1, True)])
def test_policy_refuses_values_of_the_wrong_type(rate: object, burst: object) -> None:
    with pytest.raises(TypeError):
        RateLimitPolicy(rate=rate, burst=burst)  # type: ignore[arg-type]


def test_window_is_at_least_one_second() -> None:
    assert RateLimitPolicy(rate=1000, burst=100).window == 1


# --- the in-process backend ------------------------------------------------------------------


async def test_memory_refill_is_continuous() -> None:
    clock = ManualClock()
    limiter = MemoryRateLimiter(clock)
    policy = RateLimitPolicy(rate=50, burst=100)
    await hits(limiter, "k", policy, 100)

    clock.advance(0.5)

    assert await hits(limiter, "k", policy, 26) == [True] * 25 + [False]


async def test_memory_waiting_exactly_retry_after_is_enough() -> None:
    clock = ManualClock()
    limiter = MemoryRateLimiter(clock)
    policy = RateLimitPolicy(rate=50, burst=1)
    await limiter.hit("k", policy)
    refused = await limiter.hit("k", policy)

    clock.advance(refused.retry_after)

    assert (await limiter.hit("k", policy)).allowed


async def test_memory_clock_set_backwards_does_not_drain_the_bucket() -> None:
    clock = ManualClock()
    limiter = MemoryRateLimiter(clock)
    policy = RateLimitPolicy(rate=NEGLIGIBLE_RATE, burst=3)
    await limiter.hit("k", policy)

    clock.set(clock.now() - timedelta(hours=1))

    assert await hits(limiter, "k", policy, 3) == [True, True, False]


async def test_memory_forgets_buckets_that_have_refilled() -> None:
    clock = ManualClock()
    limiter = MemoryRateLimiter(clock)
    policy = RateLimitPolicy(rate=10, burst=10)
    for n in range(100):
        await limiter.hit(f"key-{n}", policy)
    assert len(limiter) == 100

    clock.advance(1)
    await hits(limiter, "other", policy, 20)

    assert len(limiter) == 1


async def test_memory_holds_at_most_max_keys_buckets() -> None:
    limiter = MemoryRateLimiter(ManualClock(), max_keys=10)
    policy = RateLimitPolicy(rate=NEGLIGIBLE_RATE, burst=5)

    for n in range(50):
        await limiter.hit(f"key-{n}", policy)

    assert len(limiter) == 10


async def test_memory_aclose_drops_every_bucket() -> None:
    limiter = MemoryRateLimiter(ManualClock())
    await limiter.hit("k", RateLimitPolicy())

    await limiter.aclose()

    assert len(limiter) == 0


@given(
    rate=st.floats(min_value=0.01, max_value=200),
    burst=st.integers(min_value=1, max_value=50),
    steps=st.lists(
        st.tuples(st.floats(min_value=0, max_value=2), st.integers(min_value=1, max_value=5)),
        max_size=60,
    ),
)
def test_memory_never_allows_more_than_burst_plus_refill(
    rate: float, burst: int, steps: list[tuple[float, int]]
) -> None:
    clock = ManualClock()
    start = clock.now()
    limiter = MemoryRateLimiter(clock)
    policy = RateLimitPolicy(rate=rate, burst=burst)
    spent = 0
    with asyncio.Runner() as runner:
        for advance, cost in steps:
            clock.advance(advance)
            decision = runner.run(limiter.hit("k", policy, min(cost, burst)))
            spent += min(cost, burst) if decision.allowed else 0
            elapsed = (clock.now() - start).total_seconds()
            assert spent <= burst + rate * elapsed + 1e-6


# --- the Redis backend ----------------------------------------------------------------------


@pytest.mark.parametrize("how", ["url", "client"])
async def test_redis_unreachable_is_storage_unavailable(how: str) -> None:
    aioredis = pytest.importorskip("redis.asyncio")
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff

    # The caller's own client keeps its retry policy; redis-py's default backs off for seconds.
    client = aioredis.Redis(host="127.0.0.1", port=1, retry=Retry(NoBackoff(), retries=0))
    limiter = RedisRateLimiter("redis://127.0.0.1:1/0" if how == "url" else client)
    try:
        with pytest.raises(StorageUnavailable) as caught:
            await limiter.hit("k", RateLimitPolicy())
    finally:
        await limiter.aclose()
        await client.aclose()
    assert caught.value.code == "STORAGE_UNAVAILABLE"
    assert "127.0.0.1" not in caught.value.message


async def test_redis_repr_hides_the_password() -> None:
    pytest.importorskip("redis")
    limiter = RedisRateLimiter("redis://user:s3cret-pw@127.0.0.1:6379/0?password=s3cret-pw")
    try:
        text = repr(limiter)
    finally:
        await limiter.aclose()

    assert "s3cret-pw" not in text
    assert "redis://user:***@127.0.0.1:6379/0" in text


def test_redis_without_the_extra_names_the_install_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "redis", None)
    monkeypatch.setitem(sys.modules, "redis.asyncio", None)

    with pytest.raises(ImportError, match=r"needs the 'redis' extra.*pip install '\.\[redis\]'"):
        RedisRateLimiter("redis://127.0.0.1:6379/0")


@pytest.mark.redis
async def test_redis_bucket_expires_when_it_would_be_full_again(
    redis_url: str, redis_prefix: str
) -> None:
    from redis.asyncio import Redis

    limiter = RedisRateLimiter(redis_url, prefix=redis_prefix)
    client = Redis.from_url(redis_url)
    try:
        await limiter.hit("k", RateLimitPolicy(rate=10, burst=5))
        ttl_ms = await client.pttl(f"{redis_prefix}k")
    finally:
        await client.aclose()
        await limiter.aclose()

    assert 0 < ttl_ms <= 100


@pytest.mark.redis
async def test_redis_limiters_on_one_prefix_share_buckets(
    redis_url: str, redis_prefix: str
) -> None:
    policy = RateLimitPolicy(rate=NEGLIGIBLE_RATE, burst=2)
    one = RedisRateLimiter(redis_url, prefix=redis_prefix)
    other = RedisRateLimiter(redis_url, prefix=redis_prefix)
    try:
        await hits(one, "k", policy, 2)
        refused = await other.hit("k", policy)
    finally:
        await one.aclose()
        await other.aclose()

    assert not refused.allowed


@pytest.mark.redis
async def test_redis_caller_owned_client_stays_open(redis_url: str, redis_prefix: str) -> None:
    from redis.asyncio import Redis

    client = Redis.from_url(redis_url)
    try:
        limiter = RedisRateLimiter(client, prefix=redis_prefix)
        await limiter.hit("k", RateLimitPolicy())
        await limiter.aclose()

        assert await client.ping()
    finally:
        await client.aclose()


# --- choosing a backend -------------------------------------------------------------------


@pytest.mark.parametrize("url", [None, "memory://"])
async def test_from_url_keeps_the_limiter_in_process(url: str | None) -> None:
    limiter = rate_limiter_from_url(url)

    assert isinstance(limiter, MemoryRateLimiter)
    await limiter.aclose()


async def test_from_url_shares_the_limiter_through_redis() -> None:
    pytest.importorskip("redis")
    limiter = rate_limiter_from_url("redis://127.0.0.1:6379/0")

    assert isinstance(limiter, RedisRateLimiter)
    await limiter.aclose()


def test_from_url_refuses_an_unknown_scheme() -> None:
    with pytest.raises(ValueError, match="scheme"):
        rate_limiter_from_url("ftp://example.com")


async def test_the_socket_limiter_without_its_host_is_storage_unavailable(tmp_path: Path) -> None:
    # serve --workers: a server whose parent is gone answers 503, never lets a request through.
    from unified_messaging._access.socket_ratelimit import RateLimitHost, SocketRateLimiter

    host = RateLimitHost(str(tmp_path / "rl.sock"))
    host.start()
    limiter = SocketRateLimiter(host.path)
    policy = RateLimitPolicy(rate=NEGLIGIBLE_RATE, burst=5)
    first = await limiter.hit("k", policy)
    host.stop()

    with pytest.raises(StorageUnavailable):
        await limiter.hit("k", policy)
    await limiter.aclose()
    assert first.allowed


async def test_a_cancelled_socket_limiter_call_does_not_leave_its_answer_for_the_next(
    tmp_path: Path,
) -> None:
    # serve --workers: a request cancelled while its hit waited for the host (the client
    # went away) must not leave that answer on the connection, where the next hit, for
    # another key, would read it as its own.
    from unified_messaging._access.socket_ratelimit import RateLimitHost, SocketRateLimiter

    host = RateLimitHost(str(tmp_path / "rl.sock"))
    host.start()
    limiter = SocketRateLimiter(host.path)
    try:
        await limiter.hit("warm", RateLimitPolicy(rate=NEGLIGIBLE_RATE, burst=1))  # connected
        cancelled = asyncio.create_task(
            limiter.hit("a", RateLimitPolicy(rate=NEGLIGIBLE_RATE, burst=5))
        )
        # One turn of the loop: the request is written and the task waits for its answer
        # (the answer can only be read on a later turn).
        await asyncio.sleep(0)
        cancelled.cancel()
        with pytest.raises(asyncio.CancelledError):
            await cancelled
        answers = [
            await limiter.hit("b", RateLimitPolicy(rate=NEGLIGIBLE_RATE, burst=9)) for _ in range(3)
        ]
    finally:
        await limiter.aclose()
        host.stop()

    assert [(d.limit, d.remaining) for d in answers] == [(9, 8), (9, 7), (9, 6)]


async def test_concurrent_socket_limiter_hits_each_get_their_own_answer(tmp_path: Path) -> None:
    # serve --workers: the hits that wait while an exchange with the host is under way go
    # in the next one together; each caller must still get the answer to its own question.
    from unified_messaging._access.socket_ratelimit import RateLimitHost, SocketRateLimiter

    host = RateLimitHost(str(tmp_path / "rl.sock"))
    host.start()
    limiter = SocketRateLimiter(host.path)
    try:
        answers = await asyncio.gather(
            *(
                limiter.hit(f"k{burst}", RateLimitPolicy(rate=NEGLIGIBLE_RATE, burst=burst))
                for burst in range(1, 41)
            )
        )
        again = await asyncio.gather(
            *(limiter.hit("k1", RateLimitPolicy(rate=NEGLIGIBLE_RATE, burst=1)) for _ in range(3))
        )
    finally:
        await limiter.aclose()
        host.stop()

    assert [(d.limit, d.remaining, d.allowed) for d in answers] == [
        (burst, burst - 1, True) for burst in range(1, 41)
    ]
    assert [d.allowed for d in again] == [False, False, False]


async def test_the_rate_limit_host_answers_every_line_a_client_wrote_at_once(
    tmp_path: Path,
) -> None:
    # The host reads what a client batched in one write (and a line split across two reads)
    # and answers every line, in order.
    from unified_messaging._access.socket_ratelimit import RateLimitHost

    host = RateLimitHost(str(tmp_path / "rl.sock"))
    host.start()
    try:
        reader, writer = await asyncio.open_unix_connection(host.path)
        lines = [json.dumps([f"k{n}", NEGLIGIBLE_RATE, n, 1]).encode() + b"\n" for n in (3, 4, 5)]
        batch = b"".join(lines)
        writer.write(batch[:-7])
        await writer.drain()
        writer.write(batch[-7:])
        answers = [json.loads(await reader.readline()) for _ in lines]
        writer.close()
        await writer.wait_closed()
    finally:
        host.stop()

    assert [(a[0], a[1], a[2]) for a in answers] == [(True, 3, 2), (True, 4, 3), (True, 5, 4)]
