"""The shared rate limiter (D16) for many processes and hosts: the token bucket in Redis.

One Lua script refills and spends a bucket atomically, so concurrent hits from any number of
hosts never over-spend it. It reads the clock with Redis ``TIME``: every host then agrees on
"now", and a host with a skewed clock can neither drain nor refill buckets for the others
(taking "now" from the caller would make the bucket only as right as the worst clock). Since
Redis 5 scripts replicate their effects, not the script, so a non-deterministic ``TIME`` is safe.
A bucket's key expires when it would be full again, so idle keys cost no memory.

Why not the ``limits`` library: it (5.x) has fixed, moving and sliding windows but no token
bucket, its ``hit`` answers only a boolean (remaining and reset need a second, non-atomic round
trip), and its async Redis storage defaults to ``coredis``; a 30-line script is the smaller
dependency.

The ``redis`` package is the optional extra ``redis``; it is imported when a
limiter is built, so the core imports and runs without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from .._errors import StorageUnavailable
from .._redis_client import connect_redis
from .ratelimit import (
    MemoryRateLimiter,
    RateLimitDecision,
    RateLimiter,
    RateLimitPolicy,
    check_key,
    decide,
)

if TYPE_CHECKING:
    from redis.asyncio import Redis
    from redis.commands.core import AsyncScript

__all__ = ["RedisRateLimiter", "rate_limiter_from_url"]

# KEYS[1] bucket hash {tokens, ts}; ARGV rate (tokens/s), burst, cost. Returns {allowed, tokens}
# with tokens as a string: Redis truncates Lua numbers to integers on the way out.
# Time is kept in integer microseconds, which a Lua double holds exactly.
_BUCKET_SCRIPT: Final = """
if redis.replicate_commands then redis.replicate_commands() end
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(state[1])
local ts = tonumber(state[2])
if tokens == nil or ts == nil then
  tokens = burst
else
  tokens = math.min(burst, tokens + math.max(0, now - ts) * rate / 1000000)
end
local allowed = 0
if tokens + 1e-9 >= cost then
  tokens = math.max(0, tokens - cost)
  allowed = 1
end
local ttl = math.ceil((burst - tokens) * 1000 / rate)
if ttl > 0 then
  redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', tokens),
             'ts', string.format('%.0f', now))
  redis.call('PEXPIRE', KEYS[1], ttl)
else
  redis.call('DEL', KEYS[1])
end
return {allowed, string.format('%.17g', tokens)}
"""


class RedisRateLimiter:
    """Token buckets in Redis, shared by every process and host that uses the same ``prefix``.

    ``url_or_client`` is a ``redis://``/``rediss://``/``unix://`` URL, and the limiter owns
    that client: up to ``max_connections`` connections, ``timeout`` seconds to get one, to
    connect and for each call, closed by :meth:`aclose`. Or it is a ``redis.asyncio.Redis`` that
    the caller owns and closes, with its own pool and retry settings (redis-py's default retries
    back off for seconds, and its default pool fails a burst beyond 100 connections at once).
    Any Redis failure surfaces as :class:`~unified_messaging._errors.StorageUnavailable`.
    """

    def __init__(
        self,
        url_or_client: str | Redis,
        *,
        prefix: str = "um:rl:",
        timeout: float = 2.0,
        max_connections: int = 50,
    ) -> None:
        self._redis = connect_redis(
            url_or_client,
            purpose="The Redis rate limiter",
            timeout=timeout,
            max_connections=max_connections,
            retry_once=True,  # a hit is one atomic script: repeating a dropped one is safe
        )
        self._client: Redis = self._redis.client
        self._errors = self._redis.errors
        self._prefix = prefix
        # register_script caches the SHA: EVALSHA, and SCRIPT LOAD only on NOSCRIPT.
        self._script: AsyncScript = self._client.register_script(_BUCKET_SCRIPT)

    async def hit(self, key: str, policy: RateLimitPolicy, cost: int = 1) -> RateLimitDecision:
        check_key(key)
        policy.check_cost(cost)
        try:
            reply = await self._script(
                keys=[self._prefix + key], args=[repr(float(policy.rate)), policy.burst, cost]
            )
        except self._errors as exc:
            # The driver's message may name the host; the edge renders only our own message.
            raise StorageUnavailable("The rate limiter store is unavailable.") from exc
        allowed, tokens = _parse(reply)
        return decide(allowed, tokens, policy, cost)

    async def aclose(self) -> None:
        await self._redis.aclose()

    def __repr__(self) -> str:
        return f"RedisRateLimiter({self._redis.where!r}, prefix={self._prefix!r})"


def _parse(reply: object) -> tuple[bool, float]:
    if not isinstance(reply, list | tuple) or len(reply) != 2:
        raise StorageUnavailable("The rate limiter store gave an unexpected answer.")
    allowed, tokens = reply
    if isinstance(tokens, bytes):
        tokens = tokens.decode("ascii")
    return bool(allowed), float(tokens)


def rate_limiter_from_url(url: str | None) -> RateLimiter:
    """A limiter for ``UM_REDIS_URL``-style settings: ``None`` or ``memory://`` keep it in
    process; ``redis://``, ``rediss://`` and ``unix://`` share it through Redis.

    Here, not in :mod:`.ratelimit`, so that the in-process limiter's module never imports
    this one (the two were an import circle); ``redis`` itself is
    still imported only when a Redis limiter is built."""
    if url is None or url in {"memory://", "memory:"}:
        return MemoryRateLimiter()
    scheme = url.partition("://")[0].lower()
    if scheme in {"redis", "rediss", "unix"}:
        return RedisRateLimiter(url)
    raise ValueError(
        f"unsupported rate limiter URL scheme {scheme!r}: use memory://, redis://, rediss:// "
        "or unix://"
    )
