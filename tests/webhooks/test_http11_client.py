"""The webhook sender's own HTTP/1.1 client (``webhooks._http11``) against a raw socket server
that answers exactly the bytes each test scripts: keep-alive, closed connections, chunked,
slow, oversized and failed answers, and the SSRF guard at connect time."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from _raw_http import RawServer, Script, answer
from test_sender_network import Receiver as AsgiReceiver
from test_sender_network import self_signed, serve

from unified_messaging import ManualClock
from unified_messaging.webhooks._http11 import (
    ConnectError,
    TargetRefused,
    WebhookClient,
)
from unified_messaging.webhooks._sender import (
    DRAIN_BYTES,
    EXCERPT_BYTES,
    DeliveryResult,
    TargetPolicy,
    WebhookSender,
)

LOOPBACK = TargetPolicy(allow_private=True)
BODY = b'{"type":"message.sent","data":{"to":"+905551234567"}}'
HEADERS = {"webhook-id": "evt_1", "webhook-timestamp": "1767225600", "webhook-signature": "v1,x"}

#: Starts a RawServer answering with a script.
Start = Callable[[Script], Awaitable[RawServer]]


@pytest.fixture
async def raw() -> AsyncIterator[Start]:
    servers: list[asyncio.Server] = []

    async def start(script: Script) -> RawServer:
        state = RawServer(script)
        server = await asyncio.start_server(state.handle, "127.0.0.1", 0)
        state.port = server.sockets[0].getsockname()[1]
        servers.append(server)
        return state

    yield start
    for server in servers:
        server.close()


def sender_pool(sender: WebhookSender) -> dict[object, list[Any]]:
    """The idle connections of the sender's own client (white-box: the pool's state)."""
    client = sender._client
    assert isinstance(client, WebhookClient)
    return client._idle  # type: ignore[return-value]


async def deliver(sender: WebhookSender, url: str) -> DeliveryResult:
    return await sender.deliver(url, BODY, HEADERS)


@pytest.fixture
async def sender() -> AsyncIterator[WebhookSender]:
    async with WebhookSender(policy=LOOPBACK, timeout=2) as webhook_sender:
        yield webhook_sender


# --------------------------------------------------------------------------- keep-alive


async def test_deliveries_to_one_origin_reuse_one_connection(
    raw: Start, sender: WebhookSender
) -> None:
    server = await raw(lambda n: answer(204))

    results = [await deliver(sender, server.url(f"/hook/{n}")) for n in range(5)]

    assert [r.outcome for r in results] == ["success"] * 5
    assert server.connections == 1
    assert len(server.requests) == 5


async def test_the_request_carries_the_body_its_length_and_the_host(
    raw: Start, sender: WebhookSender
) -> None:
    server = await raw(lambda n: answer(200, b"ok"))

    await deliver(sender, server.url("/in?x=1"))

    [request] = server.requests
    head, _, body = request.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    fields = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    assert lines[0] == "POST /in?x=1 HTTP/1.1"
    assert body == BODY
    assert fields["host"] == f"127.0.0.1:{server.port}"
    assert fields["content-length"] == str(len(BODY))
    assert fields["content-type"] == "application/json"
    assert fields["webhook-id"] == "evt_1"


async def test_a_server_that_closes_after_each_answer_gets_a_new_connection_each_time(
    raw: Start, sender: WebhookSender
) -> None:
    server = await raw(lambda n: answer(204, b"", "connection: close"))

    results = [await deliver(sender, server.url()) for _ in range(3)]

    assert all(r.ok for r in results)
    assert server.connections == 3


async def test_a_kept_connection_the_server_closed_is_replaced_without_a_failure(
    raw: Start, sender: WebhookSender
) -> None:
    # The server answers, then drops the connection without saying so.
    server = await raw(lambda n: answer(204))
    server.close_after = 1

    first = await deliver(sender, server.url())
    await asyncio.sleep(0.05)  # the close reaches the client while the connection is idle
    second = await deliver(sender, server.url())

    assert first.ok and second.ok
    assert server.connections == 2
    assert len(server.requests) == 2


async def test_a_kept_connection_lost_mid_request_is_tried_once_on_a_fresh_one(
    raw: Start, sender: WebhookSender
) -> None:
    # The second request arrives on the kept connection and the server drops it unanswered
    # (as a server closing an idle connection at that moment does): the client dials again.
    server = await raw(lambda n: None if n == 2 else answer(204))

    first = await deliver(sender, server.url())
    second = await deliver(sender, server.url())

    assert first.ok and second.ok
    assert server.connections == 2
    assert len(server.requests) == 3  # the lost one, then the same request again


async def test_a_fresh_connection_closed_without_an_answer_is_a_retry(
    raw: Start, sender: WebhookSender
) -> None:
    server = await raw(lambda n: None)

    result = await deliver(sender, server.url())

    assert result == DeliveryResult(
        "retry", error="RemoteProtocolError: the server closed without answering"
    )
    assert server.connections == 1  # a fresh connection is never tried twice


async def test_bytes_after_the_answer_keep_the_connection_out_of_the_pool(
    raw: Start, sender: WebhookSender
) -> None:
    server = await raw(lambda n: answer(204) + b"HTTP/1.1 200 OK\r\n")

    results = [await deliver(sender, server.url()) for _ in range(2)]

    assert all(r.ok for r in results)
    assert server.connections == 2


async def test_a_connection_that_spoke_while_idle_is_not_reused(
    raw: Start, sender: WebhookSender
) -> None:
    # The answer, then (after the client has pooled the connection) bytes nobody asked for.
    server = await raw(lambda n: answer(204))
    first = await deliver(sender, server.url())
    server.script = lambda n: answer(204)
    [connection] = [c for stack in sender_pool(sender).values() for c in stack]
    assert connection.transport is not None
    connection.data_received(b"HTTP/1.1 200 OK\r\n\r\n")  # as the loop would hand it over
    second = await deliver(sender, server.url())

    assert first.ok and second.ok
    assert server.connections == 2


async def test_a_full_pool_makes_room_by_dropping_expired_connections(raw: Start) -> None:
    # One idle connection at most: the first origin's, expired, must not keep the second
    # origin's connection out of the pool.
    first = await raw(lambda n: answer(204))
    second = await raw(lambda n: answer(204))
    client = WebhookClient(LOOPBACK, max_idle=1, idle_expiry=0.05)
    async with WebhookSender(client, policy=LOOPBACK) as webhook_sender:
        assert (await deliver(webhook_sender, first.url())).ok
        await asyncio.sleep(0.1)
        results = [await deliver(webhook_sender, second.url()) for _ in range(3)]
    await client.aclose()

    assert all(r.ok for r in results)
    assert second.connections == 1


# --------------------------------------------------------------------------- answers


async def test_a_chunked_answer_is_read_to_its_end_and_the_connection_kept(
    raw: Start, sender: WebhookSender
) -> None:
    chunked = (
        b"HTTP/1.1 500 Oops\r\ntransfer-encoding: chunked\r\n\r\n"
        b"5\r\ndown \r\n9\r\nfor a bit\r\n0\r\n\r\n"
    )
    server = await raw(lambda n: chunked)

    results = [await deliver(sender, server.url()) for _ in range(2)]

    assert (
        results
        == [
            DeliveryResult(
                "retry", status_code=500, error="HTTP 500: down for a bit", answer="down for a bit"
            )
        ]
        * 2
    )
    assert server.connections == 1


async def test_an_answer_without_a_length_is_read_until_the_close(
    raw: Start, sender: WebhookSender
) -> None:
    server = await raw(lambda n: b"HTTP/1.1 503 Busy\r\nretry-after: 30\r\n\r\nbusy")
    server.close_after = 1

    result = await deliver(sender, server.url())

    assert result == DeliveryResult(
        "retry", status_code=503, error="HTTP 503: busy", retry_after=30, answer="busy"
    )


async def test_an_oversized_answer_is_excerpted_and_its_connection_dropped(
    raw: Start, sender: WebhookSender
) -> None:
    huge = b"z" * (DRAIN_BYTES * 4)
    server = await raw(lambda n: answer(400, huge))

    results = [await deliver(sender, server.url()) for _ in range(2)]

    assert [r.status_code for r in results] == [400, 400]
    # The answer keeps its first EXCERPT_BYTES; the error line only what fits in a log line.
    assert results[0].answer == "z" * EXCERPT_BYTES
    assert results[0].error is not None and results[0].error.startswith("HTTP 400: zzz")
    assert len(results[0].error) <= 300 and results[0].error.endswith("…")
    assert server.connections == 2  # abandoned mid-answer, so never reused


async def test_a_long_but_bounded_answer_is_drained_and_the_connection_kept(
    raw: Start, sender: WebhookSender
) -> None:
    server = await raw(lambda n: answer(200, b"k" * (DRAIN_BYTES - 1)))

    results = [await deliver(sender, server.url()) for _ in range(3)]

    assert all(r.ok for r in results)
    assert server.connections == 1


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (
            answer(410, b"gone for good"),
            DeliveryResult("disable", 410, "HTTP 410: gone for good", answer="gone for good"),
        ),
        (answer(404), DeliveryResult("retry", 404, "HTTP 404")),
        (
            answer(429, b"", "retry-after: 90"),
            DeliveryResult("retry", 429, "HTTP 429", retry_after=90),
        ),
        (
            answer(302, b"", "location: https://elsewhere.example/"),
            DeliveryResult(
                "retry", 302, "HTTP 302: redirect not followed (to https://elsewhere.example/)"
            ),
        ),
        (
            answer(500, b"\x1f\x8b\x08 compressed", "content-encoding: gzip"),
            DeliveryResult("retry", 500, "HTTP 500"),
        ),
    ],
)
async def test_failed_answers_are_judged_as_the_schedule_needs(
    raw: Start, reply: bytes, expected: DeliveryResult
) -> None:
    server = await raw(lambda n: reply)
    async with WebhookSender(policy=LOOPBACK, clock=ManualClock()) as webhook_sender:
        result = await deliver(webhook_sender, server.url())

    assert result == expected
    assert len(server.requests) == 1  # a redirect is never followed


async def test_100_continue_before_the_answer_is_skipped(raw: Start, sender: WebhookSender) -> None:
    server = await raw(lambda n: b"HTTP/1.1 100 Continue\r\n\r\n" + answer(204))

    assert (await deliver(sender, server.url())).ok


async def test_a_malformed_answer_is_a_retry(raw: Start, sender: WebhookSender) -> None:
    server = await raw(lambda n: b"SMTP ready\r\n\r\n")

    result = await deliver(sender, server.url())

    assert result.outcome == "retry"
    assert result.error is not None and result.error.startswith("RemoteProtocolError")


async def test_a_slow_answer_times_out_and_its_connection_is_not_reused(
    raw: Start,
) -> None:
    server = await raw(lambda n: answer(204))
    server.delay = 0.5
    async with WebhookSender(policy=LOOPBACK, timeout=0.1) as webhook_sender:
        first = await deliver(webhook_sender, server.url())
        server.delay = 0
        second = await deliver(webhook_sender, server.url())

    assert first == DeliveryResult("retry", error="timed out after 0.1 s")
    assert second.ok
    assert server.connections == 2  # the timed-out connection was dropped, not pooled


async def test_a_hanging_endpoint_does_not_hold_another(
    raw: Start,
) -> None:
    hanging = await raw(lambda n: answer(204))
    hanging.delay = 5
    healthy = await raw(lambda n: answer(204))
    async with WebhookSender(policy=LOOPBACK, timeout=1, per_endpoint=2) as webhook_sender:
        stuck = [asyncio.create_task(deliver(webhook_sender, hanging.url())) for _ in range(6)]
        await asyncio.sleep(0.05)
        result = await deliver(webhook_sender, healthy.url())
        assert result.ok
        assert not any(task.done() for task in stuck)
        await asyncio.gather(*stuck)


async def test_connection_refused_is_a_connect_error() -> None:
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()
    client = WebhookClient(LOOPBACK)

    with pytest.raises(ConnectError):
        await client.post(f"http://127.0.0.1:{port}/", BODY, HEADERS)
    await client.aclose()


async def test_a_closed_client_refuses_to_post() -> None:
    client = WebhookClient(LOOPBACK)
    await client.aclose()

    with pytest.raises(RuntimeError, match="closed"):
        await client.post("http://127.0.0.1:9/", BODY, HEADERS)


# --------------------------------------------------------------------------- the guard


class FakeDns:
    def __init__(self, answers: dict[str, Sequence[str]]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    async def __call__(self, host: str, port: int) -> Sequence[str]:
        self.asked.append(host)
        return self.answers.get(host, [host])


async def test_a_name_resolving_to_loopback_is_refused_without_dialling(
    raw: Start,
) -> None:
    server = await raw(lambda n: answer(204))
    dns = FakeDns({"hooks.example.test": ["127.0.0.1"]})
    client = WebhookClient(TargetPolicy(), resolver=dns)
    async with WebhookSender(client) as webhook_sender:
        result = await deliver(webhook_sender, server.url(host="hooks.example.test"))

    assert result == DeliveryResult(
        "refused",
        error="refused: hooks.example.test resolves to 127.0.0.1, a loopback address"
        " (this process does not allow private targets: UM_WEBHOOK_ALLOW_PRIVATE=1)",
    )
    assert server.connections == 0


async def test_one_private_answer_among_public_ones_refuses_the_name() -> None:
    dns = FakeDns({"mixed.example.test": ["93.184.216.34", "10.0.0.1"]})
    client = WebhookClient(TargetPolicy(), resolver=dns)

    with pytest.raises(TargetRefused, match=r"10\.0\.0\.1, a private address"):
        await client.post("http://mixed.example.test/hook", BODY, HEADERS)
    await client.aclose()


async def test_the_checked_address_is_dialled_and_the_name_sent_as_host(
    raw: Start,
) -> None:
    server = await raw(lambda n: answer(204))
    dns = FakeDns({"hooks.example.test": ["127.0.0.1"]})
    policy = TargetPolicy(allowed_networks=["127.0.0.0/8"])
    client = WebhookClient(policy, resolver=dns)
    async with WebhookSender(client, policy=policy) as webhook_sender:
        results = [
            await deliver(webhook_sender, server.url(host="hooks.example.test")) for _ in "ab"
        ]

    assert all(r.ok for r in results)
    assert dns.asked == ["hooks.example.test"]  # once: the second delivery reused the connection
    assert f"host: hooks.example.test:{server.port}".encode() in server.requests[0]


async def test_an_unresolvable_name_is_a_connect_error() -> None:
    client = WebhookClient(LOOPBACK, resolver=FakeDns({"void.example.test": []}))

    with pytest.raises(ConnectError, match=r"void\.example\.test has no addresses"):
        await client.post("http://void.example.test/", BODY, HEADERS)
    await client.aclose()


# --------------------------------------------------------------------------- TLS


async def test_https_verifies_the_certificate_against_the_name_and_keeps_the_connection(
    tmp_path: Path,
) -> None:
    cert, key = self_signed(tmp_path, "hooks.test")
    dns = FakeDns({"hooks.test": ["127.0.0.1"]})
    trusting = WebhookClient(
        LOOPBACK, resolver=dns, ssl_context=ssl.create_default_context(cafile=str(cert))
    )
    other_name = FakeDns({"other.test": ["127.0.0.1"]})
    mismatched = WebhookClient(
        LOOPBACK, resolver=other_name, ssl_context=ssl.create_default_context(cafile=str(cert))
    )
    async for receiver in serve(AsgiReceiver(), ssl_certfile=str(cert), ssl_keyfile=str(key)):
        async with WebhookSender(trusting, policy=LOOPBACK) as good:
            url = f"https://hooks.test:{receiver.port}/hook"
            results = [await deliver(good, url) for _ in range(3)]
        async with WebhookSender(mismatched, policy=LOOPBACK) as bad:
            refused = await deliver(bad, f"https://other.test:{receiver.port}/hook")
        await trusting.aclose()
        await mismatched.aclose()
        assert [r.outcome for r in results] == ["success"] * 3
        assert len(receiver.ports) == 1  # one handshake, then keep-alive
        assert refused.outcome == "retry"
        assert refused.error is not None and "CERTIFICATE_VERIFY_FAILED" in refused.error
        assert receiver.count == 3
