"""The one way this package opens Redis (rate limits, circuit breakers, send slots).

A URL gets a client the caller's object owns (closed by its ``aclose``), on a blocking pool
that queues a burst of concurrent calls instead of failing them with "Too many
connections", with every time-out at ``timeout`` so a slow Redis fails fast rather than
holding a request. A ``redis.asyncio.Redis`` passed in stays the caller's. The URL's
password never reaches a repr. ``redis`` is the optional extra, imported here on first use.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["RedisConnection", "connect_redis"]


@dataclass(frozen=True, slots=True)
class RedisConnection:
    client: Redis
    #: Whether :meth:`aclose` closes the client (it was made from a URL here).
    owned: bool
    #: Where it points, fit for a repr: no password.
    where: str
    #: What a failed call raises: the caller turns these into ``StorageUnavailable``.
    errors: tuple[type[Exception], ...]

    async def aclose(self) -> None:
        if self.owned:
            await self.client.aclose()


def connect_redis(
    url_or_client: str | Redis,
    *,
    purpose: str,
    timeout: float = 2.0,
    max_connections: int = 20,
    retry_once: bool = False,
) -> RedisConnection:
    """``purpose`` names what needs Redis in the error for a missing extra. ``retry_once``:
    one immediate retry covers a pooled connection the server dropped (only for calls that
    are safe to repeat)."""
    try:
        from redis.asyncio import BlockingConnectionPool, Redis
        from redis.asyncio.retry import Retry
        from redis.backoff import NoBackoff
        from redis.exceptions import RedisError
    except ImportError as exc:
        from ._errors import MissingExtra

        raise MissingExtra(purpose, extra="redis", setting="UM_REDIS_URL") from exc
    errors: tuple[type[Exception], ...] = (RedisError, OSError)
    if not isinstance(url_or_client, str):
        return RedisConnection(url_or_client, False, _describe(url_or_client), errors)
    pool = BlockingConnectionPool.from_url(
        url_or_client,
        max_connections=max_connections,
        timeout=timeout,
        socket_connect_timeout=timeout,
        socket_timeout=timeout,
        **({"retry": Retry(NoBackoff(), retries=1)} if retry_once else {}),
    )
    return RedisConnection(Redis.from_pool(pool), True, redact_url(url_or_client), errors)


def redact_url(url: str) -> str:
    """The URL with any password replaced, fit for a repr or a log line."""
    parts = urlsplit(url)
    netloc = parts.netloc
    userinfo, at, hostport = netloc.rpartition("@")
    if at and ":" in userinfo:
        netloc = f"{userinfo.partition(':')[0]}:***@{hostport}"
    # Rebuilt by hand: urlunsplit drops the "//" of "unix:///path" when the netloc is empty.
    redacted = f"{parts.scheme}://{netloc}{parts.path}"
    if parts.query:
        redacted += f"?{_redact_query(parts.query)}"
    return redacted


def _redact_query(query: str) -> str:
    # redis-py also accepts ?password=… (unix:// URLs have no other place for it).
    pairs = [p.partition("=") for p in query.split("&")] if query else []
    return "&".join(f"{k}=***" if k.lower() == "password" else f"{k}{eq}{v}" for k, eq, v in pairs)


def _describe(client: Redis) -> str:
    kwargs = client.connection_pool.connection_kwargs
    db = kwargs.get("db", 0)
    if "path" in kwargs:
        return f"unix://{kwargs['path']}?db={db}"
    return f"redis://{kwargs.get('host', 'localhost')}:{kwargs.get('port', 6379)}/{db}"
