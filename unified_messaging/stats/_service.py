"""``messenger.stats``: the delivery figures of a workspace over the last 24 hours, 7 days or
30 days (``GET /v1/stats``, the dashboard's Overview).

Every figure comes from the store's counts (``StatsStore``), which the SQL store keeps on
every write: a window costs a few thousand rows at any number of messages. A read first
folds the counts written since the last fold (so the log it also reads stays short), and
:meth:`Stats.keep_folded` folds every minute beside the worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

from .._errors import MessagingError
from .._models import parse_model
from ._models import StatsOverview, StatsQuery, zone_named
from ._overview import build_overview
from ._windows import Window, plan_window

if TYPE_CHECKING:
    from .._access.principal import Principal
    from .._clock import Clock
    from ..store.base import Store
    from ..workspaces._service import Workspaces

__all__ = ["FOLD_EVERY", "Stats"]

logger = logging.getLogger("unified_messaging.stats")

#: Seconds between two folds of :meth:`Stats.keep_folded`.
FOLD_EVERY: Final = 60.0


class Stats:
    """``messenger.stats.overview(workspace_id, window="7d")``: delivery figures."""

    def __init__(self, store: Store, clock: Clock, workspaces: Workspaces) -> None:
        self._store = store
        self._clock = clock
        self._workspaces = workspaces

    def __repr__(self) -> str:
        return "<messenger.stats>"

    async def overview(
        self,
        workspace_id: str,
        *,
        window: Window = "24h",
        livemode: bool = True,
        time_zone: str = "UTC",
    ) -> StatsOverview:
        """The workspace's figures of one mode over ``window`` (``24h`` by hour, ``7d`` or
        ``30d`` by calendar day in ``time_zone``, an IANA name): messages by status per
        bucket, each provider's delivery rate and delivery times, the fallback rate and the
        verification conversion. :class:`RequestInvalid` (400) for a window or zone not
        known; :class:`ResourceNotFound` (404) for an unknown workspace."""
        query = parse_model(StatsQuery, {"window": window, "time_zone": time_zone})
        await self._workspaces.get(workspace_id)  # ResourceNotFound for an unknown one
        return await self._figures(workspace_id, livemode, query)

    async def overview_for(
        self, auth: Principal, query: StatsQuery | Mapping[str, object]
    ) -> StatsOverview:
        """:meth:`overview` of the caller's own workspace and mode (D2): ``GET /v1/stats``
        with its query (``window``, ``time_zone``; anything else is a 400)."""
        return await self._figures(auth.workspace_id, auth.livemode, parse_model(StatsQuery, query))

    async def fold(self) -> int:
        """Fold the counts written since the last fold (see ``Store.fold_stats``); reads
        are exact without it, only slower. Returns how many changes were folded."""
        return await self._store.fold_stats()

    async def keep_folded(self, stop: asyncio.Event, *, every: float = FOLD_EVERY) -> None:
        """Fold every ``every`` seconds until ``stop`` is set (``Messenger.run_worker``
        runs it). A store outage is logged and waited out."""
        while not stop.is_set():
            try:
                await self.fold()
            except Exception:
                logger.warning("could not fold the delivery counts; trying again", exc_info=True)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=every)

    async def _figures(self, workspace_id: str, livemode: bool, query: StatsQuery) -> StatsOverview:
        plan = plan_window(query.window, self._clock.now(), zone_named(query.time_zone))
        try:
            await self.fold()
        except MessagingError:
            # The read below is exact without the fold (it counts the log too): a fold that
            # could not take the write lock must not cost the caller the figures.
            logger.debug("fold before a stats read failed", exc_info=True)
        counts = await self._store.stat_counts(workspace_id, livemode, plan.start, plan.end)
        return build_overview(plan, counts, livemode=livemode)
