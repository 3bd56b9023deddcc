"""The webhook sender's own network backend (``unified_messaging.webhooks._asyncio_net``) over real
sockets: TLS with certificate checks, keep-alive over TLS, a receiver that closes idle
connections, and a receiver that never reads."""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import uvicorn
from _tls import self_signed

from unified_messaging.webhooks._sender import GuardedTransport, TargetPolicy, WebhookSender

LOOPBACK = TargetPolicy(allow_private=True)
BODY = b'{"type":"message.sent"}'
HEADERS = {"webhook-id": "evt_1", "webhook-timestamp": "1767225600", "webhook-signature": "v1,x"}


class Receiver:
    def __init__(self) -> None:
        self.ports: set[int] = set()
        self.count = 0
        self.port = 0

    async def __call__(self, scope: dict[str, object], receive: object, send: object) -> None:
        assert scope["type"] == "http"
        client = scope["client"]
        assert isinstance(client, tuple)
        self.ports.add(client[1])
        self.count += 1
        while (await receive())["more_body"]:  # type: ignore[operator]
            pass
        await send({"type": "http.response.start", "status": 204, "headers": []})  # type: ignore[operator]
        await send({"type": "http.response.body", "body": b""})  # type: ignore[operator]


async def serve(app: Receiver, **options: object) -> AsyncIterator[Receiver]:
    listener = socket.create_server(("127.0.0.1", 0))
    app.port = listener.getsockname()[1]
    config = uvicorn.Config(
        app, lifespan="off", log_config=None, access_log=False, ws="none", **options
    )  # type: ignore[arg-type]
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[listener]))
    yield app  # the socket listens already: connections wait in its backlog
    server.should_exit = True
    await task
    listener.close()


@pytest.fixture
def certificate(tmp_path: Path) -> tuple[Path, Path]:
    return self_signed(tmp_path, "hooks.test")


@pytest.fixture
async def tls_receiver(certificate: tuple[Path, Path]) -> AsyncIterator[Receiver]:
    cert, key = certificate
    async for receiver in serve(Receiver(), ssl_certfile=str(cert), ssl_keyfile=str(key)):
        yield receiver


def sender_trusting(cert: Path | None) -> WebhookSender:
    context = ssl.create_default_context(cafile=str(cert)) if cert else ssl.create_default_context()
    transport = GuardedTransport(LOOPBACK, verify=context)
    return WebhookSender(httpx.AsyncClient(transport=transport), policy=LOOPBACK)


async def test_https_delivery_verifies_the_certificate_and_keeps_its_connection(
    tls_receiver: Receiver, certificate: tuple[Path, Path]
) -> None:
    sender = sender_trusting(certificate[0])
    url = f"https://127.0.0.1:{tls_receiver.port}/hook"
    results = [await sender.deliver(url, BODY, HEADERS) for _ in range(4)]
    assert [r.outcome for r in results] == ["success"] * 4
    assert tls_receiver.count == 4
    assert len(tls_receiver.ports) == 1  # one TLS handshake, then keep-alive


async def test_an_untrusted_certificate_is_a_retry_and_nothing_is_sent(
    tls_receiver: Receiver,
) -> None:
    sender = sender_trusting(None)  # the system's roots do not include our test certificate
    result = await sender.deliver(f"https://127.0.0.1:{tls_receiver.port}/hook", BODY, HEADERS)
    assert result.outcome == "retry"
    assert result.error is not None and "CERTIFICATE_VERIFY_FAILED" in result.error
    assert tls_receiver.count == 0


async def test_a_receiver_that_closed_an_idle_connection_gets_a_fresh_one() -> None:
    # uvicorn closes keep-alive connections idle past its timeout; the pool must notice the
    # closed connection and dial again instead of failing the delivery.
    async for receiver in serve(Receiver(), timeout_keep_alive=0.05):
        async with WebhookSender(policy=LOOPBACK) as sender:
            url = f"http://127.0.0.1:{receiver.port}/hook"
            assert (await sender.deliver(url, BODY, HEADERS)).ok
            await asyncio.sleep(0.3)  # the receiver closes the idle connection meanwhile
            assert (await sender.deliver(url, BODY, HEADERS)).ok
        assert receiver.count == 2
        assert len(receiver.ports) == 2


async def test_a_receiver_that_never_reads_times_out_as_a_retry() -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setblocking(False)
    accepted: list[socket.socket] = []

    async def accept() -> None:
        loop = asyncio.get_running_loop()
        while True:
            conn, _ = await loop.sock_accept(listener)
            accepted.append(conn)  # never read: the request fills the buffers and stalls

    task = asyncio.create_task(accept())
    try:
        async with WebhookSender(policy=LOOPBACK, timeout=0.5) as sender:
            url = f"http://127.0.0.1:{listener.getsockname()[1]}/hook"
            result = await sender.deliver(url, b"x" * 8_000_000, HEADERS)
        assert result.outcome == "retry"
        assert result.error == "timed out after 0.5 s"
    finally:
        task.cancel()
        for conn in accepted:
            conn.close()
        listener.close()
