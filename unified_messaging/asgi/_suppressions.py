"""``/v1/suppressions``: the caller's suppression list over REST.

``GET`` lists (query ``channel``, ``recipient``, ``limit``, ``starting_after``), ``POST`` adds
(a JSON body ``{channel, recipient, reason?}``; 201 with the entry as stored, also when it was
there already), ``DELETE`` removes (query ``channel`` and ``recipient``; 200 with the entry
removed, 404 when there was none). The rules are the façade's; the change is recorded in the
audit log under the API key that made it (D32).
"""

from __future__ import annotations

from collections.abc import Iterable

from starlette.requests import Request
from starlette.responses import Response

from .._errors import ErrorDetail, RequestInvalid
from .._messenger import Messenger, Principal
from ..audit._context import Actor, acting_as
from ..suppressions._rules import SuppressionOut
from ._body import read_json_object
from ._client_ip import ClientAddress
from ._errors import JSON_MEDIA_TYPE, json_bytes

__all__ = ["SuppressionsEndpoint"]


class SuppressionsEndpoint:
    """The handler of ``/v1/suppressions`` (run inside :meth:`RestApi._authorized`)."""

    def __init__(
        self, messenger: Messenger, *, client_address: ClientAddress, max_body_bytes: int
    ) -> None:
        self._messenger = messenger
        self._client_address = client_address
        self._max_body_bytes = max_body_bytes

    async def __call__(self, request: Request, principal: Principal) -> Response:
        if request.method == "GET":
            query = _query(request.query_params.multi_items())
            page = await self._messenger.suppressions.list(principal, query)
            return _json(page.to_dict(), 200)
        with acting_as(self._actor(request, principal)):
            if request.method == "POST":
                payload = await read_json_object(request, self._max_body_bytes)
                added = await self._messenger.suppressions.add(principal, payload, source="api")
                return _json(SuppressionOut.of(added).to_dict(), 201)
            target = _query(request.query_params.multi_items())
            removed = await self._messenger.suppressions.remove(principal, target)
            return _json(SuppressionOut.of(removed).to_dict(), 200)

    def _actor(self, request: Request, principal: Principal) -> Actor:
        key = principal.key.id if principal.key is not None else "unknown"
        return Actor(f"api_key:{key}", self._client_address(request.scope))


def _query(items: Iterable[tuple[str, str]]) -> dict[str, object]:
    """A URL query as a mapping; a parameter given twice is a 400."""
    values: dict[str, object] = {}
    repeated: list[str] = []
    for name, value in items:
        if name in values and name not in repeated:
            repeated.append(name)
        values[name] = value
    if repeated:
        details = [ErrorDetail(name, "given more than once") for name in repeated]
        raise RequestInvalid(f"{repeated[0]}: given more than once", details)
    return values


def _json(document: object, status_code: int) -> Response:
    return Response(json_bytes(document), status_code=status_code, media_type=JSON_MEDIA_TYPE)
