"""What every live adapter shares: its credentials schema, one pooled client, HTTP discipline.

The discipline (issue 6 §3):

- one ``httpx.AsyncClient`` per connection (pooled), explicit connect/read time-outs, no
  redirects followed, a ``User-Agent``;
- a request is retried only when it provably never left: the connection could not be made
  (refused, connect time-out, pool time-out). A send that may have reached the provider
  (read time-out, reset mid-answer) is never re-posted: it becomes ``unavailable``;
- a provider 429 is ``unavailable`` with its ``Retry-After`` / ``retry_after`` kept;
- an answer is read as a stream and no further than a cap (:meth:`HttpAdapter.exchange`), and
  JSON is decoded within size and depth limits (:func:`decode_json`).

Tests inject ``client=httpx.AsyncClient(transport=httpx.ASGITransport(fake_app))`` or point
``connection.base_url`` at a fake served on loopback.
"""

from __future__ import annotations

import abc
import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final, Generic, Literal, TypeVar

import httpx
from pydantic import SecretStr
from tenacity import (
    AsyncRetrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential,
)

from .._clock import Clock, SystemClock
from .._domain import Connection
from .._retry_after import parse_retry_after
from .._types import ProviderCode
from .._version import __version__
from ._credentials import CredentialsModel, validate_credentials
from .base import (
    PROFILES,
    AdapterFactory,
    InboundCallback,
    ProviderProfile,
    ProviderReport,
    SubmitOutcome,
    SubmitRequest,
)

__all__ = [
    "DEFAULT_TIMEOUT",
    "MAX_JSON_DEPTH",
    "USER_AGENT",
    "AdapterSpec",
    "Answer",
    "CredentialsModel",
    "HttpAdapter",
    "JsonUnreadable",
    "NotSent",
    "decode_json",
    "decode_json_object",
    "parse_retry_after",
    "validate_credentials",
]

logger = logging.getLogger("unified_messaging.providers")

USER_AGENT = f"unified-messaging/{__version__} (+https://pypi.org/project/unified-messaging/)"
#: Connect fast (a dead host should fall back quickly), give the provider time to answer.
DEFAULT_TIMEOUT = httpx.Timeout(connect=5.0, read=15.0, write=10.0, pool=5.0)
#: Errors raised before any byte of the request reached the provider: safe to retry.
NotSent = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
#: Deepest nesting :func:`decode_json` accepts: provider answers and webhooks stay far below it.
MAX_JSON_DEPTH: Final = 32

C = TypeVar("C", bound="CredentialsModel")


@dataclass(frozen=True, slots=True)
class AdapterSpec:
    """A provider's entry in the live registry: its credentials schema and its factory."""

    code: ProviderCode
    credentials: type[CredentialsModel]
    factory: AdapterFactory


@dataclass(frozen=True, slots=True)
class Answer:
    """A provider's answer as :meth:`HttpAdapter.exchange` read it: never past its cap."""

    status: int
    headers: httpx.Headers
    #: The media type, lower case, without parameters (``""`` when the answer names none).
    content_type: str
    #: The body; when ``truncated``, only its first bytes (none if ``Content-Length`` was over).
    body: bytes
    #: The answer was longer than the cap: it was not read to the end, treat it as unreadable.
    truncated: bool

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")

    @property
    def is_success(self) -> bool:
        return 200 <= self.status < 300

    @property
    def retry_after(self) -> float | None:
        """The ``Retry-After`` header in seconds, ``None`` if absent or unreadable."""
        return parse_retry_after(self.headers.get("Retry-After"))


JsonProblem = Literal["too_large", "too_deep", "not_json", "not_object"]


class JsonUnreadable(ValueError):
    """A body that is not the JSON asked for: ``problem`` names why, ``str()`` says it."""

    def __init__(self, problem: JsonProblem, message: str) -> None:
        super().__init__(message)
        self.problem: JsonProblem = problem


def decode_json(
    body: bytes | str, *, max_bytes: int | None = None, max_depth: int = MAX_JSON_DEPTH
) -> Any:
    """The JSON value of ``body``, refusing more than ``max_bytes`` or ``max_depth`` levels.

    Raises :class:`JsonUnreadable` (never ``RecursionError`` or ``UnicodeDecodeError``).
    """
    if max_bytes is not None and len(body) > max_bytes:
        raise JsonUnreadable("too_large", f"the body is over {max_bytes} bytes")
    try:
        value = json.loads(body)
    except RecursionError:
        raise JsonUnreadable("too_deep", f"the JSON is nested over {max_depth} levels") from None
    except ValueError:  # also UnicodeDecodeError
        raise JsonUnreadable("not_json", "the body is not JSON") from None
    if _deeper_than(value, max_depth):
        raise JsonUnreadable("too_deep", f"the JSON is nested over {max_depth} levels")
    return value


def decode_json_object(
    body: bytes | str, *, max_bytes: int | None = None, max_depth: int = MAX_JSON_DEPTH
) -> dict[str, Any]:
    """Like :func:`decode_json`, and the value must be an object (``problem="not_object"``)."""
    value = decode_json(body, max_bytes=max_bytes, max_depth=max_depth)
    if not isinstance(value, dict):
        raise JsonUnreadable("not_object", f"the JSON is {type(value).__name__}, not an object")
    return value


def _deeper_than(value: object, limit: int) -> bool:
    """Does ``value`` nest containers more than ``limit`` levels? (Iterative: no recursion.)"""
    stack = [(value, 1)] if isinstance(value, dict | list) else []
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


async def _read_capped(response: httpx.Response, cap: int) -> tuple[bytes, bool]:
    """At most ``cap`` bytes of the body and whether there was more; stops reading there."""
    declared = response.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > cap:
        return b"", True
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > cap:
            return bytes(body[:cap]), True
    return bytes(body), False


class HttpAdapter(abc.ABC, Generic[C]):
    """Base of the live adapters. Subclasses set ``credentials_model``, ``default_base_url``
    and implement :meth:`submit` (and :meth:`submit_batch` where the provider has batches).
    """

    PROVIDER_CODE: ClassVar[ProviderCode]
    credentials_model: ClassVar[type[CredentialsModel]]
    default_base_url: ClassVar[str]

    def __init__(
        self,
        connection: Connection,
        credentials: Mapping[str, str],
        *,
        client: httpx.AsyncClient | None = None,
        timeout: httpx.Timeout = DEFAULT_TIMEOUT,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        connect_retries: int = 2,
        clock: Clock | None = None,
    ) -> None:
        # Before the client is built, so a refused connection leaks nothing.
        self.validate_connection(connection)
        self.connection = connection
        self.credentials: C = validate_credentials(self.credentials_model, credentials)  # type: ignore[assignment]
        self.base_url = (connection.base_url or self.default_base_url).rstrip("/")
        self._owns_client = client is None
        self.client = client or httpx.AsyncClient(
            timeout=timeout,
            follow_redirects=False,
            headers={"User-Agent": USER_AGENT},
            limits=httpx.Limits(max_connections=50, max_keepalive_connections=20),
        )
        self._sleep = sleep
        self._connect_retries = connect_retries
        self.clock: Clock = clock or SystemClock()

    @classmethod
    def validate_connection(cls, connection: Connection) -> None:
        """Raise :class:`InvalidCredentials` if this connection cannot be used at all."""

    def __repr__(self) -> str:
        # Never the credentials: only which connection this is.
        return f"{type(self).__name__}(connection={self.connection.id!r})"

    @property
    def code(self) -> ProviderCode:
        return self.PROVIDER_CODE

    @property
    def profile(self) -> ProviderProfile:
        return PROFILES[self.PROVIDER_CODE]

    @property
    def max_batch(self) -> int:
        return self.profile.max_batch

    def secret(self, value: SecretStr) -> str:
        return value.get_secret_value()

    def url(self, path: str) -> str:
        """``path`` under the connection's base URL (an absolute URL is kept as it is)."""
        return path if path.startswith(("http://", "https://")) else self.base_url + path

    async def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """Send once and read the whole answer; retry only while it provably never left.

        Raises ``httpx.HTTPError`` for everything else: callers map it to ``unavailable``.
        Prefer :meth:`exchange`, which caps what it reads.
        """
        async for attempt in self._retrying():
            with attempt:
                return await self.client.request(method, self.url(path), **kwargs)
        raise AssertionError("unreachable")  # pragma: no cover

    async def exchange(
        self,
        method: str,
        path: str,
        *,
        max_body: int,
        params: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        json: object = None,
        content: bytes | None = None,
    ) -> Answer:
        """One call, its answer streamed and read no further than ``max_body`` bytes.

        Retried (with the injected ``sleep``) only while the request provably never left
        (:data:`NotSent`); an answer over the cap comes back ``truncated`` without the rest
        being read. Raises ``httpx.HTTPError`` otherwise: map it with :meth:`transport_outcome`.
        """
        request = self.client.build_request(
            method, self.url(path), params=params, headers=headers, json=json, content=content
        )
        response = await self._send(request, stream=True)
        try:
            body, truncated = await _read_capped(response, max_body)
        finally:
            await response.aclose()
        media_type = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
        return Answer(response.status_code, response.headers, media_type, body, truncated)

    async def _send(self, request: httpx.Request, *, stream: bool) -> httpx.Response:
        async for attempt in self._retrying():
            with attempt:
                return await self.client.send(request, stream=stream)
        raise AssertionError("unreachable")  # pragma: no cover

    def _retrying(self) -> AsyncRetrying:
        """Retries of a request that provably never left (:data:`NotSent`), and only those."""
        return AsyncRetrying(
            retry=retry_if_exception_type(NotSent),
            stop=stop_after_attempt(self._connect_retries + 1),
            wait=wait_exponential(multiplier=0.2, max=2.0),
            sleep=self._sleep,
            reraise=True,
        )

    @staticmethod
    def transport_outcome(exc: httpx.HTTPError) -> SubmitOutcome:
        """The outcome of a request that failed in transport (never ``accepted``)."""
        if isinstance(exc, httpx.TimeoutException):
            return SubmitOutcome.unavailable("The provider did not answer in time.")
        return SubmitOutcome.unavailable("The provider could not be reached.")

    @abc.abstractmethod
    async def submit(self, request: SubmitRequest) -> SubmitOutcome:
        """Send one message in the provider's wire format."""

    async def submit_batch(self, requests: Sequence[SubmitRequest]) -> list[SubmitOutcome]:
        # Providers without a batch endpoint: the routing layer bounds concurrency itself.
        return [await self.submit(r) for r in requests]

    def parse_reports(self, callback: InboundCallback) -> list[ProviderReport]:
        return []

    async def poll_reports(self, provider_message_ids: Sequence[str]) -> list[ProviderReport]:
        return []

    async def check(self) -> None:
        """Check the credentials against the provider (a balance or header-list call).

        Raises :class:`InvalidCredentials` if the provider refuses them.
        """
        return

    async def aclose(self) -> None:
        if self._owns_client:
            await self.client.aclose()
