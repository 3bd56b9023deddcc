"""``/v1/verifications`` (D34): one-time codes over REST.

``POST /v1/verifications`` starts one (201), ``GET /v1/verifications/{id}`` reads it,
``POST /v1/verifications/{id}/check`` checks a code (200), ``POST …/cancel`` cancels it,
``GET /v1/verifications/stats`` answers the conversion per hour and channel. The
rules are the façade's (``messenger.verifications``); this module reads HTTP and writes the
answer. Same authorization, isolation and per-key rate limit as every ``/v1`` route.
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

__all__ = ["VerificationsEndpoint"]


class VerificationsEndpoint:
    """The handlers of ``/v1/verifications…`` (each run inside :meth:`RestApi._authorized`)."""

    def __init__(
        self,
        messenger: Messenger,
        *,
        max_body_bytes: int,
        client_address: ClientAddress | None = None,
    ) -> None:
        self._verifications = messenger.verifications
        self._max_body_bytes = max_body_bytes
        self._client_address = client_address

    async def start(self, request: Request, principal: Principal) -> Response:
        payload = await read_json_object(request, self._max_body_bytes)
        # A refusal of the SMS-pumping guard is audited: under this key, from this address.
        key = principal.key.id if principal.key is not None else "unknown"
        address = self._client_address(request.scope) if self._client_address else None
        with acting_as(Actor(f"api_key:{key}", address)):
            started = await self._verifications.start(principal, payload)
        return _json(started.to_json(), 201)

    async def stats(self, request: Request, principal: Principal) -> Response:
        query = _query(request.query_params.multi_items())
        found = await self._verifications.stats(principal, query)
        return _json(found.to_json(), 200)

    async def get(self, request: Request, principal: Principal) -> Response:
        found = await self._verifications.get(principal, request.path_params["verification_id"])
        return _json(found.to_json(), 200)

    async def check(self, request: Request, principal: Principal) -> Response:
        payload = await read_json_object(request, self._max_body_bytes)
        verification_id = request.path_params["verification_id"]
        checked = await self._verifications.check(principal, verification_id, payload)
        return _json(checked.to_json(), 200)

    async def cancel(self, request: Request, principal: Principal) -> Response:
        verification_id = request.path_params["verification_id"]
        canceled = await self._verifications.cancel(principal, verification_id)
        return _json(canceled.to_json(), 200)


def _json(body: bytes, status_code: int) -> Response:
    return Response(body, status_code=status_code, media_type=JSON_MEDIA_TYPE)
