"""What every live adapter shares: its credentials schema, one pooled client, HTTP discipline.

The discipline:

- one ``httpx.AsyncClient`` per connection (pooled), explicit connect/read time-outs, no
  redirects followed, a ``User-Agent``;
- a request is retried only when it provably never left: the connection could not be made
  (refused, connect time-out, pool time-out). A send that may have reached the provider
  (read time-out, reset mid-answer) is never re-posted: it becomes ``unknown``
  (:meth:`HttpAdapter.transport_outcome`);
- a provider 429 is ``unavailable`` with its ``Retry-After`` / ``retry_after`` kept;
- an answer is read as a stream and no further than a cap (:meth:`HttpAdapter.exchange`), and
  JSON is decoded within size and depth limits (:func:`decode_json`);
- an answer an adapter cannot read goes through :meth:`HttpAdapter.unreadable`, the one rule
  of all: a 2xx may mean the provider took the message, so it is ``unknown`` (no
  fallback); any other status proves nothing was taken, so it is ``unavailable``;
- every failure says why: the transport's cause (DNS, refused, TLS, time-out
  after N s) or the HTTP status and a short excerpt of the answer, with every credential
  masked (:meth:`HttpAdapter.redact`).

Tests inject ``client=httpx.AsyncClient(transport=httpx.ASGITransport(fake_app))`` or point
``connection.base_url`` at a fake served on loopback.
"""

from __future__ import annotations

import abc
import asyncio
import errno
import json
import logging
import re
import socket
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final, Generic, Literal, TypeVar
from urllib.parse import urlencode

import httpx
from pydantic import SecretStr

from .._clock import Clock, SystemClock
from .._domain import Connection
from .._errors import ProviderUnavailable
from .._retry_after import parse_retry_after
from .._types import ProviderCode
from .._version import __version__
from ._credentials import CredentialsModel, validate_credentials
from ._transport import POOL_LIMITS, ProviderTransport, Timeouts, open_call, read_call
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
    "EXCERPT_CHARS",
    "MAX_JSON_DEPTH",
    "POOL_LIMITS",
    "USER_AGENT",
    "AdapterSpec",
    "Answer",
    "CredentialsModel",
    "HttpAdapter",
    "JsonUnreadable",
    "MaybeTaken",
    "NotSent",
    "ProviderTransport",
    "decode_json",
    "decode_json_object",
    "excerpt",
    "parse_retry_after",
    "redact",
    "validate_credentials",
]

logger = logging.getLogger("unified_messaging.providers")

USER_AGENT = f"unified-messaging/{__version__} (+https://pypi.org/project/unified-messaging/)"
_USER_AGENT_BYTES: Final = USER_AGENT.encode("ascii")
#: Connect fast (a dead host should fall back quickly), give the provider time to answer.
DEFAULT_TIMEOUT = httpx.Timeout(connect=5.0, read=15.0, write=10.0, pool=5.0)
#: Errors raised before any byte of the request reached the provider: safe to retry.
NotSent = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
#: Errors raised after the whole request was written, while waiting for or reading the
#: answer: the provider may have acted on it. A write error or time-out is not
#: here: a request cut short is one no HTTP server acts on.
MaybeTaken = (httpx.ReadTimeout, httpx.ReadError, httpx.RemoteProtocolError)
#: How much of a provider's answer an error message quotes.
EXCERPT_CHARS: Final = 200
#: Deepest nesting :func:`decode_json` accepts: provider answers and webhooks stay far below it.
MAX_JSON_DEPTH: Final = 32

C = TypeVar("C", bound="CredentialsModel")
T = TypeVar("T")


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
    #: The answer was not read to its end (over the cap, or the connection broke mid-body):
    #: treat it as unreadable (:meth:`HttpAdapter.unreadable`); ``cut_short`` says why.
    truncated: bool
    #: Why the body is incomplete, when ``truncated`` (``""`` otherwise).
    cut_short: str = ""

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


async def _read_capped(declared: str, chunks: AsyncIterator[bytes], cap: int) -> tuple[bytes, str]:
    """At most ``cap`` bytes of a body (``declared``: its ``Content-Length``, ``chunks``: its
    pieces), and why it is incomplete (``""``: it is whole).

    Stops reading at the cap. A connection that breaks mid-body is not raised: the status
    line has come, and a 2xx whose body was cut is an answer we cannot read, not one that
    never came.
    """
    if declared.isdigit() and int(declared) > cap:
        return b"", f"the answer is over {cap} bytes"
    body = bytearray()
    try:
        async for chunk in chunks:
            body += chunk
            if len(body) > cap:
                return bytes(body[:cap]), f"the answer is over {cap} bytes"
    except MaybeTaken as exc:
        cut = f"the connection broke after {len(body)} bytes of the answer ({_kind(exc)})"
        return bytes(body), cut
    return bytes(body), ""


# Values that look like credentials, whatever field they came from: a Telegram
# bot token, ``key=value`` pairs named like secrets, an Authorization header's value, and
# long runs of letters and digits (API keys, hashes, tokens).
_SECRET_SHAPES: Final = (
    (re.compile(r"\b\d{5,}:[A-Za-z0-9_-]{20,}"), "***"),
    (re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]+"), r"\1 ***"),
    (
        re.compile(
            r"(?i)\b((?:api_?)?key|token|access_token|pass(?:word)?|pwd|secret|hash|sig(?:nature)?"
            r"|auth(?:orization)?|usercode|ka)(\s*[=:]\s*|\"\s*:\s*\"|'\s*:\s*')"
            r"(?!(?:bearer|basic) )([^&\s\"',;<>]+)"
        ),
        r"\1\2***",
    ),
    (re.compile(r"(?<![A-Za-z0-9])(?=[A-Za-z_-]*\d)(?=[0-9_-]*[A-Za-z])[A-Za-z0-9_-]{24,}"), "***"),
)


def redact(text: str, secrets: Sequence[str] = ()) -> str:
    """``text`` with each of ``secrets`` and anything shaped like a credential masked."""
    for secret in sorted(secrets, key=len, reverse=True):
        if len(secret) >= 3:
            text = text.replace(secret, "***")
    for pattern, replacement in _SECRET_SHAPES:
        text = pattern.sub(replacement, text)
    return text


def excerpt(text: str, secrets: Sequence[str] = (), *, limit: int = EXCERPT_CHARS) -> str:
    """A provider's words for an error message: one line, masked, at most ``limit`` chars."""
    line = redact(" ".join(text.split()), secrets)
    if not line:
        return "(empty body)"
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _kind(exc: BaseException) -> str:
    """An exception's own words, short and one line (never its request's URL)."""
    words = " ".join(str(exc).split())
    return words[:EXCERPT_CHARS] if words else type(exc).__name__


def _root_causes(exc: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain and len(chain) < 8:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


_DNS_WORDS: Final = (
    "name or service not known",
    "nodename nor servname",
    "temporary failure in name resolution",
    "no address associated",
    "getaddrinfo failed",
    "name does not resolve",
)


#: Which of httpx's four time-outs an error is about (the read one otherwise).
_TIMEOUT_KINDS: Final = (
    (httpx.PoolTimeout, "pool"),
    (httpx.ConnectTimeout, "connect"),
    (httpx.WriteTimeout, "write"),
)


def _where(exc: httpx.HTTPError) -> tuple[str, float | None]:
    """``host:port`` of the failed request (never its path or query: they carry tokens),
    and its time-outs as httpx applied them."""
    try:
        request = exc.request
    except RuntimeError:
        return "the provider", None
    url = request.url
    port = url.port or (443 if url.scheme == "https" else 80)
    timeouts = request.extensions.get("timeout") or {}
    kind = "read"
    for error, which in _TIMEOUT_KINDS:
        if isinstance(exc, error):
            kind = which
            break
    value = timeouts.get(kind) if isinstance(timeouts, dict) else None
    return f"{url.host}:{port}", float(value) if isinstance(value, int | float) else None


def _connect_cause(where: str, chain: Sequence[BaseException], words: str) -> str:
    """Why no connection could be made: DNS, refused, TLS, or the system's own words."""
    tls = any(isinstance(e, ssl.SSLError) for e in chain)
    if tls or "ssl" in words or "certificate" in words:
        return f"the TLS handshake with {where} failed: {_kind(chain[-1])}"
    if any(isinstance(e, socket.gaierror) for e in chain) or any(w in words for w in _DNS_WORDS):
        return f"the name {where.rsplit(':', 1)[0]} could not be resolved (DNS)"
    refused = any(
        isinstance(e, ConnectionRefusedError) or getattr(e, "errno", None) == errno.ECONNREFUSED
        for e in chain
    )
    if refused or "refused" in words or f"[errno {errno.ECONNREFUSED}]" in words:
        return f"{where} refused the connection"
    return f"could not connect to {where}: {_kind(chain[-1])}"


def transport_cause(exc: httpx.HTTPError) -> str:
    """Why a request failed in transport, in a few words: DNS, refused, TLS,
    which time-out after how long, or a connection broken mid-answer. Unmasked: callers
    pass it through :func:`redact` (:meth:`HttpAdapter.transport_outcome` does)."""
    where, seconds = _where(exc)
    after = f" after {seconds:g} s" if seconds is not None else ""
    chain = _root_causes(exc)
    words = " ".join(_kind(e).lower() for e in chain)
    if isinstance(exc, httpx.PoolTimeout):
        return f"no free connection to {where} in the pool{after}"
    if isinstance(exc, httpx.ConnectTimeout):
        return f"no connection to {where}{after} (connect time-out)"
    if isinstance(exc, httpx.ReadTimeout):
        return f"no answer from {where}{after}, once the request was sent (read time-out)"
    if isinstance(exc, httpx.WriteTimeout):
        return f"the request could not be written to {where}{after} (write time-out)"
    if isinstance(exc, httpx.ConnectError):
        return _connect_cause(where, chain, words)
    if isinstance(exc, MaybeTaken):
        return f"the connection to {where} broke before the answer was complete: {_kind(exc)}"
    return f"{type(exc).__name__} talking to {where}: {_kind(exc)}"


#: Query parameters whose values are secrets in some provider's format (Verimor's and
#: Jasmin's balance, Kannel's sendsms carry the password in the URL).
_SECRET_QUERY: Final = re.compile(
    r"(?i)([?&](?:password|pass|pwd|api_?key|api_?hash|hash|key|token|secret)=)[^&\s\"']*"
)


class _RedactQuerySecrets(logging.Filter):
    """httpx logs every request's URL at INFO: a provider whose format puts the password in
    the query string would leak it there. The values of such parameters are blanked."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "=" in message and _SECRET_QUERY.search(message):
            record.msg = _SECRET_QUERY.sub(r"\1<redacted>", message)
            record.args = ()
        return True


_httpx_logger = logging.getLogger("httpx")


def _install_query_redaction() -> None:
    if not any(isinstance(f, _RedactQuerySecrets) for f in _httpx_logger.filters):
        _httpx_logger.addFilter(_RedactQuerySecrets())


_install_query_redaction()


def _answer(status: int, headers: httpx.Headers, body: bytes, cut_short: str) -> Answer:
    media_type = headers.get("Content-Type", "").split(";")[0].strip().lower()
    return Answer(status, headers, media_type, body, bool(cut_short), cut_short)


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
        # One long-lived pool per connection (the adapter lives as long as the connection
        # does in this process): keep-alive HTTP/1.1 on the project's h11 core. Calls
        # through ``exchange`` use the pool directly; ``self.client`` is the same pool
        # behind httpx, for whatever needs an httpx client.
        self._transport: ProviderTransport | None = None
        if client is None:
            self._transport = ProviderTransport()
            client = httpx.AsyncClient(
                timeout=timeout,
                follow_redirects=False,
                headers={"User-Agent": USER_AGENT},
                transport=self._transport,
            )
        self.client = client
        self._timeouts = Timeouts.of(timeout)
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
        url = self.url(path)
        return await self._until_sent(lambda: self.client.request(method, url, **kwargs))

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
        if self._transport is not None:
            return await self._exchange_on_own_pool(
                method, path, max_body, params, headers, json, content
            )
        request = self.client.build_request(
            method, self.url(path), params=params, headers=headers, json=json, content=content
        )
        response = await self._send(request, stream=True)
        try:
            declared = response.headers.get("Content-Length", "")
            body, cut_short = await _read_capped(declared, response.aiter_bytes(), max_body)
        finally:
            await response.aclose()
        return _answer(response.status_code, response.headers, body, cut_short)

    async def _exchange_on_own_pool(
        self,
        method: str,
        path: str,
        max_body: int,
        params: Mapping[str, str] | None,
        headers: Mapping[str, str] | None,
        json: object,
        content: bytes | None,
    ) -> Answer:
        """:meth:`exchange` on the adapter's own pool, without httpx's request and response
        objects (``providers._transport``): the same bytes on the wire, the same errors."""
        assert self._transport is not None
        url = self.url(path)
        pool, timeouts = self._transport.pool, self._timeouts
        call = await self._until_sent(
            lambda: open_call(
                pool, method, url, user_agent=_USER_AGENT_BYTES, timeouts=timeouts,
                params=params, headers=headers, json=json, content=content,
            )
        )  # fmt: skip
        if _httpx_logger.isEnabledFor(logging.INFO):
            # The line httpx logs for every request (redacted by the filters on its logger).
            shown = url + (("&" if "?" in url else "?") + urlencode(params) if params else "")
            _httpx_logger.info(
                'HTTP Request: %s %s "HTTP/1.1 %d %s"',
                method, shown, call.status, call.reason.decode("latin-1"),
            )  # fmt: skip
        try:
            answer_headers = httpx.Headers(call.headers)
            declared = answer_headers.get("Content-Length", "")
            chunks = read_call(call, method, url, params, timeouts)
            body, cut_short = await _read_capped(declared, chunks, max_body)
        finally:
            call.close()
        return _answer(call.status, answer_headers, body, cut_short)

    async def _send(self, request: httpx.Request, *, stream: bool) -> httpx.Response:
        return await self._until_sent(lambda: self.client.send(request, stream=stream))

    async def _until_sent(self, send: Callable[[], Awaitable[T]]) -> T:
        """``send()``, made again while it provably never left (:data:`NotSent`), at most
        ``connect_retries`` more times, after the injected ``sleep`` (0.2 s, doubling, at
        most 2 s). Anything else is raised at once."""
        retries = 0
        while True:
            try:
                return await send()
            except NotSent:
                if retries >= self._connect_retries:
                    raise
            await self._sleep(min(0.2 * 2**retries, 2.0))
            retries += 1

    def secrets(self) -> list[str]:
        """The connection's credential values, to mask wherever a provider's words are shown."""
        values = (
            getattr(self.credentials, name, None) for name in type(self.credentials).model_fields
        )
        return [v.get_secret_value() for v in values if isinstance(v, SecretStr)]

    def redact(self, text: str) -> str:
        """``text`` with this connection's credentials, and anything shaped like one, masked."""
        return redact(text, self.secrets())

    def excerpt(self, answer: Answer) -> str:
        """The start of ``answer``'s body for an error message: one line, capped, masked."""
        return excerpt(answer.text, self.secrets())

    def cause(self, exc: httpx.HTTPError) -> str:
        """Why ``exc`` happened, masked: for outcomes, log lines and ``connections test``."""
        return self.redact(transport_cause(exc))

    def transport_outcome(
        self, exc: httpx.HTTPError, *, provider_message_id: str | None = None
    ) -> SubmitOutcome:
        """The outcome of a request that failed in transport (never ``accepted``).

        Before the request was whole on the wire (:data:`NotSent`, a write error): nothing
        was taken, ``unavailable``. After it (:data:`MaybeTaken`: a read time-out, a reset
        while waiting for the answer): the provider may have taken it, ``unknown``
        (docs/decisions.md). Either way the message says why.
        ``provider_message_id``: as for :meth:`unreadable`.
        """
        name = self.profile.name
        if isinstance(exc, MaybeTaken):
            return SubmitOutcome.unknown(
                f"{name} may have taken the message: {self.cause(exc)}. It was not sent again.",
                provider_message_id=provider_message_id,
            )
        return SubmitOutcome.unavailable(f"{name} could not be reached: {self.cause(exc)}.")

    def unreadable(
        self, answer: Answer, why: str, *, provider_message_id: str | None = None
    ) -> SubmitOutcome:
        """The outcome of a send answer the adapter cannot read: a 2xx may mean it was taken.

        A 2xx says the provider took the request, so the message may have been taken:
        ``unknown`` (``PROVIDER_OUTCOME_UNKNOWN``), never a fallback. Any other status
        proves it was not: ``unavailable``. Either way the message names the status and
        quotes the answer. ``provider_message_id``: the id a later report
        would carry, where the adapter chose it before sending.
        """
        name = self.profile.name
        why = answer.cut_short or why
        shown = answer.content_type or "no content type"
        said = f"HTTP {answer.status} ({shown}): {self.excerpt(answer)}"
        if answer.is_success:
            return SubmitOutcome.unknown(
                f"{name} may have taken the message but its answer could not be read "
                f"({self.redact(why)}); {said}",
                provider_message_id=provider_message_id,
            )
        return SubmitOutcome.unavailable(f"{name} answered {said} ({self.redact(why)})")

    def unreachable(self, exc: httpx.HTTPError | Answer, doing: str) -> ProviderUnavailable:
        """The error of a call that sends nothing (``check``, report polls) and failed,
        with its cause: the transport's, or the status and an excerpt of the answer."""
        name = self.profile.name
        if isinstance(exc, Answer):
            why = exc.cut_short or f"answered HTTP {exc.status}"
            return ProviderUnavailable(
                f"{name} could not be reached {doing}: {why}: {self.excerpt(exc)}"
            )
        return ProviderUnavailable(f"{name} could not be reached {doing}: {self.cause(exc)}.")

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
