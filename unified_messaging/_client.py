"""A client for a deployed server: :class:`AsyncClient` and its blocking twin :class:`Client`.

They speak the REST ``/v1`` contract over httpx with the library's own pydantic models, so a
service that calls a ``unified-messaging serve`` elsewhere gets the same types and the same
exception classes as one that imports :class:`~unified_messaging.Messenger`:

- every POST carries an ``Idempotency-Key`` (D22), made here unless the caller gives one, and
  kept across the retries of that call: a retry after a lost answer gets the first job back,
  never a second send;
- retries (tenacity) on what is safe and worth repeating: no answer (connection refused or
  reset, a time-out), 500/503/504, a 502 that is not our ``PROVIDER_UNAVAILABLE`` (that one is
  the job's final answer, D7), 409 ``IDEMPOTENCY_IN_PROGRESS`` (the first call is still being
  settled), and 429 ``RATE_LIMITED`` after its ``Retry-After``. Nothing else is retried, and
  no wait the server asks for (``Retry-After``) longer than ``max_retry_wait`` is slept: that
  answer is raised at once;
- a retried ``DELETE`` that meets 404 has succeeded: the try whose answer was lost removed it;
- a D13 error body becomes the exception class the library raises for that code
  (:func:`error_from_body`, the inverse of the REST edge's ``error_body``), with the server's
  ``X-Request-ID`` on it as ``request_id``.

The two classes have the same methods, with and without ``await``; a test keeps them in
lock-step.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import TracebackType
from typing import Any, Final, Self, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel, ConfigDict
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
)

from . import _errors
from ._client_suppressions import AsyncSuppressionsClient, SuppressionsClient
from ._errors import (
    ChatUnreachable,
    ErrorDetail,
    MessagingError,
    ProviderUnavailable,
    RateLimited,
    RecipientRateLimited,
    RequestInvalid,
    VerificationRateLimited,
)
from ._models import BulkRequest, BulkResponse, SendRequest, SendResponse, StatusRecord, parse_model
from ._retry_after import parse_retry_after
from ._search import MessagePage
from ._version import __version__
from .consents.client import AsyncConsentsClient, ConsentsClient
from .content.errors import CommercialContentRefused
from .content.models import SendPreview
from .content.rules import HINT_CODES, ContentHint
from .stats._client import AsyncStatsClient, StatsClient
from .verifications._client import AsyncVerificationsClient, VerificationsClient

__all__ = ["AsyncClient", "Client", "Health", "error_from_body"]

DEFAULT_TIMEOUT: Final = 30.0
DEFAULT_MAX_RETRIES: Final = 3
#: A Retry-After (a 429's or a 5xx's) longer than this is raised, not slept through (a flood
#: guard's hour, a server's "come back tomorrow"); ``max_retry_wait`` changes it per client.
DEFAULT_MAX_RETRY_WAIT: Final = 60.0
_BACKOFF_FIRST: Final = 0.5
_BACKOFF_CAP: Final = 8.0
_USER_AGENT: Final = f"unified-messaging-python/{__version__}"

M = TypeVar("M", bound=BaseModel)
Sleep = Callable[[float], None]
AsyncSleep = Callable[[float], Awaitable[None]]


class Health(BaseModel):
    """200 body of ``GET /v1/health`` (D12)."""

    model_config = ConfigDict(frozen=True)

    status: str
    version: str


# ------------------------------------------------------------------------------ errors


def _by_code() -> dict[str, type[MessagingError]]:
    # Breadth first from the base: where several classes share a code (INTERNAL_ERROR), the
    # most general one answers, since the wire does not say which it was.
    found: dict[str, type[MessagingError]] = {}
    queue: list[type[MessagingError]] = [MessagingError]
    while queue:
        cls = queue.pop(0)
        found.setdefault(cls.code, cls)
        queue += cls.__subclasses__()
    return found


_BY_CODE: Final = _by_code()
_BY_STATUS: Final[Mapping[int, type[MessagingError]]] = {
    400: RequestInvalid,
    401: _errors.Unauthorized,
    403: _errors.IpNotAllowed,
    404: _errors.NotFound,
    409: _errors.Conflict,
    413: _errors.PayloadTooLarge,
    422: _errors.Unprocessable,
    429: _errors.TooManyRequests,
    502: ProviderUnavailable,
    503: _errors.StorageUnavailable,
}


def error_from_body(
    status: int, body: object, headers: Mapping[str, str] | None = None
) -> MessagingError:
    """The library's exception for a D13 error answer (the inverse of the REST edge's
    ``error_body``): the class of its ``code`` (or, for a code this version does not know or a
    body that is not D13, the class of its status), its message, ``details``, ``job_id`` and
    ``Retry-After``; ``request_id`` is the answer's ``X-Request-ID``."""
    headers = headers or {}
    error = body.get("error") if isinstance(body, Mapping) else None
    if not isinstance(error, Mapping) or not isinstance(error.get("code"), str):
        found = _BY_STATUS.get(status, MessagingError)(f"HTTP {status} without an error body.")
        return _with_request_id(found, headers)
    code: str = error["code"]
    message = str(error.get("message") or "")
    cls = _BY_CODE.get(code)
    if cls is None:
        cls, message = _BY_STATUS.get(status, MessagingError), f"{code}: {message}"
    job_id = error.get("job_id") if isinstance(error.get("job_id"), str) else None
    made: MessagingError
    if issubclass(cls, RequestInvalid):
        made = cls(message, _details(error.get("details")))
    elif issubclass(cls, RateLimited | RecipientRateLimited | VerificationRateLimited):
        made = cls(message, retry_after=_retry_after(headers) or 1.0)
    elif issubclass(cls, ProviderUnavailable | ChatUnreachable):
        made = cls(message, job_id=job_id)
    elif issubclass(cls, CommercialContentRefused):
        made = cls(message, _hints(error.get("hints")))
    else:
        try:
            made = cls(message)
        except TypeError:  # a class whose constructor needs more than the wire gives
            made = MessagingError(message)
    return _with_request_id(made, headers)


def _details(raw: object) -> list[ErrorDetail]:
    if not isinstance(raw, list):
        return []
    return [
        ErrorDetail(str(item.get("field", "")), str(item.get("message", "")))
        for item in raw
        if isinstance(item, Mapping)
    ]


def _hints(raw: object) -> list[ContentHint]:
    if not isinstance(raw, list):
        return []
    return [
        ContentHint(item["code"], str(item.get("message", "")))
        for item in raw
        if isinstance(item, Mapping) and item.get("code") in HINT_CODES
    ]


def _with_request_id(error: MessagingError, headers: Mapping[str, str]) -> MessagingError:
    error.request_id = headers.get("x-request-id")
    return error


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """The answer's ``Retry-After`` in seconds (the one reader: never raises), or ``None``."""
    return parse_retry_after(headers.get("retry-after"))


# ------------------------------------------------------------------------------ retries


class _Retry(Exception):
    """An answer (or no answer) worth asking again; ``delay`` is what the server asked for."""

    def __init__(self, final: Exception, delay: float | None = None) -> None:
        super().__init__(str(final))
        self.final = final
        self.delay = delay


def _check(
    response: httpx.Response, max_wait: float, *, method: str, retried: bool
) -> httpx.Response:
    """``response`` when it is a success, else :class:`_Retry` or the library's exception.

    A wait the server asks for above ``max_wait`` is not slept: the answer is raised as it is.
    A ``DELETE`` answered 404 on a retry is returned as it is (the caller reads it as done):
    the earlier try, whose answer never arrived, is what removed the thing."""
    if response.is_success or (method == "DELETE" and retried and response.status_code == 404):
        return response
    try:
        body: object = response.json()
    except ValueError:
        body = None
    error = error_from_body(response.status_code, body, response.headers)
    status, code = response.status_code, getattr(type(error), "code", "")
    is_ours = isinstance(body, Mapping) and "error" in body
    asked = _retry_after(response.headers)
    if asked is not None and asked > max_wait:
        raise error
    if status in (500, 503, 504) or (status == 502 and not is_ours):
        raise _Retry(error, asked)
    if status == 409 and code == "IDEMPOTENCY_IN_PROGRESS":
        raise _Retry(error)
    if status == 429 and code == "RATE_LIMITED":
        raise _Retry(error, asked if asked is not None else 1.0)
    raise error


def _wait(state: RetryCallState) -> float:
    outcome = state.outcome
    failure = outcome.exception() if outcome is not None else None
    if isinstance(failure, _Retry) and failure.delay is not None:
        return failure.delay
    backoff: float = _BACKOFF_FIRST * 2.0 ** (state.attempt_number - 1)
    return min(_BACKOFF_CAP, backoff)


def _give_up(state: RetryCallState) -> Any:
    """After the last try: the library's exception (or httpx's) of the last answer."""
    outcome = state.outcome
    failure = outcome.exception() if outcome is not None else None
    if isinstance(failure, _Retry):
        raise failure.final
    assert outcome is not None
    return outcome.result()


def _retrying_kwargs(max_retries: int) -> dict[str, Any]:
    return {
        "stop": stop_after_attempt(max_retries + 1),
        "wait": _wait,
        "retry": retry_if_exception_type(_Retry),
        "retry_error_callback": _give_up,
    }


# ------------------------------------------------------------------------------ calls


@dataclass(frozen=True, slots=True)
class _Call:
    """One request, made the same way by both clients."""

    method: str
    path: str
    json: Any = None
    #: ``None``, not ``{}``: httpx replaces a query the path carries with an empty mapping.
    params: Mapping[str, str] | None = None
    headers: Mapping[str, str] = field(default_factory=dict)


def _post(path: str, model: BaseModel, idempotency_key: str | None) -> _Call:
    body = model.model_dump(mode="json", exclude_unset=True)
    key = idempotency_key or f"umc_{uuid.uuid4().hex}"
    return _Call("POST", path, json=body, headers={"Idempotency-Key": key})


def _preview(request: SendRequest | Mapping[str, Any]) -> _Call:
    # No Idempotency-Key: a dry run changes nothing, so asking again is safe as it is.
    body = parse_model(SendRequest, request).model_dump(mode="json", exclude_unset=True)
    return _Call("POST", "/v1/messages", json=body, params={"dry_run": "true"})


def _cancel(job_id: str) -> _Call:
    # No Idempotency-Key: a cancel is safe to repeat as it is (a canceled message answers
    # the same), so a retry after a lost answer gets the canceled record.
    return _Call("POST", f"/v1/messages/{_path_segment(job_id)}/cancel")


def _list_params(filters: Mapping[str, object], starting_after: str | None) -> dict[str, str]:
    params = {name: _query_value(value) for name, value in filters.items() if value is not None}
    if starting_after is not None:
        params["starting_after"] = starting_after
    return params


def _query_value(value: object) -> str:
    return value.isoformat() if isinstance(value, datetime) else str(value)


def _parse(model: type[M], response: httpx.Response) -> M:
    return model.model_validate_json(response.content)


def _check_max_retries(max_retries: int, max_retry_wait: float) -> None:
    if max_retries < 0:
        raise ValueError("max_retries must be 0 or more")
    if not max_retry_wait >= 0:  # also refuses NaN
        raise ValueError("max_retry_wait must be 0 or more seconds")


def _headers(api_key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}", "User-Agent": _USER_AGENT}


# ------------------------------------------------------------------------------ async


class AsyncClient:
    """The REST ``/v1`` API of a deployed server, for asyncio code.

    ``AsyncClient("https://messaging.internal", api_key="um_live_…")``; close it with
    ``await client.aclose()`` or ``async with``. ``http_client`` replaces the httpx client
    (its own base URL and headers are then yours to set); ``sleep`` is what a retry waits
    with (tests pass a fake); ``max_retry_wait`` is the longest ``Retry-After`` it sleeps
    through (seconds): a longer one is raised at once."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        http_client: httpx.AsyncClient | None = None,
        sleep: AsyncSleep | None = None,
        max_retry_wait: float = DEFAULT_MAX_RETRY_WAIT,
    ) -> None:
        _check_max_retries(max_retries, max_retry_wait)
        self._max_retry_wait = max_retry_wait
        self._http = http_client or httpx.AsyncClient(
            base_url=base_url, headers=_headers(api_key), timeout=timeout
        )
        self._retrying = _retrying_kwargs(max_retries) | ({"sleep": sleep} if sleep else {})
        #: ``/v1/consents`` (D33): ``await client.consents.create(...)``.
        self.consents = AsyncConsentsClient(self._resource_request)
        #: ``/v1/suppressions``: ``await client.suppressions.add("sms", "+90555…")``.
        self.suppressions = AsyncSuppressionsClient(self._resource_request)
        #: ``/v1/verifications`` (D34): ``await client.verifications.start({...})``.
        self.verifications = AsyncVerificationsClient(self._bytes)
        #: ``GET /v1/stats``: ``await client.stats.overview(window="7d")``.
        self.stats = AsyncStatsClient(self._resource_request)

    def __repr__(self) -> str:
        return f"AsyncClient(base_url={str(self._http.base_url)!r})"  # never the key

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def send(
        self, request: SendRequest | Mapping[str, Any], *, idempotency_key: str | None = None
    ) -> SendResponse:
        """``POST /v1/messages`` (SPEC 2.1): one message."""
        call = _post("/v1/messages", parse_model(SendRequest, request), idempotency_key)
        return _parse(SendResponse, await self._request(call))

    async def preview_send(self, request: SendRequest | Mapping[str, Any]) -> SendPreview:
        """``POST /v1/messages?dry_run=true`` (D33): what :meth:`send` would do, after the
        same checks (a refusal raises as the send would); nothing is stored or sent."""
        return _parse(SendPreview, await self._request(_preview(request)))

    async def send_bulk(
        self, request: BulkRequest | Mapping[str, Any], *, idempotency_key: str | None = None
    ) -> BulkResponse:
        """``POST /v1/messages/bulk`` (SPEC 2.3): up to the bulk limit of messages."""
        call = _post("/v1/messages/bulk", parse_model(BulkRequest, request), idempotency_key)
        return _parse(BulkResponse, await self._request(call))

    async def get_message(self, job_id: str) -> StatusRecord:
        """``GET /v1/messages/{job_id}`` (D11)."""
        call = _Call("GET", f"/v1/messages/{_path_segment(job_id)}")
        return _parse(StatusRecord, await self._request(call))

    async def cancel_message(self, job_id: str) -> StatusRecord:
        """``POST /v1/messages/{job_id}/cancel``: a message no provider has yet
        ends ``failed`` with ``CANCELED``; :class:`MessageNotCancelable` once one has it."""
        return _parse(StatusRecord, await self._request(_cancel(job_id)))

    async def list_messages(self, **filters: object) -> AsyncIterator[StatusRecord]:
        """``GET /v1/messages`` (D29), newest first, every page: ``to``, ``status``,
        ``provider``, ``created_after``, ``created_before``, ``limit`` (per page)."""
        cursor: str | None = None
        while True:
            call = _Call("GET", "/v1/messages", params=_list_params(filters, cursor))
            page = _parse(MessagePage, await self._request(call))
            for record in page.data:
                yield record
            if not page.has_more or not page.data:
                return
            cursor = page.data[-1].job_id

    async def health(self) -> Health:
        """``GET /v1/health`` (D12)."""
        return _parse(Health, await self._request(_Call("GET", "/v1/health")))

    async def _resource_request(
        self, method: str, path: str, body: object, params: Mapping[str, str]
    ) -> httpx.Response:
        return await self._request(_Call(method, path, json=body, params=params))

    async def _bytes(self, method: str, path: str, body: object) -> bytes:
        return (await self._request(_Call(method, path, json=body))).content

    async def _request(self, call: _Call) -> httpx.Response:
        async for attempt in AsyncRetrying(**self._retrying):
            with attempt:
                try:
                    response = await self._http.request(
                        call.method, call.path, json=call.json, params=call.params,
                        headers=call.headers,
                    )  # fmt: skip
                except httpx.TransportError as exc:
                    # No answer: the server may or may not have it. Asking again is safe: a
                    # POST repeats its Idempotency-Key, and a GET changes nothing.
                    raise _Retry(exc) from exc
                retried = attempt.retry_state.attempt_number > 1
                return _check(response, self._max_retry_wait, method=call.method, retried=retried)
        raise AssertionError("unreachable: the retry loop returns or raises")  # pragma: no cover


# ------------------------------------------------------------------------------ sync


class Client:
    """The blocking twin of :class:`AsyncClient`: the same methods, without ``await``."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        http_client: httpx.Client | None = None,
        sleep: Sleep | None = None,
        max_retry_wait: float = DEFAULT_MAX_RETRY_WAIT,
    ) -> None:
        _check_max_retries(max_retries, max_retry_wait)
        self._max_retry_wait = max_retry_wait
        self._http = http_client or httpx.Client(
            base_url=base_url, headers=_headers(api_key), timeout=timeout
        )
        self._retrying = _retrying_kwargs(max_retries) | ({"sleep": sleep} if sleep else {})
        #: ``/v1/consents`` (D33): ``client.consents.create(...)``.
        self.consents = ConsentsClient(self._resource_request)
        #: ``/v1/suppressions``: ``client.suppressions.add("sms", "+90555…")``.
        self.suppressions = SuppressionsClient(self._resource_request)
        #: ``/v1/verifications`` (D34): ``client.verifications.start({...})``.
        self.verifications = VerificationsClient(self._bytes)
        #: ``GET /v1/stats``: ``client.stats.overview(window="7d")``.
        self.stats = StatsClient(self._resource_request)

    def __repr__(self) -> str:
        return f"Client(base_url={str(self._http.base_url)!r})"  # never the key

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def send(
        self, request: SendRequest | Mapping[str, Any], *, idempotency_key: str | None = None
    ) -> SendResponse:
        """``POST /v1/messages`` (SPEC 2.1): one message."""
        call = _post("/v1/messages", parse_model(SendRequest, request), idempotency_key)
        return _parse(SendResponse, self._request(call))

    def preview_send(self, request: SendRequest | Mapping[str, Any]) -> SendPreview:
        """``POST /v1/messages?dry_run=true`` (D33): what :meth:`send` would do."""
        return _parse(SendPreview, self._request(_preview(request)))

    def send_bulk(
        self, request: BulkRequest | Mapping[str, Any], *, idempotency_key: str | None = None
    ) -> BulkResponse:
        """``POST /v1/messages/bulk`` (SPEC 2.3): up to the bulk limit of messages."""
        call = _post("/v1/messages/bulk", parse_model(BulkRequest, request), idempotency_key)
        return _parse(BulkResponse, self._request(call))

    def get_message(self, job_id: str) -> StatusRecord:
        """``GET /v1/messages/{job_id}`` (D11)."""
        call = _Call("GET", f"/v1/messages/{_path_segment(job_id)}")
        return _parse(StatusRecord, self._request(call))

    def cancel_message(self, job_id: str) -> StatusRecord:
        """``POST /v1/messages/{job_id}/cancel``: a message no provider has yet
        ends ``failed`` with ``CANCELED``; :class:`MessageNotCancelable` once one has it."""
        return _parse(StatusRecord, self._request(_cancel(job_id)))

    def list_messages(self, **filters: object) -> Iterator[StatusRecord]:
        """``GET /v1/messages`` (D29), newest first, every page: ``to``, ``status``,
        ``provider``, ``created_after``, ``created_before``, ``limit`` (per page)."""
        cursor: str | None = None
        while True:
            call = _Call("GET", "/v1/messages", params=_list_params(filters, cursor))
            page = _parse(MessagePage, self._request(call))
            yield from page.data
            if not page.has_more or not page.data:
                return
            cursor = page.data[-1].job_id

    def health(self) -> Health:
        """``GET /v1/health`` (D12)."""
        return _parse(Health, self._request(_Call("GET", "/v1/health")))

    def _resource_request(
        self, method: str, path: str, body: object, params: Mapping[str, str]
    ) -> httpx.Response:
        return self._request(_Call(method, path, json=body, params=params))

    def _bytes(self, method: str, path: str, body: object) -> bytes:
        return self._request(_Call(method, path, json=body)).content

    def _request(self, call: _Call) -> httpx.Response:
        for attempt in Retrying(**self._retrying):
            with attempt:
                try:
                    response = self._http.request(
                        call.method, call.path, json=call.json, params=call.params,
                        headers=call.headers,
                    )  # fmt: skip
                except httpx.TransportError as exc:
                    # No answer: the server may or may not have it. Asking again is safe: a
                    # POST repeats its Idempotency-Key, and a GET changes nothing.
                    raise _Retry(exc) from exc
                retried = attempt.retry_state.attempt_number > 1
                return _check(response, self._max_retry_wait, method=call.method, retried=retried)
        raise AssertionError("unreachable: the retry loop returns or raises")  # pragma: no cover


def _path_segment(job_id: str) -> str:
    return quote(job_id, safe="")
