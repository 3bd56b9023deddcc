"""Time rate-limit hits: ``python benchmarks/bench_ratelimit.py``.

The limiter runs on every authenticated request, so the in-process hit should stay a few µs
whatever the number of keys. The Redis backend (one EVALSHA round trip) runs too when
``UM_BENCH_REDIS_URL`` or ``UM_TEST_REDIS_URL`` is set; its keys go under a throwaway prefix
and expire on their own within seconds.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid

from unified_messaging._access.ratelimit import MemoryRateLimiter, RateLimiter, RateLimitPolicy
from unified_messaging._access.redis_ratelimit import RedisRateLimiter

# Fast refill so keys fall out of memory / expire in Redis soon after the run.
POLICY = RateLimitPolicy(rate=1_000, burst=1_000)


async def sequential(limiter: RateLimiter, keys: int, hits: int) -> float:
    """Microseconds per hit, one after another, spread round-robin over ``keys`` keys."""
    names = [f"key-{n}" for n in range(keys)]
    start = time.perf_counter()
    for n in range(hits):
        await limiter.hit(names[n % keys], POLICY)
    return (time.perf_counter() - start) / hits * 1e6


async def concurrent(limiter: RateLimiter, hits: int, width: int) -> float:
    """Hits per second with ``width`` hits in flight at once on one key."""
    start = time.perf_counter()
    for _ in range(hits // width):
        await asyncio.gather(*(limiter.hit("hot", POLICY) for _ in range(width)))
    return hits / (time.perf_counter() - start)


async def bench(name: str, limiter: RateLimiter, hits: int) -> None:
    for keys in (1, 1_000, 100_000):
        micros = await sequential(limiter, keys, hits)
        print(f"{name:7} sequential  {keys:>7} keys  {micros:9.2f} µs/hit")
    per_second = await concurrent(limiter, hits, width=100)
    print(f"{name:7} concurrent  100 in flight  {per_second:12,.0f} hits/s")
    await limiter.aclose()


async def main() -> None:
    await bench("memory", MemoryRateLimiter(), hits=200_000)
    url = os.environ.get("UM_BENCH_REDIS_URL") or os.environ.get("UM_TEST_REDIS_URL")
    if url:
        prefix = f"um:bench:rl:{uuid.uuid4().hex}:"
        await bench("redis", RedisRateLimiter(url, prefix=prefix), hits=5_000)
    else:
        print("redis   skipped: set UM_BENCH_REDIS_URL (or UM_TEST_REDIS_URL)")


if __name__ == "__main__":
    asyncio.run(main())
