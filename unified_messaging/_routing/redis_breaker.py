"""Circuit-breaker states (D26) in Redis, for deployments that share a Redis (``UM_REDIS_URL``).

Each connection's state is one hash, ``{v: version, d: the state's JSON}``; a Lua script
compares the version and writes in one step, so concurrent writers from any host never
overwrite each other and exactly one of them claims a half-open probe. The state machine
itself is :mod:`._breaker_state`, the same for every backend: Redis only keeps the document.

A key expires a day after its last write: no window, cool-down, pause or probe lease lasts
that long, so an expired key is a closed breaker with nothing to remember (and the keys of
removed connections go away by themselves).

The ``redis`` package is the optional extra ``redis``, imported when a
store is built, as for :class:`~._redis_ratelimit.RedisRateLimiter`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from .._errors import StorageUnavailable
from .._redis_client import connect_redis
from .breaker_state import StoredBreaker

if TYPE_CHECKING:
    from redis.asyncio import Redis
    from redis.commands.core import AsyncScript

__all__ = ["RedisBreakerStore"]

_KEEP_MS: Final = 24 * 3600 * 1000

# KEYS[1] the hash; ARGV expected version, data, ttl in ms. Returns 1 when written, else 0.
_PUT_SCRIPT: Final = """
local v = tonumber(redis.call('HGET', KEYS[1], 'v') or '0')
if v ~= tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], 'v', v + 1, 'd', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
"""


class RedisBreakerStore:
    """A :class:`~._breaker.BreakerStore` in Redis, shared by every process with the same
    ``prefix``. ``url_or_client`` as for :class:`~._redis_ratelimit.RedisRateLimiter`: a URL
    (the store owns that client and closes it in :meth:`aclose`) or a ``redis.asyncio.Redis``
    the caller owns. Redis failures surface as :class:`StorageUnavailable`, which the
    breakers turn into "let the call through"."""

    def __init__(
        self, url_or_client: str | Redis, *, prefix: str = "um:cb:", timeout: float = 2.0
    ) -> None:
        self._redis = connect_redis(
            url_or_client, purpose="The Redis breaker store", timeout=timeout
        )
        self._client: Redis = self._redis.client
        self._errors = self._redis.errors
        self._prefix = prefix
        self._put: AsyncScript = self._client.register_script(_PUT_SCRIPT)

    async def get_breaker(self, connection_id: str) -> StoredBreaker | None:
        try:
            version, data = await self._client.hmget(self._prefix + connection_id, ["v", "d"])
        except self._errors as exc:
            raise StorageUnavailable("The circuit breaker store is unavailable.") from exc
        if version is None or data is None:
            return None
        return StoredBreaker(_text(data), int(version))

    async def put_breaker(self, connection_id: str, data: str, *, version: int) -> bool:
        try:
            written = await self._put(
                keys=[self._prefix + connection_id], args=[version, data, _KEEP_MS]
            )
        except self._errors as exc:
            raise StorageUnavailable("The circuit breaker store is unavailable.") from exc
        return bool(written)

    async def aclose(self) -> None:
        await self._redis.aclose()

    def __repr__(self) -> str:
        return f"RedisBreakerStore({self._redis.where!r}, prefix={self._prefix!r})"


def _text(value: object) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)
