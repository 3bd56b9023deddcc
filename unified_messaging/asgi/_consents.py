"""``/v1/consents`` (D33): İYS consents over REST.

``POST /v1/consents`` records one (a JSON body; 201 with the consent and its İYS state),
``GET /v1/consents`` lists them (query ``recipient``, ``status``, ``limit``,
``starting_after``), ``GET /v1/consents/{consent_id}`` shows one with its history. The rules
are the service's (``messenger.consents``); a change is audited under the API key that made
it (D32).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from .._messenger import Messenger, Principal
from ..audit._context import Actor, acting_as
from ._body import read_json_object
from ._client_ip import ClientAddress
from ._errors import JSON_MEDIA_TYPE
from ._suppressions import _query

__all__ = ["ConsentsEndpoint"]


class ConsentsEndpoint:
    """The handlers of ``/v1/consents`` and ``/v1/consents/{consent_id}`` (run inside
    :meth:`RestApi._authorized`)."""

    def __init__(
        self, messenger: Messenger, *, client_address: ClientAddress, max_body_bytes: int
    ) -> None:
        self._consents = messenger.consents
        self._client_address = client_address
        self._max_body_bytes = max_body_bytes

    async def collection(self, request: Request, principal: Principal) -> Response:
        if request.method == "GET":
            query = _query(request.query_params.multi_items())
            page = await self._consents.list(principal, query)
            return _json(page.to_json(), 200)
        payload = await read_json_object(request, self._max_body_bytes)
        key = principal.key.id if principal.key is not None else "unknown"
        with acting_as(Actor(f"api_key:{key}", self._client_address(request.scope))):
            created = await self._consents.create(principal, payload)
        return _json(created.to_json(), 201)

    async def one(self, request: Request, principal: Principal) -> Response:
        detail = await self._consents.get(principal, request.path_params["consent_id"])
        return _json(detail.to_json(), 200)


def _json(body: bytes, status_code: int) -> Response:
    return Response(body, status_code=status_code, media_type=JSON_MEDIA_TYPE)
