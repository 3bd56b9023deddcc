"""How long the client waits, against the real ``serve --demo`` over sockets: a ``Retry-After``
above ``max_retry_wait`` is raised at once (never a day's sleep), one within it is slept
(through the injected ``sleep``: no test waits), and a retried ``DELETE`` whose first answer
was lost, meeting 404, has done its job.

Between the client and the server sits :class:`Front`, an httpx transport that plays what a
load balancer or a flaky network does to a few answers and hands every other request to the
real server over a real socket."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest
from _served import Served

from unified_messaging import AsyncClient, Client, StorageUnavailable

Trick = Callable[[httpx.Request, httpx.HTTPTransport], httpx.Response]


class Front(httpx.BaseTransport):
    """Requests go to the real server, except that the first ones meet ``tricks`` in turn."""

    def __init__(self, *tricks: Trick) -> None:
        self.real = httpx.HTTPTransport()
        self.tricks = list(tricks)
        self.seen: list[str] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(request.method)
        if self.tricks:
            return self.tricks.pop(0)(request, self.real)
        return self.real.handle_request(request)

    def close(self) -> None:
        self.real.close()


def maintenance(seconds: str) -> Trick:
    """A proxy's 503 that asks the client to come back after ``seconds``."""

    def answer(request: httpx.Request, real: httpx.HTTPTransport) -> httpx.Response:
        return httpx.Response(503, text="down for maintenance", headers={"Retry-After": seconds})

    return answer


def answer_lost(request: httpx.Request, real: httpx.HTTPTransport) -> httpx.Response:
    """The server gets the request and acts on it; its answer never reaches the client."""
    response = real.handle_request(request)
    response.read()
    response.close()
    raise httpx.ReadError("connection reset by peer", request=request)


def client(demo: Served, front: Front, waits: list[float], max_retry_wait: float = 60.0) -> Client:
    http = httpx.Client(
        transport=front,
        base_url=demo.url,
        headers={"Authorization": f"Bearer {demo.started['api_key']}"},
    )
    return Client(
        demo.url, "unused", http_client=http, sleep=waits.append, max_retry_wait=max_retry_wait
    )


def test_a_retry_after_of_a_day_is_raised_not_slept(demo: Served) -> None:
    front, waits = Front(maintenance("86400")), []
    with client(demo, front, waits) as c, pytest.raises(StorageUnavailable):
        c.send({"to": "+905551000101", "body": "x"})

    assert waits == []  # not one second of the day
    assert front.seen == ["POST"]  # raised at once, not asked again


def test_a_retry_after_within_max_retry_wait_is_slept_then_retried(demo: Served) -> None:
    front, waits = Front(maintenance("5")), []
    with client(demo, front, waits) as c:
        sent = c.send({"to": "+905551000102", "body": "x"})

    assert sent.status == "sent"
    assert waits == [5.0]
    assert front.seen == ["POST", "POST"]


def test_max_retry_wait_is_the_clients_own(demo: Served) -> None:
    front, waits = Front(maintenance("5")), []
    with client(demo, front, waits, max_retry_wait=2.0) as c, pytest.raises(StorageUnavailable):
        c.health()

    assert waits == []


def test_a_retried_delete_that_meets_404_has_removed_it(demo: Served) -> None:
    front, waits = Front(), []
    with client(demo, front, waits) as c:
        c.suppressions.add("sms", "+905551000103")
        front.tricks.append(answer_lost)
        removed = c.suppressions.remove("sms", "+905551000103")
        left = list(c.suppressions.list(recipient="+905551000103"))

    assert removed is None  # removed by the try whose answer was lost
    assert left == []
    assert front.seen == ["POST", "DELETE", "DELETE", "GET"]


async def test_the_async_client_caps_its_waits_too(demo: Served) -> None:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    class AsyncFront(httpx.AsyncBaseTransport):
        def __init__(self) -> None:
            self.real = httpx.AsyncHTTPTransport()
            self.first = True

        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            if self.first:
                self.first = False
                return httpx.Response(503, headers={"Retry-After": "86400"})
            return await self.real.handle_async_request(request)

        async def aclose(self) -> None:
            await self.real.aclose()

    http = httpx.AsyncClient(transport=AsyncFront(), base_url=demo.url)
    async with AsyncClient(demo.url, "unused", http_client=http, sleep=sleep) as c:
        with pytest.raises(StorageUnavailable):
            await c.health()
        health = await c.health()  # the next call goes through

    assert waits == []
    assert health.status == "ok"


def test_max_retry_wait_must_be_a_number_of_seconds() -> None:
    with pytest.raises(ValueError, match="max_retry_wait"):
        Client("http://127.0.0.1:9", "k", max_retry_wait=-1)
    with pytest.raises(ValueError, match="max_retry_wait"):
        Client("http://127.0.0.1:9", "k", max_retry_wait=float("nan"))
