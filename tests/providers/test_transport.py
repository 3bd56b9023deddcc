"""The live adapters' transport (``providers._transport``) over real loopback sockets: a server
that answers the bytes each test scripts. Keep-alive, connections the server closed, time-outs,
refusals, answer framing and caps, the pool's limit, TLS, and the bytes on the wire, through the
adapter's own path (``HttpAdapter.exchange``) and through httpx on the same pool."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest
from _raw_http import RawServer, Script, answer
from _tls import self_signed
from pydantic import SecretStr

from unified_messaging._domain import Connection
from unified_messaging._types import ProviderCode
from unified_messaging.providers._http import CredentialsModel, HttpAdapter
from unified_messaging.providers._transport import ProviderTransport
from unified_messaging.providers.base import SubmitOutcome, SubmitRequest
from unified_messaging.providers.kannel import KannelAdapter

OK = answer(200, b"ok")
Start = Callable[..., Awaitable[RawServer]]


@pytest.fixture
async def raw() -> AsyncIterator[Start]:
    servers: list[asyncio.Server] = []

    async def start(script: Script, **kw: Any) -> RawServer:
        server = RawServer(script, **kw)
        listening = await asyncio.start_server(server.handle, "127.0.0.1", 0)
        server.port = listening.sockets[0].getsockname()[1]
        servers.append(listening)
        return server

    yield start
    for listening in servers:
        listening.close()


class _Credentials(CredentialsModel):
    token: SecretStr


class _Adapter(HttpAdapter[_Credentials]):
    PROVIDER_CODE: ClassVar[ProviderCode] = "chatbot"
    credentials_model = _Credentials
    default_base_url = ""

    async def submit(self, request: SubmitRequest) -> SubmitOutcome:
        raise NotImplementedError


class Sleeps:
    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def adapter(base: str, **kw: Any) -> _Adapter:
    connection = Connection(
        id="conn_x", workspace_id="ws_1", provider="chatbot",
        created_at=datetime(2026, 1, 1, tzinfo=UTC), credentials="v1.k.n.c", base_url=base,
    )  # fmt: skip
    return _Adapter(connection, {"token": "t"}, **kw)


# --------------------------------------------------------------------------- keep-alive


async def test_calls_reuse_one_kept_connection_and_httpx_shares_the_pool(raw: Start) -> None:
    server = await raw(lambda n: answer(200, b"%d" % n))
    a = adapter(server.url(""))
    first = await a.exchange("GET", "/a", max_body=100)
    second = await a.exchange("POST", "/b", max_body=100, json={"x": 1})
    third = await a.client.get(server.url("/c"))  # httpx, on the same pool
    await a.aclose()

    assert (first.body, second.body, third.content) == (b"1", b"2", b"3")
    assert server.connections == 1


async def test_a_kept_connection_the_server_closed_is_replaced_without_a_failure(
    raw: Start,
) -> None:
    server = await raw(lambda n: OK, close_after=1)
    a = adapter(server.url(""))
    first = await a.exchange("GET", "/", max_body=100)
    assert a._transport is not None
    [kept] = a._transport.pool.idle.stacks[("http", "127.0.0.1", server.port)]
    for _ in range(500):  # until the server's close reaches the idle connection
        if not kept.usable():
            break
        await asyncio.sleep(0.01)
    second = await a.exchange("GET", "/", max_body=100)
    await a.aclose()

    assert (first.status, second.status) == (200, 200)
    assert (server.connections, len(server.requests)) == (2, 2)


async def test_a_connection_closed_after_the_request_left_is_unknown_and_never_resent(
    raw: Start,
) -> None:
    server = await raw(lambda n: OK if n == 1 else None)
    a = adapter(server.url(""), sleep=Sleeps())
    await a.exchange("GET", "/", max_body=100)
    with pytest.raises(httpx.RemoteProtocolError) as caught:
        await a.exchange("GET", "/send", max_body=100)
    outcome = a.transport_outcome(caught.value)
    await a.aclose()

    assert outcome.kind == "unknown"
    assert len(server.requests) == 2  # the second was sent once


async def test_a_connection_that_spoke_while_idle_is_not_reused(raw: Start) -> None:
    server = await raw(lambda n: OK)
    a = adapter(server.url(""))
    await a.exchange("GET", "/", max_body=100)
    assert a._transport is not None
    [kept] = a._transport.pool.idle.stacks[("http", "127.0.0.1", server.port)]
    kept.data_received(b"HTTP/1.1 200 OK\r\n\r\n")  # as the loop would hand it over
    second = await a.exchange("GET", "/", max_body=100)
    await a.aclose()

    assert second.status == 200
    assert server.connections == 2


# --------------------------------------------------------------------------- failures


async def test_no_answer_within_the_read_time_out_is_unknown(raw: Start) -> None:
    server = await raw(lambda n: ...)
    a = adapter(server.url(""), timeout=httpx.Timeout(5.0, read=0.1))
    with pytest.raises(httpx.ReadTimeout) as caught:
        await a.exchange("GET", "/", max_body=100)
    outcome = a.transport_outcome(caught.value)
    await a.aclose()

    assert outcome.kind == "unknown"
    assert outcome.error is not None
    assert f"127.0.0.1:{server.port} after 0.1 s" in outcome.error.message
    assert "read time-out" in outcome.error.message


async def test_a_refused_connection_is_retried_then_unavailable() -> None:
    sleeps = Sleeps()
    a = adapter("http://127.0.0.1:1", sleep=sleeps, connect_retries=2)
    with pytest.raises(httpx.ConnectError) as caught:
        await a.exchange("GET", "/", max_body=100)
    outcome = a.transport_outcome(caught.value)
    await a.aclose()

    assert len(sleeps.waits) == 2
    assert outcome.kind == "unavailable"
    assert outcome.error is not None
    assert "refused the connection" in outcome.error.message


async def test_a_full_pool_is_a_pool_time_out_that_never_left(raw: Start) -> None:
    server = await raw(lambda n: ... if n == 1 else OK)
    transport = ProviderTransport(httpx.Limits(max_connections=1))
    client = httpx.AsyncClient(transport=transport, timeout=httpx.Timeout(5.0, pool=0.1))
    hanging = asyncio.create_task(client.get(server.url("/hang")))
    await asyncio.sleep(0.05)
    with pytest.raises(httpx.PoolTimeout):
        await client.get(server.url("/next"))
    hanging.cancel()
    with pytest.raises(asyncio.CancelledError):
        await hanging
    after = await client.get(server.url("/after"))  # the cancelled call gave its slot back
    await client.aclose()

    assert after.status_code == 200
    assert [r.split(b" ")[1] for r in server.requests] == [b"/hang", b"/after"]


# --------------------------------------------------------------------------- answers


async def test_chunked_length_and_close_delimited_answers_are_read_whole(raw: Start) -> None:
    chunked = (
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n4\r\ndefg\r\n0\r\n\r\n"
    )
    until_close = b"HTTP/1.1 200 OK\r\n\r\nuntil the close"
    replies = {1: chunked, 2: answer(200, b"by length"), 3: until_close}
    server = await raw(lambda n: replies[n], close_after=None)
    a = adapter(server.url(""))
    bodies = [(await a.exchange("GET", "/", max_body=100)).body for _ in range(2)]
    server.close_after = 1  # the third answer ends with its connection
    bodies.append((await a.exchange("GET", "/", max_body=100)).body)
    await a.aclose()

    assert bodies == [b"abcdefg", b"by length", b"until the close"]
    assert server.connections == 1


async def test_an_answer_over_the_cap_is_cut_and_its_connection_dropped(raw: Start) -> None:
    endless = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n" + b"400\r\n" + b"x" * 1024
    server = await raw(lambda n: endless + b"\r\n" + b"400\r\n" + b"y" * 1024 if n == 1 else OK)
    a = adapter(server.url(""))
    cut = await a.exchange("GET", "/", max_body=1000)
    after = await a.exchange("GET", "/", max_body=1000)
    await a.aclose()

    assert (cut.truncated, len(cut.body), cut.cut_short) == (
        True,
        1000,
        "the answer is over 1000 bytes",
    )
    assert after.status == 200
    assert server.connections == 2


async def test_a_429_keeps_its_retry_after(raw: Start) -> None:
    server = await raw(lambda n: answer(429, b"Too many", "Retry-After: 7"))
    kannel = KannelAdapter(
        Connection(
            id="conn_k", workspace_id="ws_1", provider="sms_e",
            created_at=datetime(2026, 1, 1, tzinfo=UTC), credentials="v1.k.n.c",
            base_url=server.url(""), dlr_token="tok",
        ),
        {"username": "u", "password": "p", "dlr_url": "http://127.0.0.1:9"},
    )  # fmt: skip
    outcome = await kannel.submit(SubmitRequest(job_id="msg_1", to="+905321234567", text="hi"))
    await kannel.aclose()

    assert outcome.kind == "unavailable"
    assert outcome.retry_after == 7


# --------------------------------------------------------------------------- the wire


async def test_the_adapters_own_path_sends_what_httpx_would(raw: Start) -> None:
    server = await raw(lambda n: OK)
    params = {"text": "Merhaba dünya & +1 = 100%", "to": "+905321234567"}
    a = adapter(server.url(""))
    await a.exchange("GET", "/q", max_body=100, params=params, headers={"X-Extra": "1"})
    await a.exchange("POST", "/j", max_body=100, json={"text": "ş", "n": [1, 2]})
    await a.client.get(server.url("/q"), params=params, headers={"X-Extra": "1"})
    await a.client.post(server.url("/j"), json={"text": "ş", "n": [1, 2]})
    await a.aclose()

    own_get, own_post, httpx_get, httpx_post = server.requests
    assert own_get.split(b"\r\n")[0] == httpx_get.split(b"\r\n")[0]
    assert own_post.partition(b"\r\n\r\n")[2] == httpx_post.partition(b"\r\n\r\n")[2]
    for sent in (own_get, own_post):
        fields = sent.lower()
        assert b"\r\nhost: 127.0.0.1:%d\r\n" % server.port in fields
        assert b"\r\nuser-agent: unified-messaging/" in fields
    assert b"\r\nx-extra: 1\r\n" in own_get.lower()
    assert b"\r\ncontent-type: application/json\r\n" in own_post.lower()


# --------------------------------------------------------------------------- TLS


async def test_tls_with_a_given_context_verifies_and_keeps_the_connection(
    raw: Start, tmp_path: Path
) -> None:
    cert, key = self_signed(tmp_path, "provider.test")
    served = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    served.load_cert_chain(cert, key)
    server = RawServer(lambda n: answer(200, b"secure"))
    listening = await asyncio.start_server(server.handle, "127.0.0.1", 0, ssl=served)
    port = listening.sockets[0].getsockname()[1]
    trusting = ssl.create_default_context(cafile=str(cert))
    client = httpx.AsyncClient(transport=ProviderTransport(ssl_context=trusting))
    default = httpx.AsyncClient(transport=ProviderTransport())
    try:
        answers = [await client.get(f"https://127.0.0.1:{port}/") for _ in range(2)]
        with pytest.raises(httpx.ConnectError) as caught:
            await default.get(f"https://127.0.0.1:{port}/")
    finally:
        await client.aclose()
        await default.aclose()
        listening.close()

    assert [r.content for r in answers] == [b"secure", b"secure"]
    assert server.connections == 1  # kept for both; the refused handshake never got this far
    assert isinstance(caught.value.__cause__.__cause__, ssl.SSLCertVerificationError)  # type: ignore[union-attr]
