"""The pieces every live adapter stands on: ``HttpAdapter.exchange``, its ``Answer``, the JSON
helpers of ``providers._http`` and the SMS helpers of ``providers._sms``, tested directly."""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any, ClassVar

import httpx
import pytest
from fakes._server import serve
from hypothesis import given
from hypothesis import strategies as st
from pydantic import SecretStr
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from unified_messaging._clock import ManualClock, SystemClock
from unified_messaging._domain import Connection
from unified_messaging._errors import InvalidCredentials
from unified_messaging._types import ProviderCode
from unified_messaging.providers._http import (
    MAX_JSON_DEPTH,
    POOL_LIMITS,
    Answer,
    CredentialsModel,
    HttpAdapter,
    JsonUnreadable,
    MaybeTaken,
    NotSent,
    ProviderTransport,
    decode_json,
    decode_json_object,
    excerpt,
    redact,
    transport_cause,
)
from unified_messaging.providers._sms import (
    json_answer,
    msisdn,
    national,
    numbers_by_id,
    send_in_groups,
    split_distinct,
)
from unified_messaging.providers.base import SubmitOutcome, SubmitRequest

BASE = "http://provider.test"


class _Credentials(CredentialsModel):
    token: SecretStr


class _Adapter(HttpAdapter[_Credentials]):
    PROVIDER_CODE: ClassVar[ProviderCode] = "chatbot"
    credentials_model = _Credentials
    default_base_url = "https://default.test"

    async def submit(self, request: SubmitRequest) -> SubmitOutcome:
        raise NotImplementedError


def connection(base_url: str | None = BASE) -> Connection:
    return Connection(
        id="conn_x", workspace_id="ws_1", provider="chatbot",
        created_at=datetime(2026, 1, 1, tzinfo=UTC), credentials="v1.k.n.c", base_url=base_url,
    )  # fmt: skip


class Sleeps:
    """The injected ``sleep``: records the waits instead of waiting."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def adapter(handler: Any, sleep: Sleeps | None = None, **kw: Any) -> _Adapter:
    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    return _Adapter(connection(), {"token": "t"}, client=client, sleep=sleep or Sleeps(), **kw)


class Endless(httpx.AsyncByteStream):
    """A chunked body that never ends: counts the chunks anyone pulled from it."""

    def __init__(self, chunk: bytes = b"x" * 1024) -> None:
        self.chunk = chunk
        self.pulled = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while True:
            self.pulled += 1
            yield self.chunk


class Chunked(httpx.AsyncByteStream):
    """A chunked body (no Content-Length) of these chunks."""

    def __init__(self, *chunks: bytes) -> None:
        self.chunks = chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk


# --- exchange: what it reads ---------------------------------------------------------------------


async def test_a_small_answer_is_read_whole() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(
            201,
            content=b'{"ok": true}',
            headers={"Content-Type": "Application/JSON; charset=utf-8", "X-Id": "7"},
        )

    answer = await adapter(handler).exchange(
        "POST", "/send", max_body=1024, json={"a": 1}, params={"q": "ç"}, headers={"X-K": "v"}
    )

    assert answer == Answer(201, answer.headers, "application/json", b'{"ok": true}', False)
    assert answer.headers["x-id"] == "7"
    assert (answer.is_success, answer.text) == (True, '{"ok": true}')
    [request] = seen
    assert str(request.url) == f"{BASE}/send?q=%C3%A7"
    assert (request.headers["X-K"], request.content) == ("v", b'{"a":1}')


async def test_an_absolute_url_is_kept_and_a_path_goes_under_the_base_url() -> None:
    urls: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        urls.append(str(request.url))
        return httpx.Response(200)

    a = adapter(handler)
    await a.exchange("GET", "/x", max_body=10)
    await a.exchange("GET", "https://elsewhere.test/y", max_body=10)

    assert urls == [f"{BASE}/x", "https://elsewhere.test/y"]


async def test_an_endless_chunked_answer_is_cut_at_the_cap_without_reading_on() -> None:
    stream = Endless()

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, stream=stream)

    answer = await adapter(handler).exchange("GET", "/", max_body=10 * 1024)

    assert answer.truncated
    assert answer.body == b"x" * 10 * 1024
    # The chunk that crossed the cap is the last one pulled.
    assert stream.pulled == 11


async def test_a_content_length_over_the_cap_is_refused_unread() -> None:
    stream = Endless()

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"Content-Length": "999999"}, stream=stream)

    answer = await adapter(handler).exchange("GET", "/", max_body=1024)

    assert (answer.truncated, answer.body, stream.pulled) == (True, b"", 0)


@pytest.mark.parametrize(
    ("size", "declared", "truncated", "kept"),
    [(100, True, False, 100), (101, True, True, 0), (100, False, False, 100),
     (101, False, True, 100)],
)  # fmt: skip
async def test_the_cap_is_inclusive(size: int, declared: bool, truncated: bool, kept: int) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if declared:  # Content-Length: a body over the cap is not read at all
            return httpx.Response(200, content=b"y" * size)
        return httpx.Response(200, stream=Chunked(b"y" * 60, b"y" * (size - 60)))

    answer = await adapter(handler).exchange("GET", "/", max_body=100)

    assert (answer.truncated, answer.body) == (truncated, b"y" * kept)


async def test_the_cap_holds_over_real_loopback_http() -> None:
    async def endless() -> AsyncIterator[bytes]:
        # Chunked, no Content-Length; long enough that reading it whole would show (16 MiB).
        for _ in range(4096):
            yield b"z" * 4096
            await asyncio.sleep(0)  # let the server notice the client hung up

    async def huge(request: Request) -> Response:
        return StreamingResponse(endless(), media_type="text/plain")

    app = Starlette(routes=[Route("/", huge)])
    async with serve(app) as base:
        a = _Adapter(connection(base), {"token": "t"})
        answer = await a.exchange("GET", "/", max_body=64 * 1024)
        await a.aclose()

    assert (answer.status, answer.content_type, answer.truncated) == (200, "text/plain", True)
    assert len(answer.body) == 64 * 1024


def test_an_adapters_own_client_runs_on_its_own_pool_with_its_limits() -> None:
    a = _Adapter(connection(), {"token": "t"})
    transport = a.client._transport

    # One pool per adapter: the httpx client and the adapter's own calls share it.
    assert isinstance(transport, ProviderTransport)
    assert transport is a._transport
    pool = transport.pool
    assert (pool._max, pool.idle.max_idle, pool.idle.idle_expiry) == (
        POOL_LIMITS.max_connections,
        POOL_LIMITS.max_keepalive_connections,
        POOL_LIMITS.keepalive_expiry,
    )


async def test_calls_to_one_provider_keep_one_connection_alive_over_real_loopback() -> None:
    peers: list[tuple[str, int]] = []

    async def answer(request: Request) -> Response:
        assert request.client is not None
        peers.append((request.client.host, request.client.port))
        return Response("ok", media_type="text/plain")

    async with serve(Starlette(routes=[Route("/", answer)])) as base:
        a = _Adapter(connection(base), {"token": "t"})
        answers = [await a.exchange("GET", "/", max_body=100) for _ in range(5)]
        await a.aclose()

    assert [(x.status, x.body) for x in answers] == [(200, b"ok")] * 5
    assert len(peers) == 5
    assert len(set(peers)) == 1  # one TCP connection, kept alive between the calls


async def test_a_read_time_out_over_real_loopback_is_one_the_provider_may_have_taken() -> None:
    async def slow(request: Request) -> Response:
        await asyncio.sleep(5)
        return Response("late")

    async with serve(Starlette(routes=[Route("/", slow)])) as base:
        a = _Adapter(connection(base), {"token": "t"}, timeout=httpx.Timeout(5.0, read=0.05))
        with pytest.raises(httpx.ReadTimeout) as raised:
            await a.exchange("GET", "/", max_body=100)
        await a.aclose()

    assert isinstance(raised.value, MaybeTaken)
    assert not isinstance(raised.value, NotSent)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [({"Retry-After": "30"}, 30.0), ({"Retry-After": "soon"}, None), ({}, None)],
)
def test_the_answers_retry_after(headers: dict[str, str], expected: float | None) -> None:
    answer = Answer(429, httpx.Headers(headers), "", b"", False)

    assert (answer.retry_after, answer.is_success) == (expected, False)


def test_an_answers_text_survives_bytes_that_are_not_utf8() -> None:
    assert Answer(200, httpx.Headers(), "", b"ok \xff", False).text == "ok \ufffd"


# --- exchange: what it retries --------------------------------------------------------------------


@pytest.mark.parametrize("error", NotSent)
async def test_a_request_that_never_left_is_retried_with_the_injected_sleep(
    error: type[httpx.TransportError],
) -> None:
    calls: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        if len(calls) < 3:
            raise error("not sent", request=request)
        return httpx.Response(200, content=b"fine")

    sleeps = Sleeps()
    answer = await adapter(handler, sleeps, connect_retries=2).exchange("POST", "/", max_body=99)

    assert (answer.status, answer.body, len(calls)) == (200, b"fine", 3)
    assert len(sleeps.waits) == 2
    assert all(0 < wait <= 2.0 for wait in sleeps.waits)


async def test_retries_stop_after_connect_retries_and_the_error_is_raised() -> None:
    calls: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        raise httpx.ConnectError("refused", request=request)

    sleeps = Sleeps()
    with pytest.raises(httpx.ConnectError):
        await adapter(handler, sleeps, connect_retries=3).exchange("GET", "/", max_body=99)

    assert (len(calls), len(sleeps.waits)) == (4, 3)


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (httpx.ReadTimeout, "unknown"),
        (httpx.ReadError, "unknown"),
        (httpx.RemoteProtocolError, "unknown"),
        # Cut short while being written: no HTTP server acts on half a request.
        (httpx.WriteError, "unavailable"),
    ],
)
async def test_a_request_that_may_have_left_is_never_resent(
    error: type[httpx.TransportError], kind: str
) -> None:
    calls: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        raise error("maybe sent", request=request)

    sleeps = Sleeps()
    with pytest.raises(error) as raised:
        await adapter(handler, sleeps, connect_retries=3).exchange("POST", "/", max_body=99)

    assert (len(calls), sleeps.waits) == (1, [])
    outcome = adapter(handler).transport_outcome(raised.value)
    assert outcome.kind == kind


async def test_a_refused_loopback_port_is_retried_then_raised() -> None:
    sleeps = Sleeps()
    a = _Adapter(connection("http://127.0.0.1:1"), {"token": "t"}, sleep=sleeps)

    with pytest.raises(httpx.ConnectError):
        await a.exchange("GET", "/", max_body=10)
    await a.aclose()

    assert len(sleeps.waits) == 2  # connect_retries defaults to 2


async def test_request_keeps_the_same_retry_rule() -> None:
    calls: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        if len(calls) == 1:
            raise httpx.ConnectTimeout("slow connect", request=request)
        return httpx.Response(200, content=b"whole")

    sleeps = Sleeps()
    response = await adapter(handler, sleeps).request("GET", "/")

    assert (response.content, len(calls), len(sleeps.waits)) == (b"whole", 2, 1)


# --- construction ---------------------------------------------------------------------------------


def test_the_clock_is_injectable_and_defaults_to_the_system_clock() -> None:
    clock = ManualClock()

    assert adapter(None, clock=clock).clock is clock
    assert isinstance(adapter(None).clock, SystemClock)


def test_validate_connection_runs_before_any_client_is_built() -> None:
    built: list[object] = []

    class Picky(_Adapter):
        @classmethod
        def validate_connection(cls, connection: Connection) -> None:
            raise InvalidCredentials("no base_url")

        def __setattr__(self, name: str, value: object) -> None:
            built.append(name)
            super().__setattr__(name, value)

    with pytest.raises(InvalidCredentials, match="no base_url"):
        Picky(connection(), {"token": "t"})
    assert built == []


# --- JSON -----------------------------------------------------------------------------------------


def test_decode_json_reads_any_value_and_decode_json_object_only_objects() -> None:
    assert decode_json(b"[1, 2]") == [1, 2]
    assert decode_json_object('{"a": {"b": []}}') == {"a": {"b": []}}


@pytest.mark.parametrize(
    ("body", "kwargs", "problem", "words"),
    [
        (b"<html>", {}, "not_json", "not JSON"),
        (b'{"a": "\xff"}', {}, "not_json", "not JSON"),
        (b"", {}, "not_json", "not JSON"),
        (b'{"a": 1}', {"max_bytes": 7}, "too_large", "over 7 bytes"),
        (b"[" * 100_000 + b"]" * 100_000, {}, "too_deep", f"over {MAX_JSON_DEPTH} levels"),
        (b'{"a": [[{"b": [1]}]]}', {"max_depth": 4}, "too_deep", "over 4 levels"),
        (b"[1]", {}, "not_object", "list, not an object"),
        (b'"text"', {}, "not_object", "str, not an object"),
        (b"null", {}, "not_object", "NoneType, not an object"),
    ],
    ids=["html", "bad-utf8", "empty", "too-large", "recursion", "too-deep", "list", "str", "null"],
)
def test_json_that_cannot_be_used_says_why(
    body: bytes, kwargs: dict[str, int], problem: str, words: str
) -> None:
    with pytest.raises(JsonUnreadable) as raised:
        decode_json_object(body, **kwargs)

    assert raised.value.problem == problem
    assert words in str(raised.value)
    assert isinstance(raised.value, ValueError)


def test_json_as_deep_as_the_limit_is_read() -> None:
    assert decode_json_object(b'{"a": [[{"b": [1]}]]}', max_depth=5) == {"a": [[{"b": [1]}]]}
    assert decode_json(b"[]", max_bytes=2, max_depth=1) == []


# --- SMS helpers ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("number", "expected"),
    [("+905321234567", "5321234567"), ("905321234567", "5321234567"),
     ("05321234567", "5321234567"), (5321234567, "5321234567"), ("+902121234567", None),
     ("+15551234567", None), ("", None)],
)  # fmt: skip
def test_national(number: object, expected: str | None) -> None:
    assert national(number) == expected


@pytest.mark.parametrize(
    ("number", "expected"),
    [("+905321234567", "905321234567"), ("00905321234567", "905321234567"),
     ("05321234567", "905321234567"), ("5321234567", "905321234567"),
     (905321234567, "905321234567"), ("+15551234567", None), ("12", None)],
)  # fmt: skip
def test_msisdn(number: str | int, expected: str | None) -> None:
    assert msisdn(number) == expected


def _req(to: str, sender: str = "ACME") -> SubmitRequest:
    return SubmitRequest(job_id="j", to=to, text="t", sender=sender)


def test_split_distinct_never_repeats_a_number_and_honours_size_and_key() -> None:
    a, b, c = "+905320000001", "+905320000002", "+905320000003"
    requests = [_req(a), _req(b), _req(a), _req(c), _req(c, "OTHER"), _req(b)]

    assert split_distinct(requests) == [[0, 1, 3], [2, 4, 5]]
    assert split_distinct(requests, size=2) == [[0, 1], [2, 3], [4, 5]]
    assert split_distinct(requests, key=lambda r: r.sender) == [[0, 1, 3], [2, 5], [4]]
    assert split_distinct([]) == []


async def test_send_in_groups_answers_in_order_group_by_group() -> None:
    a, b = "+905320000001", "+905320000002"
    requests = [_req(a), _req("bad"), _req(a, "OTHER"), _req(a), _req(b)]
    sent: list[tuple[str | None, list[str]]] = []

    async def send(key: str | None, chunk: Any) -> list[SubmitOutcome]:
        sent.append((key, [r.to for r in chunk]))
        return [SubmitOutcome.accepted(f"{key}:{r.to}") for r in chunk]

    outcomes = await send_in_groups(
        requests,
        refusal=lambda r: SubmitOutcome.rejected("X", "bad") if r.to == "bad" else None,
        key=lambda r: r.sender,
        size=100,
        send=send,
    )

    assert sent == [("ACME", [a, b]), ("ACME", [a]), ("OTHER", [a])]
    assert [o.provider_message_id for o in outcomes] == [
        f"ACME:{a}",
        None,
        f"OTHER:{a}",
        f"ACME:{a}",
        f"ACME:{b}",
    ]


def test_numbers_by_id_skips_ids_without_both_parts() -> None:
    ids = ["17:+905320000001", "17:+905320000002", "18:+905320000001", "19", ":+9053", "20:"]

    assert numbers_by_id(ids) == {
        "17": {"+905320000001", "+905320000002"},
        "18": {"+905320000001"},
    }


@pytest.mark.parametrize(
    ("answer", "kind", "words"),
    [
        (Answer(200, httpx.Headers(), "application/json", b"{", True), "unknown", "not read"),
        (Answer(429, httpx.Headers({"Retry-After": "9"}), "", b"", False), "unavailable",
         "throttling"),
        (Answer(503, httpx.Headers(), "application/json", b"{}", False), "unavailable",
         "HTTP 503"),
        (Answer(200, httpx.Headers(), "text/html", b"{}", False), "unknown", "text/html, not JSON"),
        (Answer(200, httpx.Headers(), "", b"<p>", False), "unknown", "HTTP 200"),
        (Answer(200, httpx.Headers(), "text/plain", b"[1]", False), "unknown", "not an object"),
        (Answer(406, httpx.Headers(), "text/html", b"<p>", False), "unavailable", "HTTP 406"),
    ],
    ids=["truncated", "429", "5xx", "html", "not-json", "not-object", "4xx-html"],
)  # fmt: skip
def test_json_answer_is_unknown_for_an_unreadable_2xx_and_unavailable_otherwise(
    answer: Answer, kind: str, words: str
) -> None:
    outcome = json_answer(answer, adapter(lambda request: httpx.Response(500)))

    assert isinstance(outcome, SubmitOutcome)
    assert outcome.kind == kind
    assert outcome.error is not None and "Telegram" in outcome.error.message
    assert words in outcome.error.message
    assert outcome.retry_after == (9.0 if answer.status == 429 else None)
    code = "PROVIDER_OUTCOME_UNKNOWN" if kind == "unknown" else "PROVIDER_UNAVAILABLE"
    assert outcome.error.code == code


def test_json_answer_reads_an_object() -> None:
    answer = Answer(406, httpx.Headers(), "application/json", b'{"code": "30"}', False)

    assert json_answer(answer, adapter(lambda request: httpx.Response(500))) == {"code": "30"}


# --- causes and masking ---------------------------------------------------------


def _failed(
    error: type[httpx.TransportError], words: str, cause: BaseException | None = None
) -> Any:
    """``error`` as httpx raises it for a request to the provider, ``cause`` its origin."""
    request = httpx.Request("POST", "https://api.example.test:8443/bot123456:SECRET/send?key=k1")
    request.extensions["timeout"] = {"connect": 5.0, "read": 15.0, "write": 10.0, "pool": 5.0}
    exc = error(words, request=request)
    exc.__cause__ = cause
    return exc


@pytest.mark.parametrize(
    ("exc", "says"),
    [
        (_failed(httpx.ConnectError, "[Errno -3] Temporary failure in name resolution",
                 socket.gaierror(-3, "Temporary failure in name resolution")),
         "the name api.example.test could not be resolved (DNS)"),
        (_failed(httpx.ConnectError, "[Errno 111] Connect call failed",
                 ConnectionRefusedError(111, "Connect call failed")),
         "api.example.test:8443 refused the connection"),
        (_failed(httpx.ConnectError, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed",
                 ssl.SSLCertVerificationError("certificate verify failed")),
         "the TLS handshake with api.example.test:8443 failed"),
        (_failed(httpx.ConnectTimeout, "timed out"),
         "no connection to api.example.test:8443 after 5 s (connect time-out)"),
        (_failed(httpx.ReadTimeout, "timed out"),
         "no answer from api.example.test:8443 after 15 s, once the request was sent"),
        (_failed(httpx.PoolTimeout, "timed out"), "in the pool after 5 s"),
        (_failed(httpx.RemoteProtocolError, "Server disconnected without sending a response."),
         "broke before the answer was complete"),
    ],
    ids=["dns", "refused", "tls", "connect-timeout", "read-timeout", "pool-timeout", "cut"],
)  # fmt: skip
def test_a_transport_failure_says_its_cause_and_never_the_url_path(
    exc: httpx.HTTPError, says: str
) -> None:
    cause = transport_cause(exc)

    assert says in cause
    assert "SECRET" not in cause and "k1" not in cause  # host and port only


@pytest.mark.parametrize(
    ("text", "hidden"),
    [
        ("GET /bot123456789:AAH-abcdefghijklmnopqrstuvwxyz01234/sendMessage", "AAH-abcdefghij"),
        ("proxy: /send?username=u&password=p%40ss&to=1", "p%40ss"),
        ('{"api_key": "k-1", "hash": "h-2"}', "k-1"),
        ("Authorization: Bearer EAAGm0PX4ZCpsBAKZC", "EAAGm0PX4ZCpsBAKZC"),
        ("token a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6 refused", "a1b2c3d4e5f6a7b8c9d0e1f2"),
    ],
    ids=["telegram-path", "query", "json", "bearer", "long-token"],
)
def test_what_looks_like_a_credential_is_masked(text: str, hidden: str) -> None:
    assert hidden not in redact(text)


@given(
    secret=st.text(alphabet=st.characters(categories=["L", "N", "P", "S"]), min_size=3),
    before=st.text(),
    after=st.text(),
)
def test_a_known_secret_never_survives_redaction(secret: str, before: str, after: str) -> None:
    shown = redact(before + secret + after + secret, [secret])

    assert secret not in shown


def test_an_excerpt_is_one_capped_line() -> None:
    shown = excerpt("<html>\n  <body>" + "x" * 5000 + "</body>\n</html>")

    assert "\n" not in shown
    assert len(shown) == 200 and shown.endswith("…")
    assert excerpt("   ") == "(empty body)"


@given(
    status=st.integers(min_value=100, max_value=599),
    body=st.binary(max_size=600),
    truncated=st.booleans(),
)
def test_an_unreadable_answer_is_unknown_exactly_when_its_status_is_2xx(
    status: int, body: bytes, truncated: bool
) -> None:
    """A 2xx may mean the provider took it; no other status does."""
    answer = Answer(status, httpx.Headers(), "text/html", b"token=t " + body, truncated)

    outcome = adapter(lambda request: httpx.Response(500)).unreadable(answer, "not our format")

    assert outcome.kind == ("unknown" if 200 <= status < 300 else "unavailable")
    assert outcome.error is not None and f"HTTP {status} (text/html)" in outcome.error.message
    assert "token=t " not in outcome.error.message  # the adapter's credential, masked
    assert outcome.provider_message_id is None
