"""``serve``'s limits on clients, on real loopback sockets.

Most tests run ``serve``'s own listening socket and protocol under uvicorn in this process,
with a tiny app and time-outs of a fraction of a second; the last ones run the real command.
Nothing here asserts how fast anything is: a time-out shows as the server closing the
connection (or answering 408), which each test waits for.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import logging
import resource
import signal
import socket
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import IO

import httpx
import pytest
import uvicorn
from _cli_support import Cli
from test_cli_serve import serving, stop

from unified_messaging.cli._serve_http import (
    MAX_HEAD,
    Http,
    accept_errors_reported,
    server_answer,
)
from unified_messaging.cli._serve_limits import LogThrottle, ServeLimits
from unified_messaging.cli._serve_protocols import (
    guarded_protocol,
    httptools_installed,
    resolve_http,
)
from unified_messaging.cli._serve_socket import listening as _listening

WATCHDOG = 10  # seconds: only for a test that would otherwise hang; never an assertion
FAST = ServeLimits(max_connections=50, keep_alive_timeout=0.2, header_timeout=0.2, body_timeout=0.2)
HEAD = b"GET /v1/health HTTP/1.1\r\nHost: test\r\n"


@dataclass
class App:
    """Answers 200 after reading the whole body; remembers what each request ended with."""

    endings: list[str] = field(default_factory=list)

    async def __call__(self, scope: dict[str, object], receive: Callable, send: Callable) -> None:  # type: ignore[type-arg]
        assert scope["type"] == "http"
        while True:
            message = await receive()
            if message["type"] == "http.disconnect" or not message.get("more_body"):
                break
        self.endings.append(message["type"])
        if message["type"] == "http.disconnect":
            return
        await send(
            {"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"16")]}
        )
        await send({"type": "http.response.body", "body": b'{"status": "ok"}'})


@dataclass
class SlowApp(App):
    """:class:`App` that waits ``seconds`` before it answers."""

    seconds: float = 0.0

    async def __call__(self, scope: dict[str, object], receive: Callable, send: Callable) -> None:  # type: ignore[type-arg]
        await asyncio.sleep(self.seconds)
        await super().__call__(scope, receive, send)


@dataclass
class Running:
    port: int
    server: uvicorn.Server
    app: App

    async def connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.open_connection("127.0.0.1", self.port)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"


@pytest.fixture(params=["h11", "httptools"])
def http(request: pytest.FixtureRequest) -> Http:
    """Each protocol ``serve --http`` offers: every limit holds for both."""
    return request.param  # type: ignore[no-any-return]


@contextlib.asynccontextmanager
async def running(
    limits: ServeLimits, http: Http, host: str = "127.0.0.1", app: App | None = None
) -> AsyncIterator[Running]:
    """``serve``'s socket and protocol under uvicorn in this loop, with :class:`App`."""
    app = app or App()
    config = uvicorn.Config(
        app, lifespan="off", log_config=None, http=guarded_protocol(limits, http), ws="none"
    )
    with _listening(host, 0, 128) as sock:
        server = uvicorn.Server(config)
        task = asyncio.create_task(server.serve(sockets=[sock]))
        try:
            while not server.started:
                if task.done():
                    task.result()
                await asyncio.sleep(0.005)
            yield Running(sock.getsockname()[1], server, app)
        finally:
            server.should_exit = True
            await task


async def read_to_eof(reader: asyncio.StreamReader) -> bytes:
    return await asyncio.wait_for(reader.read(), WATCHDOG)


async def close(writer: asyncio.StreamWriter) -> None:
    writer.close()
    with contextlib.suppress(ConnectionError):
        await writer.wait_closed()


async def trickle(writer: asyncio.StreamWriter, chunks: bytes) -> None:
    """Send ``chunks`` a byte at a time, 20 ms apart, until the server hangs up."""
    with contextlib.suppress(ConnectionError):
        for byte in chunks:
            writer.write(bytes([byte]))
            await writer.drain()
            await asyncio.sleep(0.02)


def nodelay(sock: socket.socket) -> int:
    return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)


def server_side_sockets(server: uvicorn.Server) -> list[socket.socket]:
    return [conn.transport.get_extra_info("socket") for conn in server.server_state.connections]


def ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


# --- TCP_NODELAY --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1",
        pytest.param(
            "::1", marks=pytest.mark.skipif(not ipv6_loopback(), reason="no IPv6 loopback")
        ),
    ],
)
async def test_listening_socket_gives_asyncio_connections_tcp_nodelay(host: str) -> None:
    accepted: asyncio.Future[asyncio.BaseTransport] = asyncio.get_running_loop().create_future()

    class Capture(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            accepted.set_result(transport)

    with _listening(host, 0, 8) as sock:
        # A plain asyncio protocol: only the listening socket can earn the option here.
        server = await asyncio.get_running_loop().create_server(Capture, sock=sock)
        async with server:
            _, writer = await asyncio.open_connection(host, sock.getsockname()[1])
            transport = await asyncio.wait_for(accepted, WATCHDOG)
            assert nodelay(transport.get_extra_info("socket")) == 1
            transport.close()
            await close(writer)


async def test_protocol_sets_tcp_nodelay_even_behind_a_plain_socket(http: Http) -> None:
    app = App()
    config = uvicorn.Config(app, lifespan="off", log_config=None, http=guarded_protocol(FAST, http))
    with socket.socket() as sock:  # protocol 0: asyncio itself would not set the option
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        server = uvicorn.Server(config)
        task = asyncio.create_task(server.serve(sockets=[sock]))
        try:
            while not server.started:  # noqa: ASYNC110
                await asyncio.sleep(0.005)
            async with httpx.AsyncClient() as client:
                port = sock.getsockname()[1]
                response = await client.get(f"http://127.0.0.1:{port}/v1/health")
                [accepted] = server_side_sockets(server)
                assert nodelay(accepted) == 1
            assert response.status_code == 200
        finally:
            server.should_exit = True
            await task


# --- time-outs ----------------------------------------------------------------------------


async def test_a_connection_that_never_sends_is_closed_after_the_header_timeout(http: Http) -> None:
    async with running(FAST, http) as srv:
        reader, writer = await srv.connect()
        assert await read_to_eof(reader) == b""
        await close(writer)


async def test_a_slowloris_head_gets_a_408_and_is_closed(http: Http) -> None:
    async with running(FAST, http) as srv:
        reader, writer = await srv.connect()
        sender = asyncio.create_task(trickle(writer, HEAD + b"X-Slow: " + b"a" * 500))
        answer = await read_to_eof(reader)
        await sender
        await close(writer)

    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408 ")
    assert b"\r\nx-request-id: req_" in head
    assert json.loads(body)["error"]["code"] == "REQUEST_TIMEOUT"
    assert srv.app.endings == []  # the app never saw it


async def test_after_a_408_the_server_drains_what_the_client_still_sends(http: Http) -> None:
    """A client may still be sending when its 408 is written. Were the socket closed at
    once, the kernel would answer those bytes with a reset, and a reset that overtakes the
    unread answer makes the client report "connection reset" instead of the 408 (a race
    this suite lost under load). So the server half-closes after the answer and reads and
    drops what still comes (lingering close): the client can keep writing after it has read
    the 408 and the end of the stream, without a reset."""

    def exchange(port: int) -> bytes:
        with socket.create_connection(("127.0.0.1", port), timeout=WATCHDOG) as sock:
            sock.sendall(HEAD + b"X-Slow: a")
            chunks = []
            while chunk := sock.recv(65536):  # the answer, then the server's FIN
                chunks.append(chunk)
            for _ in range(5):  # a reset would fail the second send at the latest
                sock.sendall(b"a" * 100)
                time.sleep(0.02)
            return b"".join(chunks)

    async with running(FAST, http) as srv:
        answer = await asyncio.to_thread(exchange, srv.port)

    assert answer.startswith(b"HTTP/1.1 408 ")
    assert json.loads(answer.partition(b"\r\n\r\n")[2])["error"]["code"] == "REQUEST_TIMEOUT"


async def test_a_slow_body_is_cut_off_and_the_app_sees_a_disconnect(http: Http) -> None:
    async with running(FAST, http) as srv:
        reader, writer = await srv.connect()
        writer.write(b"POST /v1/messages HTTP/1.1\r\nHost: test\r\nContent-Length: 500\r\n\r\n")
        sender = asyncio.create_task(trickle(writer, b"x" * 500))
        try:
            answer = await read_to_eof(reader)
        except ConnectionResetError:
            # Cut off mid-body, the socket is closed with the client's bytes still arriving:
            # the kernel may signal that with a reset rather than an end of stream. Either way
            # nothing was answered (a reset loses nothing here: there is no answer).
            answer = b""
        await sender
        await close(writer)

    assert answer == b""
    assert srv.app.endings == ["http.disconnect"]


async def test_an_idle_keep_alive_connection_is_closed_after_the_keep_alive_timeout(
    http: Http,
) -> None:
    limits = ServeLimits(max_connections=50, keep_alive_timeout=0.2, header_timeout=30)
    async with running(limits, http) as srv:
        reader, writer = await srv.connect()
        writer.write(HEAD + b"\r\n")
        first = await asyncio.wait_for(reader.readuntil(b'{"status": "ok"}'), WATCHDOG)
        rest = await read_to_eof(reader)
        await close(writer)

    assert first.startswith(b"HTTP/1.1 200 ")
    assert rest == b""


async def test_the_head_deadline_covers_each_request_on_a_keep_alive_connection(http: Http) -> None:
    limits = ServeLimits(max_connections=50, keep_alive_timeout=30, header_timeout=0.2)
    async with running(limits, http) as srv:
        reader, writer = await srv.connect()
        writer.write(HEAD + b"\r\n")
        first = await asyncio.wait_for(reader.readuntil(b'{"status": "ok"}'), WATCHDOG)
        sender = asyncio.create_task(trickle(writer, HEAD + b"X-Slow: " + b"a" * 500))
        second = await read_to_eof(reader)
        await sender
        await close(writer)

    assert first.startswith(b"HTTP/1.1 200 ")
    assert second.startswith(b"HTTP/1.1 408 ")


async def test_health_keeps_answering_while_many_slow_clients_are_connected(http: Http) -> None:
    limits = ServeLimits(max_connections=200, header_timeout=30, body_timeout=30)
    async with running(limits, http) as srv:
        slow = [await srv.connect() for _ in range(100)]
        for number, (_, writer) in enumerate(slow):
            if number % 2:
                writer.write(HEAD)  # a head that never ends
            else:
                writer.write(b"POST / HTTP/1.1\r\nHost: test\r\nContent-Length: 9\r\n\r\nx")
        async with httpx.AsyncClient() as client:
            answers = [await client.get(srv.url("/v1/health")) for _ in range(3)]
        for _, writer in slow:
            await close(writer)

    assert [answer.status_code for answer in answers] == [200, 200, 200]


# --- the connection cap -------------------------------------------------------------------


async def test_over_the_limit_a_connection_gets_a_d13_503_and_one_log_line(
    http: Http,
    caplog: pytest.LogCaptureFixture,
) -> None:
    limits = ServeLimits(max_connections=2, header_timeout=30)
    caplog.set_level(logging.WARNING, logger="unified_messaging.serve")
    async with running(limits, http) as srv:
        held = [await srv.connect() for _ in range(2)]
        while len(srv.server.server_state.connections) < 2:  # noqa: ASYNC110
            await asyncio.sleep(0.005)
        async with httpx.AsyncClient() as client:
            # Not /v1/health, which has slots of its own past the cap (tested below).
            refused = [await client.get(srv.url("/v1/messages")) for _ in range(5)]
        for _, writer in held:
            await close(writer)
        while srv.server.server_state.connections:  # noqa: ASYNC110
            await asyncio.sleep(0.005)
        async with httpx.AsyncClient() as client:
            after = await client.get(srv.url("/v1/health"))

    assert {answer.status_code for answer in refused} == {503}
    assert refused[0].json()["error"]["code"] == "SERVER_BUSY"
    assert refused[0].headers["x-request-id"].startswith("req_")
    assert refused[0].headers["retry-after"] == "1"
    lines = [r.getMessage() for r in caplog.records if "refused a connection" in r.getMessage()]
    assert len(lines) == 1, lines
    assert after.status_code == 200


async def test_invalid_http_gets_the_d13_400_with_a_request_id(http: Http) -> None:
    async with running(FAST, http) as srv:
        reader, writer = await srv.connect()
        writer.write(b"NOT HTTP AT ALL\r\n\r\n")
        answer = await read_to_eof(reader)
        await close(writer)

    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 ")
    assert b"\r\nx-request-id: req_" in head
    assert json.loads(body) == {
        "error": {"code": "VALIDATION_ERROR", "message": "The request is not valid HTTP/1.1."}
    }


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"NOT HTTP AT ALL\r\n\r\n",
        b"GET /v1/health HTTP/1.1\r\nHost: test\r\nBad Header\r\n\r\n",
        b"GET /v1/health HTTP/1.1\r\nHost: test\r\nContent-Length: x\r\n\r\n",
        b"GET /v1/health HTTP/1.1\r\nHost: test\r\nContent-Length: 1\r\n"
        b"Content-Length: 2\r\n\r\nab",
        b"POST / HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        b"GET /v1/\xff HTTP/1.1\r\nHost: test\r\n\r\n",
    ],
    ids=["garbage", "no-colon", "bad-length", "two-lengths", "bad-chunk", "non-ascii"],
)
async def test_malformed_requests_get_the_d13_400_from_both_parsers(
    http: Http, request_bytes: bytes
) -> None:
    async with running(FAST, http) as srv:
        reader, writer = await srv.connect()
        writer.write(request_bytes)
        answer = await read_to_eof(reader)
        await close(writer)

    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 "), answer
    assert json.loads(body)["error"]["code"] == "VALIDATION_ERROR"
    assert "http.request" not in srv.app.endings  # a bad body: the app saw a disconnect


async def test_an_unfinished_head_past_16_kib_gets_a_431(http: Http) -> None:
    limits = ServeLimits(max_connections=50, header_timeout=30)
    async with running(limits, http) as srv:
        reader, writer = await srv.connect()
        writer.write(HEAD)
        for _ in range(MAX_HEAD // 1024 + 2):  # a header that never ends, 1 KiB at a time
            with contextlib.suppress(ConnectionError):
                writer.write(b"X-Big: " + b"a" * 1017 + b"\r\n")
                await writer.drain()
        answer = await read_to_eof(reader)
        await close(writer)

    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 431 "), answer
    assert b"\r\nx-request-id: req_" in head
    assert json.loads(body)["error"]["code"] == "HEADERS_TOO_LARGE"
    assert srv.app.endings == []


async def test_a_head_within_the_bound_is_served(http: Http) -> None:
    async with running(FAST, http) as srv, httpx.AsyncClient() as client:
        answer = await client.get(srv.url("/v1/health"), headers={"X-Big": "a" * 12_000})

    assert answer.status_code == 200


async def test_pipelined_requests_are_answered_in_order(http: Http) -> None:
    async with running(FAST, http) as srv:
        reader, writer = await srv.connect()
        body = b"POST / HTTP/1.1\r\nHost: test\r\nContent-Length: 3\r\n\r\nabc"
        writer.write(HEAD + b"\r\n" + body + HEAD + b"Connection: close\r\n\r\n")
        answer = await read_to_eof(reader)
        await close(writer)

    assert answer.count(b"HTTP/1.1 200 ") == 3
    assert srv.app.endings == ["http.request"] * 3


async def test_a_pipelined_head_is_not_timed_while_the_request_before_it_is_answered(
    http: Http,
) -> None:
    """Its deadline starts once the answer before it is written: no 408 in mid-answer."""
    slow = SlowApp(seconds=0.5)
    limits = ServeLimits(max_connections=50, keep_alive_timeout=30, header_timeout=0.2)
    async with running(limits, http, app=slow) as srv:
        reader, writer = await srv.connect()
        writer.write(HEAD + b"\r\n" + HEAD)  # the second head never ends
        answer = await read_to_eof(reader)
        await close(writer)

    first, _, second = answer.partition(b'{"status": "ok"}')
    assert first.startswith(b"HTTP/1.1 200 "), answer
    assert second.startswith(b"HTTP/1.1 408 "), answer


async def test_expect_100_continue_gets_its_interim_answer_then_the_final_one(http: Http) -> None:
    async with running(FAST, http) as srv:
        reader, writer = await srv.connect()
        writer.write(
            b"POST / HTTP/1.1\r\nHost: test\r\nContent-Length: 3\r\n"
            b"Expect: 100-continue\r\nConnection: close\r\n\r\n"
        )
        interim = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), WATCHDOG)
        writer.write(b"abc")
        answer = await read_to_eof(reader)
        await close(writer)

    assert interim.startswith(b"HTTP/1.1 100 ")
    assert answer.startswith(b"HTTP/1.1 200 ")
    assert srv.app.endings == ["http.request"]


async def test_a_chunked_body_is_read_and_a_slow_one_is_cut_off(http: Http) -> None:
    async with running(FAST, http) as srv:
        reader, writer = await srv.connect()
        writer.write(
            b"POST / HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"3\r\nabc\r\n0\r\n\r\n"
        )
        whole = await asyncio.wait_for(reader.readuntil(b'{"status": "ok"}'), WATCHDOG)
        writer.write(b"POST / HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n")
        sender = asyncio.create_task(trickle(writer, b"3\r\nabc\r\n" * 20))
        try:
            rest = await read_to_eof(reader)
        except ConnectionResetError:
            rest = b""
        await sender
        await close(writer)

    assert whole.startswith(b"HTTP/1.1 200 ")
    assert rest == b""
    assert srv.app.endings == ["http.request", "http.disconnect"]


async def test_many_requests_on_one_keep_alive_connection(http: Http) -> None:
    async with running(FAST, http) as srv, httpx.AsyncClient() as client:
        answers = [await client.get(srv.url("/v1/health")) for _ in range(20)]

    assert {answer.status_code for answer in answers} == {200}
    assert answers[0].headers.get("connection") != "close"


def test_http_auto_is_httptools_when_it_imports_else_h11(monkeypatch: pytest.MonkeyPatch) -> None:
    assert [resolve_http(choice) for choice in ("auto", "h11", "httptools")] == [
        "httptools",
        "h11",
        "httptools",
    ]
    monkeypatch.setitem(sys.modules, "httptools", None)  # as if it were not installed

    assert not httptools_installed()
    assert resolve_http("auto") == "h11"


def test_an_answer_before_the_app_is_framed_like_the_apps_own() -> None:
    # The D13 body bytes and the request id the app's error answers carry (asgi._errors,
    # asgi._request_id): one shape whoever answers.
    answer = server_answer(503, "SERVER_BUSY", "Busy; try again shortly.", retry_after=1)

    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode("ascii").split("\r\n")
    assert lines[0] == "HTTP/1.1 503 Service Unavailable"
    fields = dict(line.split(": ", 1) for line in lines[1:])
    assert body == b'{"error":{"code":"SERVER_BUSY","message":"Busy; try again shortly."}}'
    assert fields["content-type"] == "application/json"
    assert fields["content-length"] == str(len(body))
    assert fields["x-request-id"].startswith("req_")
    assert fields["retry-after"] == "1"
    assert fields["connection"] == "close"


# --- log throttling -----------------------------------------------------------------------


def test_a_throttled_warning_is_logged_at_once_then_once_per_interval_with_its_count(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [100.0]
    throttle = LogThrottle("refused", 10, clock=lambda: now[0])
    for step in (0.0, 1.0, 2.0, 9.0, 10.5, 11.0):
        now[0] = 100.0 + step
        throttle.hit()

    lines = [record.getMessage() for record in caplog.records]
    assert lines == [
        "refused (repeats are counted, one line per 10 s)",
        "refused (4 times in the last 10 s)",
    ]


async def test_accept_out_of_descriptors_is_one_warning_not_a_traceback_each(
    caplog: pytest.LogCaptureFixture,
) -> None:
    loop = asyncio.get_running_loop()
    caplog.set_level(logging.DEBUG)
    with accept_errors_reported(loop, 10):
        for _ in range(1000):
            loop.call_exception_handler(
                {
                    "message": "socket.accept() out of system resource",
                    "exception": OSError(errno.EMFILE, "Too many open files"),
                }
            )

    assert [record.levelname for record in caplog.records] == ["WARNING"]
    assert "out of file descriptors" in caplog.records[0].getMessage()
    assert caplog.records[0].exc_info is None


# --- the real command ---------------------------------------------------------------------


def test_serve_applies_its_limit_options(cli: Cli, http: Http) -> None:
    with serving(
        cli,
        "--json",
        "--http",
        http,
        "--max-connections",
        "1",
        "--header-timeout",
        "0.3",
        "--log-level",
        "info",
    ) as proc:
        assert proc.stdout is not None
        url = json.loads(proc.stdout.readline())["url"]
        host, port = url.removeprefix("http://").rsplit(":", 1)
        with socket.create_connection((host, int(port))) as held:
            held.sendall(HEAD)  # a slowloris: holds the only connection, until the time-out
            refused = httpx.get(f"{url}/v1/openapi.json", timeout=WATCHDOG)
            health = httpx.get(f"{url}/v1/health", timeout=WATCHDOG)  # its own slot
            held.settimeout(WATCHDOG)
            cut_off = b"".join(iter(lambda: held.recv(4096), b""))
        after = httpx.get(f"{url}/v1/health", timeout=WATCHDOG)
        _, stderr = stop(proc, signal.SIGTERM)

    assert refused.status_code == 503
    assert health.status_code == 200
    assert cut_off.startswith(b"HTTP/1.1 408 ")
    assert after.status_code == 200
    assert stderr.count("refused a connection: 1 are open") == 1
    assert stderr.count("request head not complete within 0.3 s") == 1


def test_serve_out_of_descriptors_logs_one_line_and_recovers(cli: Cli, http: Http) -> None:
    limit = 64

    def few_descriptors() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

    # No worker in this server: its store connections would compete for the same few
    # descriptors, and its own retry line (logged, then retried) is not what this test reads.
    with serving(
        cli, "--json", "--http", http, "--max-connections", "1000", "--no-worker",
        preexec_fn=few_descriptors,
    ) as proc:  # fmt: skip
        assert proc.stdout is not None and proc.stderr is not None
        url = json.loads(proc.stdout.readline())["url"]
        host, port = url.removeprefix("http://").rsplit(":", 1)
        # The kernel completes every handshake; the server runs out of descriptors on accept.
        flood = [socket.create_connection((host, int(port))) for _ in range(limit * 2)]
        seen = wait_for_line(proc.stderr, "cannot accept connections")
        for sock in flood:
            sock.close()
        health = httpx.get(f"{url}/v1/health", timeout=WATCHDOG)
        _, rest = stop(proc, signal.SIGTERM)

    stderr = seen + rest
    assert health.status_code == 200
    assert stderr.count("cannot accept connections: out of file descriptors") == 1, stderr
    assert "Traceback" not in stderr, stderr
    assert "socket.accept() out of system resource" not in stderr


def wait_for_line(stream: IO[str], text: str) -> str:
    """What ``stream`` says up to and including the first line with ``text`` (the serving
    watchdog ends the process, and so this loop, if it never comes)."""
    lines = []
    for line in iter(stream.readline, ""):
        lines.append(line)
        if text in line:
            break
    return "".join(lines)
