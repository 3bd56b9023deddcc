"""``serve``'s HTTP edge on raw loopback sockets, with both parsers: what a complete head may
be (one set of rules, ``_serve_head``), and the health slots past the connection cap.

Like test_serve_limits, most tests run ``serve``'s own socket and protocol under uvicorn in
this process; nothing asserts how fast anything is.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from test_serve_limits import HEAD, WATCHDOG, close, read_to_eof, running

from unified_messaging.cli._serve_head import MAX_HEAD, head_refusal
from unified_messaging.cli._serve_http import HEALTH_SLOTS, Http
from unified_messaging.cli._serve_limits import ServeLimits

LIMITS = ServeLimits(max_connections=50, keep_alive_timeout=30, header_timeout=30)


@pytest.fixture(params=["h11", "httptools"])
def http(request: pytest.FixtureRequest) -> Http:
    """Each parser ``serve --http`` offers: every rule holds for both."""
    return request.param  # type: ignore[no-any-return]


NEXT = b"GET /v1/health HTTP/1.1\r\nHost: test\r\n\r\n"


def status_and_code(answer: bytes) -> tuple[bytes, str | None]:
    head, _, body = answer.partition(b"\r\n\r\n")
    status = head.split(b" ", 2)[1]
    code = json.loads(body)["error"]["code"] if body.startswith(b'{"error"') else None
    return status, code


# --- request smuggling: Content-Length with Transfer-Encoding ----------------------------


@pytest.mark.parametrize(
    "framing",
    [
        b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
        b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n",
    ],
    ids=["length-first", "chunked-first"],
)
async def test_content_length_with_transfer_encoding_is_a_400_and_the_connection_closes(
    http: Http, framing: bytes
) -> None:
    # The body's end is ambiguous: a proxy that reads the other framing sees a second,
    # smuggled request in what follows. RFC 9112 §6.1: reject it, or close after it.
    async with running(LIMITS, http) as srv:
        reader, writer = await srv.connect()
        writer.write(b"POST / HTTP/1.1\r\nHost: test\r\n" + framing + b"\r\n0\r\n\r\n" + NEXT)
        answer = await read_to_eof(reader)
        await close(writer)

    assert status_and_code(answer) == (b"400", "VALIDATION_ERROR"), answer
    assert answer.count(b"HTTP/1.1 ") == 1  # the request behind it was never read
    assert b"\r\nconnection: close\r\n" in answer
    assert srv.app.endings == []


# --- the size of a complete head ---------------------------------------------------------


async def test_a_whole_head_past_16_kib_in_one_write_gets_a_431(http: Http) -> None:
    big = b"".join(b"X-Big-%d: %s\r\n" % (n, b"a" * 1000) for n in range(100))  # ~100 KB
    async with running(LIMITS, http) as srv:
        reader, writer = await srv.connect()
        writer.write(HEAD + big + b"\r\n")
        answer = await read_to_eof(reader)
        await close(writer)

    assert status_and_code(answer) == (b"431", "HEADERS_TOO_LARGE"), answer
    assert srv.app.endings == []


async def test_a_whole_head_just_within_16_kib_is_served(http: Http) -> None:
    request_line = b"GET /v1/health HTTP/1.1\r\nHost: test\r\nConnection: close\r\n"
    filler = MAX_HEAD - len(request_line) - len(b"X-Big: \r\n\r\n") - 64
    async with running(LIMITS, http) as srv:
        reader, writer = await srv.connect()
        writer.write(request_line + b"X-Big: " + b"a" * filler + b"\r\n\r\n")
        answer = await read_to_eof(reader)
        await close(writer)

    assert answer.startswith(b"HTTP/1.1 200 "), answer


# --- Host: exactly one (RFC 9112 §3.2) ----------------------------------------------------


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"GET /v1/health HTTP/1.1\r\n\r\n",
        b"GET /v1/health HTTP/1.1\r\nX-Other: 1\r\n\r\n",
        b"GET /v1/health HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\n\r\n",
        b"GET /v1/health HTTP/1.0\r\nHost: a.example\r\nHost: a.example\r\n\r\n",
    ],
    ids=["no-headers", "no-host", "two-hosts", "two-hosts-http-1.0"],
)
async def test_a_request_without_host_or_with_two_gets_a_400(
    http: Http, request_bytes: bytes
) -> None:
    async with running(LIMITS, http) as srv:
        reader, writer = await srv.connect()
        writer.write(request_bytes + NEXT)
        answer = await read_to_eof(reader)
        await close(writer)

    assert status_and_code(answer) == (b"400", "VALIDATION_ERROR"), answer
    assert answer.count(b"HTTP/1.1 ") == 1
    assert srv.app.endings == []


async def test_an_http_1_0_request_without_host_is_served(http: Http) -> None:
    # Host is required of HTTP/1.1 only.
    async with running(LIMITS, http) as srv:
        reader, writer = await srv.connect()
        writer.write(b"GET /v1/health HTTP/1.0\r\n\r\n")
        answer = await read_to_eof(reader)
        await close(writer)

    assert answer.startswith(b"HTTP/1.1 200 "), answer


def test_the_head_rules_in_one_function() -> None:
    host = [(b"host", b"x")]
    assert head_refusal(b"GET", b"/", b"1.1", host) is None
    assert head_refusal(b"GET", b"/", "1.1", host) is None  # httptools' version is a str
    assert head_refusal(b"GET", b"/", b"1.1", []) == "invalid"
    assert head_refusal(b"GET", b"/", b"1.0", []) is None
    assert head_refusal(b"GET", b"/", b"1.1", host * 2) == "invalid"
    framing = [(b"content-length", b"1"), (b"transfer-encoding", b"chunked")]
    assert head_refusal(b"POST", b"/", b"1.1", host + framing) == "invalid"
    assert head_refusal(b"GET", b"/" + b"a" * MAX_HEAD, b"1.1", host) == "too_large"


# --- the health slots past the connection cap --------------------------------------------


async def wait_for_connections(srv: object, count: int) -> None:
    connections = srv.server.server_state.connections  # type: ignore[attr-defined]
    async with asyncio.timeout(WATCHDOG):  # only against a hang; never an assertion
        while len(connections) < count:  # noqa: ASYNC110
            await asyncio.sleep(0.005)


async def test_at_the_connection_cap_a_health_check_still_gets_its_answer(http: Http) -> None:
    limits = ServeLimits(max_connections=1, keep_alive_timeout=30, header_timeout=30)
    async with running(limits, http) as srv:
        _, held_writer = await srv.connect()
        held_writer.write(HEAD)  # holds the one connection the cap allows
        await wait_for_connections(srv, 1)
        answers = []
        for _ in range(3):  # one after another: each slot is free again after its answer
            reader, writer = await srv.connect()
            writer.write(b"GET /v1/health?probe=1 HTTP/1.1\r\nHost: test\r\n\r\n")
            answers.append(await read_to_eof(reader))  # the slot closes after its answer
            await close(writer)
        await close(held_writer)

    assert [answer.split(b"\r\n", 1)[0] for answer in answers] == [b"HTTP/1.1 200 OK"] * 3
    assert all(answer.endswith(b'{"status": "ok"}') for answer in answers)


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"GET /v1/messages HTTP/1.1\r\nHost: test\r\n\r\n",
        b"POST /v1/health HTTP/1.1\r\nHost: test\r\nContent-Length: 0\r\n\r\n",
        b"GET /v1/healthz HTTP/1.1\r\nHost: test\r\n\r\n",
        b"G",  # then the rest in a second write (GET /v1/messages)
    ],
    ids=["other-path", "other-method", "longer-path", "split"],
)
async def test_at_the_cap_anything_but_a_health_check_gets_the_503(
    http: Http, request_bytes: bytes
) -> None:
    limits = ServeLimits(max_connections=1, keep_alive_timeout=30, header_timeout=30)
    async with running(limits, http) as srv:
        _, held_writer = await srv.connect()
        held_writer.write(HEAD)
        await wait_for_connections(srv, 1)
        reader, writer = await srv.connect()
        writer.write(request_bytes)
        if request_bytes == b"G":
            await writer.drain()
            writer.write(b"ET /v1/messages HTTP/1.1\r\nHost: test\r\n\r\n")
        answer = await read_to_eof(reader)
        await close(writer)
        await close(held_writer)

    assert status_and_code(answer) == (b"503", "SERVER_BUSY"), answer
    assert b"\r\nretry-after: 1\r\n" in answer
    assert srv.app.endings == []


async def test_past_the_health_slots_a_connection_is_refused_at_once(http: Http) -> None:
    limits = ServeLimits(max_connections=1, keep_alive_timeout=30, header_timeout=30)
    async with running(limits, http) as srv:
        held = [await srv.connect() for _ in range(1 + HEALTH_SLOTS)]
        for _, writer in held:
            writer.write(b"GET /v1/heal")  # unfinished health checks hold the slots
        await wait_for_connections(srv, 1 + HEALTH_SLOTS)
        reader, writer = await srv.connect()
        writer.write(NEXT)
        answer = await asyncio.wait_for(reader.read(), WATCHDOG)
        await close(writer)
        for _, held_writer in held:
            await close(held_writer)

    assert status_and_code(answer) == (b"503", "SERVER_BUSY"), answer
