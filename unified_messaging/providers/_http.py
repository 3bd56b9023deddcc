"""What every live adapter shares: its credentials schema, one pooled client, HTTP discipline.

The discipline (issue 6 §3):

- one ``httpx.AsyncClient`` per connection (pooled), explicit connect/read time-outs, no
  redirects followed, a ``User-Agent``;
- a request is retried only when it provably never left: the connection could not be made
  (refused, connect time-out, pool time-out). A send that may have reached the provider
  (read time-out, reset mid-answer) is never re-posted: it becomes ``unavailable``;
- a provider 429 is ``unavailable`` with its ``Retry-After`` / ``retry_after`` kept.

Tests inject ``client=httpx.AsyncClient(transport=httpx.ASGITransport(fake_app))`` or point
``connection.base_url`` at a fake served on loopback.
"""

from __future__ import annotations

import abc
import asyncio
import email.utils
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import ClassVar, Generic, TypeVar

import httpx
from pydantic import BaseModel, ConfigDict, SecretStr, ValidationError
from tenacity import (
    AsyncRetrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential,
)

from .._domain import Connection
from .._errors import InvalidCredentials
from .._types import ProviderCode
from .._version import __version__
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
    "USER_AGENT",
    "AdapterSpec",
    "CredentialsModel",
    "HttpAdapter",
    "NotSent",
    "parse_retry_after",
    "validate_credentials",
]

logger = logging.getLogger("unified_messaging.providers")

USER_AGENT = f"unified-messaging/{__version__} (+https://pypi.org/project/unified-messaging/)"
#: Connect fast (a dead host should fall back quickly), give the provider time to answer.
DEFAULT_TIMEOUT = httpx.Timeout(connect=5.0, read=15.0, write=10.0, pool=5.0)
#: Errors raised before any byte of the request reached the provider: safe to retry.
NotSent = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)

C = TypeVar("C", bound="CredentialsModel")


class CredentialsModel(BaseModel):
    """Base of every provider's credentials schema: secrets are ``SecretStr``."""

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)


def validate_credentials(model: type[C], credentials: Mapping[str, str]) -> C:
    """Validate, or raise :class:`InvalidCredentials` naming what is missing or wrong.

    The message names fields only; it never echoes a value.
    """
    try:
        return model.model_validate(dict(credentials))
    except ValidationError as exc:
        problems = []
        for error in exc.errors(include_url=False, include_input=False):
            field = ".".join(str(p) for p in error["loc"]) or "credentials"
            if error["type"] == "missing":
                problems.append(f"{field} is missing")
            elif error["type"] == "extra_forbidden":
                problems.append(f"{field} is not a credential of this provider")
            else:
                problems.append(f"{field}: {error['msg']}")
        raise InvalidCredentials("Invalid credentials: " + "; ".join(problems)) from None


@dataclass(frozen=True, slots=True)
class AdapterSpec:
    """A provider's entry in the live registry: its credentials schema and its factory."""

    code: ProviderCode
    credentials: type[CredentialsModel]
    factory: AdapterFactory


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or HTTP-date); ``None`` if absent."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


class HttpAdapter(abc.ABC, Generic[C]):
    """Base of the live adapters. Subclasses set ``credentials_model``, ``default_base_url``
    and implement :meth:`submit` (and :meth:`submit_batch` where the provider has batches).
    """

    code_: ClassVar[ProviderCode]
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
    ) -> None:
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

    def __repr__(self) -> str:
        # Never the credentials: only which connection this is.
        return f"{type(self).__name__}(connection={self.connection.id!r})"

    @property
    def code(self) -> ProviderCode:
        return self.code_

    @property
    def profile(self) -> ProviderProfile:
        return PROFILES[self.code_]

    @property
    def max_batch(self) -> int:
        return self.profile.max_batch

    def secret(self, value: SecretStr) -> str:
        return value.get_secret_value()

    async def request(self, method: str, path: str, **kwargs: object) -> httpx.Response:
        """Send once; retry only while the request provably never left (``NotSent``).

        Raises ``httpx.HTTPError`` for everything else: callers map it to ``unavailable``.
        """
        url = path if path.startswith(("http://", "https://")) else self.base_url + path
        retrying = AsyncRetrying(
            retry=retry_if_exception_type(NotSent),
            stop=stop_after_attempt(self._connect_retries + 1),
            wait=wait_exponential(multiplier=0.2, max=2.0),
            sleep=self._sleep,
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                return await self.client.request(method, url, **kwargs)  # type: ignore[arg-type]
        raise AssertionError("unreachable")  # pragma: no cover

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
