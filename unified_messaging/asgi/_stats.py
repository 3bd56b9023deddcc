"""``GET /v1/stats``: the delivery figures of the key's workspace and mode, for scripts.

The query (``window``, ``time_zone``) is read as the suppression list's is (a parameter
given twice is a 400); the figures are the façade's (``messenger.stats``). Same
authorization, isolation and per-key rate limit as every ``/v1`` route.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from .._messenger import Messenger, Principal
from ._errors import JSON_MEDIA_TYPE
from ._suppressions import _query

__all__ = ["StatsEndpoint"]


class StatsEndpoint:
    """The handler of ``GET /v1/stats`` (run inside :meth:`RestApi._authorized`)."""

    def __init__(self, messenger: Messenger) -> None:
        self._stats = messenger.stats

    async def get(self, request: Request, principal: Principal) -> Response:
        query = _query(request.query_params.multi_items())
        overview = await self._stats.overview_for(principal, query)
        return Response(overview.to_json(), status_code=200, media_type=JSON_MEDIA_TYPE)
