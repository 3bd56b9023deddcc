"""``client.stats``: ``GET /v1/stats`` from :class:`Client` and :class:`AsyncClient`.

The query is validated against the server's own model first (a bad window or time zone is
the library's :class:`RequestInvalid` before any request), then sent through the client's
request path (its retries and errors).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TypeAlias

import httpx

from .._models import parse_model
from ._models import StatsOverview, StatsQuery
from ._windows import Window

__all__ = ["AsyncStatsClient", "StatsClient"]

#: ``(method, path, JSON body or None, query)`` to the answer.
AsyncCall: TypeAlias = Callable[[str, str, object, Mapping[str, str]], Awaitable[httpx.Response]]
Call: TypeAlias = Callable[[str, str, object, Mapping[str, str]], httpx.Response]


def _query(window: Window, time_zone: str) -> dict[str, str]:
    query = parse_model(StatsQuery, {"window": window, "time_zone": time_zone})
    return {"window": query.window, "time_zone": query.time_zone}


class AsyncStatsClient:
    """``await client.stats.overview(window="7d")``, for :class:`AsyncClient`."""

    def __init__(self, call: AsyncCall) -> None:
        self._call = call

    def __repr__(self) -> str:
        return "AsyncStatsClient()"

    async def overview(self, *, window: Window = "24h", time_zone: str = "UTC") -> StatsOverview:
        """``GET /v1/stats``: the key's workspace and mode over the window."""
        answer = await self._call("GET", "/v1/stats", None, _query(window, time_zone))
        return StatsOverview.model_validate_json(answer.content)


class StatsClient:
    """The blocking twin of :class:`AsyncStatsClient`, for :class:`Client`."""

    def __init__(self, call: Call) -> None:
        self._call = call

    def __repr__(self) -> str:
        return "StatsClient()"

    def overview(self, *, window: Window = "24h", time_zone: str = "UTC") -> StatsOverview:
        """``GET /v1/stats``: the key's workspace and mode over the window."""
        answer = self._call("GET", "/v1/stats", None, _query(window, time_zone))
        return StatsOverview.model_validate_json(answer.content)
