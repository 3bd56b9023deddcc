"""The REST endpoints: what each reads from HTTP, which façade method it calls.

Every authenticated endpoint runs the same frame: authorize (the core's 401 → 403 → 429),
then the operation, whose own errors come out in the core's order (400 → 404 → 422 →
quota). The RateLimit fields go on every answer after the rate-limit check, errors included.

POSTs add ``Idempotency-Key`` (the rules are the core's, in ``_idempotency``) between the
400s and the rest: the body is read and validated against the core's request model first,
so a malformed request is a 400 whatever its key, and only a well-formed one can claim,
replay or conflict with a key. This module only decides what an answer is in HTTP terms:
a status and the exact body bytes.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Final, Protocol, TypeVar

from starlette.requests import Request
from starlette.responses import Response

from .._access.idempotency import (
    BoundJobs,
    IdempotencyKeys,
    StoredAnswer,
    check_idempotency_key,
    keeps_answer,
    request_fingerprint,
)
from .._errors import MessagingError, NotFound
from .._messenger import Messenger, Principal
from .._models import BulkRequest, SendRequest, parse_model
from .._search import parse_query_string
from .._version import __version__
from ..store.base import IdempotencyClaim
from ._auth import authorize
from ._body import read_json_object
from ._client_ip import ClientAddress
from ._consents import ConsentsEndpoint
from ._dry_run import dry_run_asked
from ._errors import JSON_MEDIA_TYPE, error_body, error_response, json_bytes
from ._stats import StatsEndpoint
from ._suppressions import SuppressionsEndpoint
from ._verifications import VerificationsEndpoint

__all__ = ["RestApi"]

REPLAYED_HEADER: Final = "Idempotent-Replayed"
logger = logging.getLogger("unified_messaging.asgi")


RequestModel = TypeVar("RequestModel", SendRequest, BulkRequest)
RequestIn = TypeVar("RequestIn", SendRequest, BulkRequest, contravariant=True)


class Answer(Protocol):
    """A send's or a bulk's answer: its contract body, as the bytes to send."""

    def to_json(self) -> bytes: ...


class Operation(Protocol[RequestIn]):
    def __call__(
        self, auth: Principal, request: RequestIn, *, idempotency: IdempotencyClaim | None
    ) -> Awaitable[Answer]: ...


Handler = Callable[[Request, Principal], Awaitable[Response]]


def _json(body: bytes, status_code: int, headers: Mapping[str, str] | None = None) -> Response:
    return Response(body, status_code=status_code, headers=headers, media_type=JSON_MEDIA_TYPE)


class RestApi:
    """The endpoints of one app, bound to its messenger and its HTTP settings."""

    def __init__(
        self,
        messenger: Messenger,
        *,
        client_address: ClientAddress,
        max_body_bytes: int,
        idempotency: IdempotencyKeys,
    ) -> None:
        self._messenger = messenger
        self._client_address = client_address
        self._max_body_bytes = max_body_bytes
        self._keys = idempotency
        self._suppressions = SuppressionsEndpoint(
            messenger, client_address=client_address, max_body_bytes=max_body_bytes
        )
        self._consents = ConsentsEndpoint(
            messenger, client_address=client_address, max_body_bytes=max_body_bytes
        )
        self._verifications = VerificationsEndpoint(
            messenger, max_body_bytes=max_body_bytes, client_address=client_address
        )
        self._stats = StatsEndpoint(messenger)
        # The health answer does no I/O and never changes: build it once.
        self._health = json_bytes({"status": "ok", "version": __version__})

    # ------------------------------------------------------------------ endpoints

    async def health(self, request: Request) -> Response:
        return _json(self._health, 200)

    async def send(self, request: Request) -> Response:
        if request.scope.get("query_string"):
            return await self._authorized(request, self._send_with_query)
        handler = self._post("/v1/messages", SendRequest, self._messenger.send)
        return await self._authorized(request, handler)

    async def send_bulk(self, request: Request) -> Response:
        handler = self._post("/v1/messages/bulk", BulkRequest, self._messenger.send_bulk)
        if request.scope.get("query_string"):
            return await self._authorized(request, self._refusing_query(handler))
        return await self._authorized(request, handler)

    async def get_message(self, request: Request) -> Response:
        return await self._authorized(request, self._get_message)

    async def cancel_message(self, request: Request) -> Response:
        """``POST /v1/messages/{job_id}/cancel``: no body is read; a cancel is
        safe to retry as it is (a canceled message answers the same), so it takes no
        ``Idempotency-Key``."""
        return await self._authorized(request, self._cancel_message)

    async def messages(self, request: Request) -> Response:
        """``/v1/messages``: POST sends one message, GET lists them (D29)."""
        if request.method == "POST":
            return await self.send(request)
        return await self._authorized(request, self._list_messages)

    async def suppressions(self, request: Request) -> Response:
        """``/v1/suppressions``: GET lists, POST adds, DELETE removes."""
        return await self._authorized(request, self._suppressions)

    async def simulate_inbound(self, request: Request) -> Response:
        """``POST /v1/test_helpers/inbound``: a reply as if a recipient sent it (test keys
        only; a live key gets 404, as if there were no such endpoint)."""
        return await self._authorized(request, self._simulate_inbound)

    async def _simulate_inbound(self, request: Request, principal: Principal) -> Response:
        if principal.livemode:
            # Before the body is read: nothing about this endpoint is a live key's business.
            raise NotFound
        payload = await read_json_object(request, self._max_body_bytes)
        record = await self._messenger.test_helpers.inbound(principal, payload)
        return _json(record.to_json(), 201)

    async def consents(self, request: Request) -> Response:
        """``/v1/consents``: GET lists, POST records one (D33)."""
        return await self._authorized(request, self._consents.collection)

    async def consent(self, request: Request) -> Response:
        """``GET /v1/consents/{consent_id}``: one consent and its history (D33)."""
        return await self._authorized(request, self._consents.one)

    async def start_verification(self, request: Request) -> Response:
        """``POST /v1/verifications`` (D34)."""
        return await self._authorized(request, self._verifications.start)

    async def get_verification(self, request: Request) -> Response:
        return await self._authorized(request, self._verifications.get)

    async def verification_stats(self, request: Request) -> Response:
        """``GET /v1/verifications/stats``: conversion per hour and channel (D34)."""
        return await self._authorized(request, self._verifications.stats)

    async def check_verification(self, request: Request) -> Response:
        return await self._authorized(request, self._verifications.check)

    async def cancel_verification(self, request: Request) -> Response:
        return await self._authorized(request, self._verifications.cancel)

    async def _send_with_query(self, request: Request, principal: Principal) -> Response:
        """``POST /v1/messages?…``: a dry run (D33) for ``dry_run=true``; else the send."""
        if not dry_run_asked(request.query_params.multi_items(), allowed=True):
            handler = self._post("/v1/messages", SendRequest, self._messenger.send)
            return await handler(request, principal)
        idem_key = request.headers.get("idempotency-key")
        if idem_key is not None:
            check_idempotency_key(idem_key)  # a malformed one is the send's 400; nothing to keep
        payload = await read_json_object(request, self._max_body_bytes)
        preview = await self._messenger.preview_send(principal, payload)
        return _json(preview.to_json(), 200)

    @staticmethod
    def _refusing_query(handler: Handler) -> Handler:
        async def refusing(request: Request, principal: Principal) -> Response:
            dry_run_asked(request.query_params.multi_items(), allowed=False)
            return await handler(request, principal)

        return refusing

    async def stats(self, request: Request) -> Response:
        """``GET /v1/stats``: delivery figures of the key's workspace and mode."""
        return await self._authorized(request, self._stats.get)

    # ------------------------------------------------------------------ the frame

    async def _authorized(self, request: Request, handler: Handler) -> Response:
        authorized = await authorize(
            self._messenger, request.headers, self._client_address(request.scope)
        )
        if isinstance(authorized, Response):
            return authorized
        principal, rate_headers = authorized
        try:
            response = await handler(request, principal)
        except MessagingError as exc:
            return error_response(exc, rate_headers)
        # Appended as raw fields: the handlers' answers (_json) carry none of these names,
        # so this is what ``response.headers.update`` would do, without building its view.
        response.raw_headers += [
            (name.lower().encode("latin-1"), value.encode("latin-1"))
            for name, value in rate_headers.items()
        ]
        return response

    async def _get_message(self, request: Request, principal: Principal) -> Response:
        job_id = request.path_params["job_id"]
        return _json(await self._messenger.messages.get_json(principal, job_id), 200)

    async def _cancel_message(self, request: Request, principal: Principal) -> Response:
        record = await self._messenger.cancel_message(principal, request.path_params["job_id"])
        return _json(json_bytes(record.to_dict()), 200)

    async def _list_messages(self, request: Request, principal: Principal) -> Response:
        search = parse_query_string(request.query_params.multi_items())
        page = await self._messenger.list_messages(principal, search)
        return _json(page.to_json(), 200)

    def _post(
        self,
        path: str,
        model: type[RequestModel],
        operation: Operation[RequestModel],
    ) -> Handler:
        async def handler(request: Request, principal: Principal) -> Response:
            idem_key = request.headers.get("idempotency-key")
            if idem_key is not None:
                check_idempotency_key(idem_key)
            payload = await read_json_object(request, self._max_body_bytes)
            parsed = parse_model(model, payload)
            if idem_key is None:
                answer = await operation(principal, parsed, idempotency=None)
                return _json(answer.to_json(), 201)
            # The fingerprint is of the JSON as sent (canonically), not of the parsed model,
            # whose defaults would make different bodies look the same.
            fingerprint = request_fingerprint("POST", path, payload)
            bulk = path.endswith("/bulk")
            return await self._once(principal, idem_key, fingerprint, operation, parsed, bulk)

        return handler

    async def _once(
        self,
        principal: Principal,
        idem_key: str,
        fingerprint: str,
        operation: Operation[RequestModel],
        parsed: RequestModel,
        bulk: bool,
    ) -> Response:
        claim = await self._keys.begin(principal, idem_key, fingerprint)
        if isinstance(claim, StoredAnswer):
            return _json(claim.body, claim.status_code, {REPLAYED_HEADER: "true"})
        if isinstance(claim, BoundJobs):
            # The first request created these jobs and never answered (D22): they, as now.
            current = await self._messenger.messages.current_answer(
                principal, claim.job_ids, bulk=bulk
            )
            return _json(current.to_json(), 201, {REPLAYED_HEADER: "true"})
        try:
            answer = await operation(principal, parsed, idempotency=claim)
        except MessagingError as exc:
            if not keeps_answer(exc):
                await self._release(principal, idem_key, claim.owner)
                raise
            body = json_bytes(error_body(exc))
            await self._finish(principal, idem_key, exc.http_status, body)
            return error_response(exc)
        except BaseException:
            await self._release(principal, idem_key, claim.owner)
            raise
        body = answer.to_json()
        await self._finish(principal, idem_key, 201, body)
        return _json(body, 201)

    async def _finish(self, principal: Principal, idem_key: str, status: int, body: bytes) -> None:
        try:
            await self._keys.finish(principal, idem_key, status, body)
        except Exception:
            # The message went out; its answer still reaches the caller. The key stays in
            # flight, so a retry gets 409 rather than a second message, until it times out.
            logger.warning("could not store the answer to an Idempotency-Key", exc_info=True)

    async def _release(self, principal: Principal, idem_key: str, owner: str) -> None:
        try:
            await self._keys.release(principal, idem_key, owner=owner)
        except Exception:
            # The store is down (what failed the request, most likely): the release is done
            # at the next keyed request once it is back, not after the in-flight time-out.
            logger.warning(
                "could not release an Idempotency-Key yet; retried once the store is back"
            )
