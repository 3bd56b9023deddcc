"""Send-rate pacing (D27) in Redis, for deployments that share a Redis (``UM_REDIS_URL``).

Each limit is one string key holding its TAT in microseconds; one Lua script does the GCRA
reservation of :func:`._pacing.gcra` atomically, so concurrent reservations from any host
never hand out the same slot. A key expires a second after its TAT: by then it is idle, and
an idle limit needs no memory (a removed connection's keys go away by themselves).

"Now" is the caller's clock (passed in), as for the store: tests pace on a ManualClock, and
hosts synced by NTP agree within milliseconds. A host whose clock runs ahead could send a
little early (by its lead times the rate); one behind only waits longer.

The ``redis`` package is the optional extra ``redis``, imported when a
pacer is built, as for :class:`~._redis_ratelimit.RedisRateLimiter`.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Final

from .._errors import StorageUnavailable
from .._redis_client import connect_redis
from .pacing import Reservation, interval_us, micros

if TYPE_CHECKING:
    from redis.asyncio import Redis
    from redis.commands.core import AsyncScript

__all__ = ["RedisPacer"]


# KEYS[1] the TAT; ARGV now, cost, burst, max_wait (all microseconds). Returns {granted, wait}.
# Lua numbers are doubles: microseconds since the epoch (~1.8e15) are exact below 2^53.
_RESERVE_SCRIPT: Final = """
local now = tonumber(ARGV[1])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
local new = tat + tonumber(ARGV[2])
local wait = new - tonumber(ARGV[3]) - now
if wait < 0 then wait = 0 end
if wait > tonumber(ARGV[4]) then return {0, wait} end
redis.call('SET', KEYS[1], string.format('%.0f', new), 'PX', math.ceil((new - now) / 1000) + 1000)
return {1, wait}
"""

# KEYS[1] the TAT; ARGV now, cost. Gives slots back, never to before now.
_RELEASE_SCRIPT: Final = """
local found = redis.call('GET', KEYS[1])
if not found then return 0 end
local now = tonumber(ARGV[1])
local tat = tonumber(found) - tonumber(ARGV[2])
if tat < now then tat = now end
redis.call('SET', KEYS[1], string.format('%.0f', tat), 'PX', math.ceil((tat - now) / 1000) + 1000)
return 1
"""


class RedisPacer:
    """A :class:`~._pacing.Pacer` in Redis, shared by every process with the same ``prefix``.

    ``url_or_client`` as for :class:`~._redis_ratelimit.RedisRateLimiter`: a URL (the pacer
    owns that client and closes it in :meth:`aclose`) or a ``redis.asyncio.Redis`` the caller
    owns. Redis failures are :class:`StorageUnavailable`; sends then go out unpaced."""

    def __init__(
        self, url_or_client: str | Redis, *, prefix: str = "um:pace:", timeout: float = 2.0
    ) -> None:
        self._redis = connect_redis(url_or_client, purpose="The Redis pacer", timeout=timeout)
        self._client: Redis = self._redis.client
        self._errors = self._redis.errors
        self._prefix = prefix
        self._reserve: AsyncScript = self._client.register_script(_RESERVE_SCRIPT)
        self._release: AsyncScript = self._client.register_script(_RELEASE_SCRIPT)

    async def reserve(
        self, key: str, *, cost: int, rate: float, burst: int, max_wait: float, now: datetime
    ) -> Reservation:
        step = interval_us(rate)
        args = [micros(now), cost * step, burst * step, max(0, round(max_wait * 1e6))]
        try:
            granted, wait = await self._reserve(keys=[self._prefix + key], args=args)
        except self._errors as exc:
            raise StorageUnavailable("The send-rate store is unavailable.") from exc
        return Reservation(bool(granted), int(wait) / 1e6)

    async def release(self, key: str, *, cost: int, rate: float, now: datetime) -> None:
        try:
            await self._release(
                keys=[self._prefix + key], args=[micros(now), cost * interval_us(rate)]
            )
        except self._errors as exc:
            raise StorageUnavailable("The send-rate store is unavailable.") from exc

    async def aclose(self) -> None:
        await self._redis.aclose()

    def __repr__(self) -> str:
        return f"RedisPacer({self._redis.where!r}, prefix={self._prefix!r})"
