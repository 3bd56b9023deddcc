"""Outbound webhook delivery (D19): the answers a receiver can give, the retry schedule, and
the SSRF guard, over real loopback HTTP (a Starlette receiver under uvicorn, in-process)."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpcore
import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from unified_messaging import ManualClock, RequestInvalid
from unified_messaging.webhooks import generate_secret, verify
from unified_messaging.webhooks._schedule import (
    DEFAULT_SCHEDULE,
    next_attempt_at,
    retry_delay,
    should_disable,
)
from unified_messaging.webhooks._sender import (
    EXCERPT_BYTES,
    USER_AGENT,
    DeliveryResult,
    GuardedNetworkBackend,
    TargetPolicy,
    TargetRefused,
    WebhookSender,
    address_problem,
    guarded_client,
    validate_endpoint_url,
)

ROOT = Path(__file__).resolve().parent.parent
LOOPBACK = TargetPolicy(allow_private=True)
BODY = b'{"type":"message.delivered","timestamp":"2026-01-01T00:00:00Z","data":{}}'
HEADERS = {"webhook-id": "evt_1", "webhook-timestamp": "1767225600", "webhook-signature": "v1,x"}
NOW = datetime(2026, 1, 1, tzinfo=UTC)


# --------------------------------------------------------------------------- the receiver


@dataclass
class Receiver:
    """A loopback receiver whose paths answer the ways a real endpoint can."""

    port: int = 0
    received: list[tuple[str, dict[str, str], bytes]] = field(default_factory=list)
    release: asyncio.Event = field(default_factory=asyncio.Event)
    client_ports: set[int] = field(default_factory=set)
    in_flight: int = 0
    most_in_flight: int = 0

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    def paths(self) -> list[str]:
        return [path for path, _, _ in self.received]

    async def handle(self, request: Request) -> Response:
        path = request.url.path
        self.received.append((path, dict(request.headers), await request.body()))
        assert request.client is not None
        self.client_ports.add(request.client.port)
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            if path == "/slow":
                await self.release.wait()  # set at teardown: holds the answer past any time-out
            if path == "/held":
                await asyncio.sleep(0.05)  # long enough for every sender to be waiting
        finally:
            self.in_flight -= 1
        return ANSWERS.get(path, Response(status_code=404))


ANSWERS: dict[str, Response] = {
    "/ok": Response("thanks", status_code=200),
    "/no-content": Response(status_code=204),
    "/moved": Response(status_code=301, headers={"location": "/ok"}),
    "/gone": Response("endpoint deleted", status_code=410),
    "/throttled": Response("slow down", status_code=429, headers={"retry-after": "120"}),
    "/bad-gateway": Response(
        status_code=502, headers={"retry-after": "Thu, 01 Jan 2026 00:02:00 GMT"}
    ),
    "/broken": Response("boom\n\x00" + "x" * 100_000, status_code=500),
    "/not-found": Response(status_code=404),
    "/slow": Response(status_code=200),
    "/held": Response(status_code=204),
    "/long": Response("y" * 20_000, status_code=200),
}


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    state = Receiver()
    app = Starlette(routes=[Route("/{path:path}", state.handle, methods=["POST"])])
    listener = socket.create_server(("127.0.0.1", 0))
    state.port = listener.getsockname()[1]
    config = uvicorn.Config(app, lifespan="off", log_config=None, access_log=False, ws="none")
    server = uvicorn.Server(config)
    serving = asyncio.create_task(server.serve(sockets=[listener]))
    yield state
    state.release.set()
    server.should_exit = True
    await serving
    listener.close()


@pytest.fixture
async def sender() -> AsyncIterator[WebhookSender]:
    async with WebhookSender(policy=LOOPBACK) as webhook_sender:
        yield webhook_sender


def free_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        return int(probe.getsockname()[1])


# --------------------------------------------------------------------------- answers


async def test_200_is_success(sender: WebhookSender, receiver: Receiver) -> None:
    result = await sender.deliver(receiver.url("/ok"), BODY, HEADERS)

    assert result == DeliveryResult("success", status_code=200, answer="thanks")
    assert result.ok


async def test_the_body_and_headers_arrive_exactly(
    sender: WebhookSender, receiver: Receiver
) -> None:
    await sender.deliver(receiver.url("/ok"), BODY, HEADERS)

    [(_, headers, body)] = receiver.received
    assert body == BODY
    assert {name: headers[name] for name in HEADERS} == HEADERS
    assert headers["content-type"] == "application/json"
    assert headers["user-agent"] == USER_AGENT
    assert USER_AGENT.startswith("unified-messaging/")


async def test_204_is_success(sender: WebhookSender, receiver: Receiver) -> None:
    result = await sender.deliver(receiver.url("/no-content"), BODY, HEADERS)

    assert result == DeliveryResult("success", status_code=204)


async def test_a_redirect_is_a_failure_and_is_not_followed(
    sender: WebhookSender, receiver: Receiver
) -> None:
    result = await sender.deliver(receiver.url("/moved"), BODY, HEADERS)

    assert (result.outcome, result.status_code) == ("retry", 301)
    assert result.error == "HTTP 301: redirect not followed (to /ok)"
    assert receiver.paths() == ["/moved"]


async def test_redirects_are_not_followed_even_by_an_injected_client_that_would(
    receiver: Receiver,
) -> None:
    client = httpx.AsyncClient(follow_redirects=True)
    async with client, WebhookSender(client, policy=LOOPBACK) as webhook_sender:
        result = await webhook_sender.deliver(receiver.url("/moved"), BODY, HEADERS)

    assert result.status_code == 301
    assert receiver.paths() == ["/moved"]


async def test_an_injected_mock_transport_judges_its_answer() -> None:
    # MockTransport's answers are read already: reading them again raised StreamConsumed.
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(429, text="slow down", headers={"retry-after": "120"})

    client = httpx.AsyncClient(transport=httpx.MockTransport(answer))
    async with client, WebhookSender(client) as webhook_sender:
        result = await webhook_sender.deliver("https://hooks.example/in", BODY, HEADERS)

    assert (result.outcome, result.status_code, result.retry_after) == ("retry", 429, 120.0)
    assert result.error is not None
    assert "slow down" in result.error


async def test_410_gone_disables_the_endpoint(sender: WebhookSender, receiver: Receiver) -> None:
    result = await sender.deliver(receiver.url("/gone"), BODY, HEADERS)

    assert result == DeliveryResult(
        "disable", status_code=410, error="HTTP 410: endpoint deleted", answer="endpoint deleted"
    )


async def test_429_is_retried_with_its_retry_after(
    sender: WebhookSender, receiver: Receiver
) -> None:
    result = await sender.deliver(receiver.url("/throttled"), BODY, HEADERS)

    assert (result.outcome, result.status_code, result.retry_after) == ("retry", 429, 120.0)
    assert next_attempt_at(1, now=NOW, retry_after=result.retry_after) == NOW + timedelta(
        seconds=120
    )


async def test_502_retry_after_as_an_http_date_is_read_against_the_clock(
    receiver: Receiver,
) -> None:
    clock = ManualClock(NOW)
    async with WebhookSender(policy=LOOPBACK, clock=clock) as webhook_sender:
        result = await webhook_sender.deliver(receiver.url("/bad-gateway"), BODY, HEADERS)

    assert (result.outcome, result.status_code, result.retry_after) == ("retry", 502, 120.0)


async def test_500_is_retried_with_a_short_excerpt_of_the_answer(
    sender: WebhookSender, receiver: Receiver
) -> None:
    result = await sender.deliver(receiver.url("/broken"), BODY, HEADERS)

    assert (result.outcome, result.status_code, result.retry_after) == ("retry", 500, None)
    assert result.error is not None
    assert result.error.startswith("HTTP 500: boom x")
    assert "\x00" not in result.error
    assert len(result.error) <= len("HTTP 500: ") + EXCERPT_BYTES


async def test_other_4xx_are_retried(sender: WebhookSender, receiver: Receiver) -> None:
    result = await sender.deliver(receiver.url("/not-found"), BODY, HEADERS)

    assert result == DeliveryResult("retry", status_code=404, error="HTTP 404")


async def test_an_answer_slower_than_the_time_out_is_a_retry(receiver: Receiver) -> None:
    async with WebhookSender(policy=LOOPBACK, timeout=0.2) as webhook_sender:
        result = await webhook_sender.deliver(receiver.url("/slow"), BODY, HEADERS)

    assert result == DeliveryResult("retry", error="timed out after 0.2 s")
    assert receiver.paths() == ["/slow"]


async def test_connection_refused_is_a_retry(sender: WebhookSender) -> None:
    result = await sender.deliver(f"http://127.0.0.1:{free_port()}/", BODY, HEADERS)

    assert (result.outcome, result.status_code) == ("retry", None)
    assert result.error is not None
    assert result.error.startswith("ConnectError")


@pytest.mark.parametrize("path", ["/ok", "/no-content", "/long", "/broken", "/gone"])
async def test_one_keep_alive_connection_serves_delivery_after_delivery(
    sender: WebhookSender, receiver: Receiver, path: str
) -> None:
    # The answer's body is read to its end, so the connection is reused (an unread body
    # would force a new TCP connection, and its handshake, for every delivery). Of an error
    # page only the excerpt is kept, but the rest is read too, up to DRAIN_BYTES.
    results = [await sender.deliver(receiver.url(path), BODY, HEADERS) for _ in range(5)]
    assert len({r.outcome for r in results}) == 1
    # Past DRAIN_BYTES (the 100 kB page) an answer is abandoned with its connection.
    assert len(receiver.client_ports) == (5 if path == "/broken" else 1)


async def test_an_endpoint_gets_at_most_per_endpoint_requests_at_once(receiver: Receiver) -> None:
    async with WebhookSender(policy=LOOPBACK, per_endpoint=3) as bounded:
        results = await asyncio.gather(
            *(bounded.deliver(receiver.url("/held"), BODY, HEADERS) for _ in range(12))
        )
    assert all(r.ok for r in results)
    assert receiver.most_in_flight == 3
    assert len(receiver.client_ports) == 3  # and each of the three connections was reused


def test_per_endpoint_must_be_positive() -> None:
    with pytest.raises(ValueError, match="per_endpoint"):
        WebhookSender(policy=LOOPBACK, per_endpoint=0)


async def test_deliver_signed_signs_each_attempt_under_one_webhook_id(
    receiver: Receiver,
) -> None:
    secret = generate_secret()
    clock = ManualClock(datetime.now(UTC))
    async with WebhookSender(policy=LOOPBACK, clock=clock) as webhook_sender:
        await webhook_sender.deliver_signed(
            receiver.url("/ok"), BODY, secrets=[secret], msg_id="evt_A"
        )
        clock.advance(timedelta(minutes=5))
        await webhook_sender.deliver_signed(
            receiver.url("/ok"), BODY, secrets=[secret], msg_id="evt_A"
        )

    (_, first, body), (_, second, _) = receiver.received
    assert first["webhook-id"] == second["webhook-id"] == "evt_A"
    assert int(second["webhook-timestamp"]) - int(first["webhook-timestamp"]) == 300
    assert verify(body, first, secret, now=clock.now() - timedelta(minutes=5)) == {
        "type": "message.delivered",
        "timestamp": "2026-01-01T00:00:00Z",
        "data": {},
    }
    assert verify(body, second, secret, now=clock.now())


# --------------------------------------------------------------------------- SSRF: URLs


def refusing_client() -> httpx.AsyncClient:
    """A client that fails the test if a request ever reaches the transport."""

    def no_io(request: httpx.Request) -> httpx.Response:
        raise AssertionError(f"a request to {request.url} left the sender")

    return httpx.AsyncClient(transport=httpx.MockTransport(no_io))


@pytest.mark.parametrize(
    "url",
    [
        "http://localhost/hook",
        "http://LOCALHOST./hook",
        "http://api.localhost/hook",
        "http://[::1]/hook",
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.1/hook",
        "http://172.16.5.4/hook",
        "http://192.168.1.1/hook",
        "http://100.64.0.1/hook",
        "http://[fc00::1]/hook",
        "http://[fe80::1]/hook",
        "http://[::ffff:127.0.0.1]/hook",
        "http://[::ffff:169.254.169.254]/hook",
        "http://0.0.0.0/hook",
        "http://127.1/hook",
        "http://2130706433/hook",
        "http://0x7f.0.0.1/hook",
        "http://224.0.0.1/hook",
    ],
)
async def test_private_targets_are_refused_before_any_io(url: str) -> None:
    async with refusing_client() as client, WebhookSender(client) as webhook_sender:
        result = await webhook_sender.deliver(url, BODY, HEADERS)

    assert result.error is not None
    assert result.error.startswith("refused: URL points to")
    if url in ("http://0.0.0.0/hook", "http://224.0.0.1/hook"):
        assert result.outcome == "disable"  # no process may send there: the URL is wrong
    else:
        # Private: another process, with private targets allowed, may send there.
        assert result.outcome == "refused"
        assert "UM_WEBHOOK_ALLOW_PRIVATE=1" in result.error


async def test_a_loopback_receiver_that_would_answer_is_refused_by_default(
    receiver: Receiver,
) -> None:
    async with WebhookSender() as webhook_sender:
        result = await webhook_sender.deliver(receiver.url("/ok"), BODY, HEADERS)

    assert result == DeliveryResult(
        "refused",
        error="refused: URL points to a loopback address (this process does not allow"
        " private targets: UM_WEBHOOK_ALLOW_PRIVATE=1)",
    )
    assert receiver.received == []


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("ftp://example.com/hook", "must use http or https"),
        ("file:///etc/passwd", "must use http or https"),
        ("gopher://example.com/", "must use http or https"),
        ("http://user:pass@example.com/hook", "must not contain credentials"),
        ("http://user@example.com/hook", "must not contain credentials"),
        ("http://@example.com/hook", "must not contain credentials"),
        ("http:///hook", "must name a host"),
        ("not a url", "must use http or https"),
        ("", "must be a URL"),
        ("https://example.com/" + "a" * 2100, "must be at most 2048 characters"),
    ],
)
async def test_bad_urls_are_refused_before_any_io(url: str, problem: str) -> None:
    async with refusing_client() as client, WebhookSender(client) as webhook_sender:
        result = await webhook_sender.deliver(url, BODY, HEADERS)

    assert result == DeliveryResult("disable", error=f"refused: URL {problem}")


def test_validate_endpoint_url_raises_request_invalid_naming_the_url_field() -> None:
    with pytest.raises(RequestInvalid) as caught:
        validate_endpoint_url("http://169.254.169.254/")

    assert caught.value.code == "VALIDATION_ERROR"
    assert [(d.field, d.message) for d in caught.value.details] == [
        ("url", "points to a link-local address")
    ]


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/hooks",
        "http://hooks.example.org:8080/in?x=1",
        "https://[2606:4700::1]/",
    ],
)
def test_validate_endpoint_url_accepts_public_targets(url: str) -> None:
    assert validate_endpoint_url(url) == url


def test_validate_endpoint_url_allows_private_targets_when_the_operator_does() -> None:
    assert validate_endpoint_url("http://localhost:8000/", allow_private=True)
    assert validate_endpoint_url("http://10.1.2.3/", allowed_networks=["10.0.0.0/8"])
    with pytest.raises(RequestInvalid):
        validate_endpoint_url("http://10.1.2.3/", allowed_networks=["192.168.0.0/16"])


# --------------------------------------------------------------------------- SSRF: connect time


class SpyBackend(httpcore.AsyncNetworkBackend):
    """Records every address dialled; dials only loopback, so no test traffic leaves."""

    def __init__(self) -> None:
        self.dialled: list[str] = []
        self._real = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's interface
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        self.dialled.append(host)
        if not ipaddress.ip_address(host).is_loopback:
            raise AssertionError(f"the test dialled {host}")
        return await self._real.connect_tcp(host, port, timeout=timeout)


class FakeDns:
    def __init__(self, answers: Mapping[str, Sequence[str]]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    async def __call__(self, host: str, port: int) -> Sequence[str]:
        self.asked.append(host)
        if host in self.answers:
            return self.answers[host]
        ipaddress.ip_address(host)  # literals resolve to themselves, names fail
        return [host]


async def test_a_name_resolving_to_loopback_is_refused_at_connect_time(
    receiver: Receiver,
) -> None:
    spy, dns = SpyBackend(), FakeDns({"hooks.example.test": ["127.0.0.1"]})
    client = guarded_client(resolver=dns, network_backend=spy)
    async with WebhookSender(client) as webhook_sender, client:
        result = await webhook_sender.deliver(
            receiver.url("/ok", host="hooks.example.test"), BODY, HEADERS
        )

    assert result == DeliveryResult(
        "refused",
        error="refused: hooks.example.test resolves to 127.0.0.1, a loopback address"
        " (this process does not allow private targets: UM_WEBHOOK_ALLOW_PRIVATE=1)",
    )
    assert spy.dialled == []
    assert receiver.received == []


async def test_the_system_resolver_path_refuses_localhost_without_dialling(
    receiver: Receiver,
) -> None:
    spy = SpyBackend()
    async with guarded_client(network_backend=spy) as client:
        with pytest.raises(TargetRefused, match=r"localhost resolves to .*loopback"):
            await client.post(receiver.url("/ok", host="localhost"), content=BODY)

    assert spy.dialled == []
    assert receiver.received == []


@pytest.mark.parametrize("address", ["10.0.0.1", "169.254.169.254", "::ffff:10.0.0.1", "fd00::1"])
async def test_an_ip_literal_is_refused_at_connect_time_too(address: str) -> None:
    spy = SpyBackend()
    host = f"[{address}]" if ":" in address else address
    async with guarded_client(network_backend=spy) as client:
        with pytest.raises(TargetRefused):
            await client.post(f"http://{host}/hook", content=BODY)

    assert spy.dialled == []


async def test_a_name_with_one_private_answer_among_public_ones_is_refused() -> None:
    spy = SpyBackend()
    dns = FakeDns({"mixed.example.test": ["93.184.216.34", "10.0.0.1"]})
    async with guarded_client(resolver=dns, network_backend=spy) as client:
        with pytest.raises(TargetRefused, match=r"10\.0\.0\.1, a private address"):
            await client.post("http://mixed.example.test/hook", content=BODY)

    assert spy.dialled == []


async def test_the_checked_address_is_the_one_dialled(receiver: Receiver) -> None:
    # The name is resolved once, by the guard; the dialler only ever sees the checked IP, so
    # a DNS answer that changes between the check and the connection cannot be used.
    spy, dns = SpyBackend(), FakeDns({"hooks.example.test": ["127.0.0.1"]})
    policy = TargetPolicy(allowed_networks=["127.0.0.0/8"])
    client = guarded_client(policy, resolver=dns, network_backend=spy)
    async with WebhookSender(client, policy=policy) as webhook_sender, client:
        result = await webhook_sender.deliver(
            receiver.url("/ok", host="hooks.example.test"), BODY, HEADERS
        )

    assert result.ok
    assert dns.asked == ["hooks.example.test"]
    assert spy.dialled == ["127.0.0.1"]
    [(_, headers, _)] = receiver.received
    assert headers["host"] == f"hooks.example.test:{receiver.port}"


async def test_an_unresolvable_name_is_a_retry() -> None:
    dns = FakeDns({"void.example.test": []})
    client = guarded_client(resolver=dns, network_backend=SpyBackend())
    async with WebhookSender(client) as webhook_sender, client:
        result = await webhook_sender.deliver("http://void.example.test/", BODY, HEADERS)

    assert result == DeliveryResult(
        "retry", error="ConnectError: void.example.test has no addresses"
    )


async def test_a_resolver_failure_is_a_retry() -> None:
    async def broken(host: str, port: int) -> Sequence[str]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    client = guarded_client(resolver=broken, network_backend=SpyBackend())
    async with WebhookSender(client) as webhook_sender, client:
        result = await webhook_sender.deliver("http://nowhere.example.test/", BODY, HEADERS)

    assert result.outcome == "retry"
    assert result.error is not None
    assert result.error.startswith("ConnectError: cannot resolve nowhere.example.test")


async def test_the_guard_refuses_unix_sockets() -> None:
    backend = GuardedNetworkBackend(TargetPolicy())

    with pytest.raises(TargetRefused):
        await backend.connect_unix_socket("/var/run/docker.sock")


# --------------------------------------------------------------------------- address policy


@pytest.mark.parametrize(
    ("address", "problem"),
    [
        ("127.0.0.1", "loopback"),
        ("::1", "loopback"),
        ("10.1.2.3", "private"),
        ("172.31.255.255", "private"),
        ("192.168.0.1", "private"),
        ("169.254.169.254", "link-local"),
        ("fe80::1", "link-local"),
        ("100.64.0.1", "shared (CGNAT)"),
        ("100.127.255.254", "shared (CGNAT)"),
        ("fc00::1", "unique local"),
        ("fd12:3456::1", "unique local"),
        ("224.0.0.1", "multicast"),
        ("ff02::1", "multicast"),
        ("0.0.0.0", "unspecified"),  # noqa: S104 - an address under test, not a bind
        ("::", "unspecified"),
        ("255.255.255.255", "broadcast"),
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:10.0.0.1", "private"),
        ("::ffff:169.254.169.254", "link-local"),
        ("64:ff9b::a00:1", "private"),
        ("2002:a00:1::1", "private"),
        ("240.0.0.1", "private"),
        ("8.8.8.8", None),
        ("1.1.1.1", None),
        ("2606:4700:4700::1111", None),
        ("::ffff:8.8.8.8", None),
    ],
)
def test_address_problem_names_every_non_global_kind(address: str, problem: str | None) -> None:
    assert address_problem(ipaddress.ip_address(address)) == problem


def test_allow_private_admits_private_kinds_but_never_unspecified_or_multicast() -> None:
    for address in ["127.0.0.1", "10.0.0.1", "169.254.169.254", "100.64.0.1", "fc00::1"]:
        assert LOOPBACK.refusal(ipaddress.ip_address(address)) is None
    for address in ["0.0.0.0", "::", "224.0.0.1", "255.255.255.255"]:  # noqa: S104
        assert LOOPBACK.refusal(ipaddress.ip_address(address)) is not None


def test_an_allowlist_admits_only_its_networks_in_either_spelling() -> None:
    policy = TargetPolicy(allowed_networks=["127.0.0.0/8"])

    assert policy.refusal(ipaddress.ip_address("127.0.0.1")) is None
    assert policy.refusal(ipaddress.ip_address("::ffff:127.0.0.1")) is None
    assert policy.refusal(ipaddress.ip_address("::1")) == "loopback"
    assert policy.refusal(ipaddress.ip_address("10.0.0.1")) == "private"


# --------------------------------------------------------------------------- retry schedule


def test_the_default_schedule_is_the_designed_one() -> None:
    assert (
        timedelta(seconds=5),
        timedelta(minutes=5),
        timedelta(minutes=30),
        timedelta(hours=2),
        timedelta(hours=5),
        timedelta(hours=10),
        timedelta(hours=10),
    ) == DEFAULT_SCHEDULE


def test_each_failed_attempt_waits_its_step_then_gives_up() -> None:
    waits = [next_attempt_at(n, now=NOW) for n in range(1, 9)]

    assert waits[:7] == [NOW + step for step in DEFAULT_SCHEDULE]
    assert waits[7] is None


def test_a_compressed_schedule_is_used_as_given() -> None:
    schedule = [timedelta(milliseconds=1), timedelta(milliseconds=2)]

    assert retry_delay(1, schedule=schedule) == timedelta(milliseconds=1)
    assert retry_delay(2, schedule=schedule) == timedelta(milliseconds=2)
    assert retry_delay(3, schedule=schedule) is None


def test_retry_after_never_shortens_the_wait() -> None:
    assert retry_delay(2, retry_after=1) == timedelta(minutes=5)


def test_retry_after_lengthens_the_wait() -> None:
    assert retry_delay(1, retry_after=60) == timedelta(seconds=60)


def test_retry_after_is_capped_at_the_longest_step() -> None:
    assert retry_delay(1, retry_after=10**9) == timedelta(hours=10)


@pytest.mark.parametrize("nonsense", [float("nan"), float("inf"), -5.0, 0.0])
def test_nonsense_retry_after_is_ignored(nonsense: float) -> None:
    assert retry_delay(1, retry_after=nonsense) == timedelta(seconds=5)


def test_attempt_numbers_start_at_one() -> None:
    with pytest.raises(ValueError, match="start at 1"):
        retry_delay(0)


def test_five_days_of_failure_disables_the_endpoint() -> None:
    since = NOW - timedelta(days=5)

    assert should_disable(since, NOW)
    assert not should_disable(since + timedelta(seconds=1), NOW)
    assert not should_disable(None, NOW)
    assert should_disable(NOW - timedelta(hours=2), NOW, after=timedelta(hours=1))


# --------------------------------------------------------------------------- the example


def test_the_receiver_example_verifies_a_real_request_and_rejects_a_tampered_one() -> None:
    result = subprocess.run(  # noqa: S603 - our own interpreter and fixed arguments
        [sys.executable, str(ROOT / "examples" / "webhook_receiver.py")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
        check=False,
    )

    assert result.returncode == 0, result.stderr
    assert "verified message.delivered for msg_" in result.stdout
    assert "genuine: 204; tampered: 400 rejected: no_matching_signature" in result.stdout
