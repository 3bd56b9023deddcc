"""Helpers for the lifecycle-over-HTTP tests: real uvicorn servers, a webhook receiver, polling.

Everything here talks over loopback sockets. The REST app runs under uvicorn (with or without
its lifespan, so with or without the worker); the webhook receiver is a second uvicorn app
that records every request and answers from a script.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import httpx
import standardwebhooks
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from unified_messaging import ALL_PROVIDERS, ManualClock, Messenger
from unified_messaging._domain import Connection
from unified_messaging.asgi import create_app
from unified_messaging.providers.simulator import SimulatorSettings
from unified_messaging.webhooks import verify
from unified_messaging.webhooks._sender import TargetPolicy

__all__ = [
    "DLR_TIMEOUT",
    "FINAL",
    "LOOPBACK",
    "SENDER",
    "Delivery",
    "Loop",
    "QuickWorkerMessenger",
    "Receiver",
    "Servers",
    "bearer",
    "check_signed",
    "dlr_path",
    "eventually",
    "live_kannel_bed",
    "magic",
    "pmid",
    "running_loop",
    "running_servers",
    "serving",
    "sim_report",
    "start_receiver",
]

#: Tests run their webhook receivers on 127.0.0.1, which production refuses.
LOOPBACK = TargetPolicy(allow_private=True)
#: The statuses a message ends in (D10).
FINAL = frozenset({"delivered", "expired", "rejected", "failed", "unknown"})
#: Real time a test waits for the server's worker before it gives up.
DEADLINE_SECONDS = 10.0

T = TypeVar("T")


def magic(suffix: str) -> str:
    """The simulator's magic recipient ``+90 555 000 00 XX`` (DESIGN.md §6)."""
    return f"+9055500000{suffix}"


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def dlr_path(connection: Connection, token: str | None = None) -> str:
    """The delivery-report URL path of ``connection`` (with another token if given)."""
    return f"/v1/dlr/{connection.id}/{connection.dlr_token if token is None else token}"


def sim_report(provider_message_id: str, status: str, **extra: object) -> bytes:
    """One report in the simulator's push format."""
    return json.dumps(
        {"provider_message_id": provider_message_id, "status": status, **extra}
    ).encode()


class QuickWorkerMessenger(Messenger):
    """A messenger whose background worker polls the store every 20 ms instead of 500 ms.

    The app's lifespan starts ``run_worker(stop)``; this only shortens the worker's idle wait
    so a test that moves a ManualClock sees the worker act within milliseconds.
    """

    async def run_worker(self, stop: asyncio.Event | None = None, **options: Any) -> None:
        options.setdefault("idle_interval", 0.02)
        await super().run_worker(stop, **options)


class _Server(uvicorn.Server):
    """uvicorn's server, told to stop by an event rather than by its 0.1 s polling loop."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.stopping = asyncio.Event()

    async def main_loop(self) -> None:
        await self.stopping.wait()


class Servers:
    """Apps served by uvicorn on loopback ports, stopped together: each stop costs uvicorn a
    fixed 0.1 s, so stopping them one after another would add up."""

    def __init__(self) -> None:
        self._running: list[tuple[_Server, asyncio.Task[None]]] = []

    async def start(self, app: Any, *, lifespan: bool = False) -> str:
        """Serve ``app`` (with its lifespan if asked) on a free port; its base URL."""
        config = uvicorn.Config(
            app,
            host="127.0.0.1",
            port=0,
            lifespan="on" if lifespan else "off",
            ws="none",
            log_config=None,
            access_log=False,
        )
        server = _Server(config)
        task = asyncio.create_task(server.serve())
        self._running.append((server, task))
        while not server.started:
            if task.done():
                task.result()  # startup failed: raise why
            await asyncio.sleep(0.005)
        port = server.servers[0].sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def stop(self) -> None:
        for server, _ in self._running:
            server.should_exit = True
            server.stopping.set()
        await asyncio.gather(*(task for _, task in self._running))
        self._running.clear()


@contextlib.asynccontextmanager
async def running_servers() -> AsyncIterator[Servers]:
    servers = Servers()
    try:
        yield servers
    finally:
        await servers.stop()


@contextlib.asynccontextmanager
async def live_kannel_bed(
    messenger: Messenger, kannel: Any, *, username: str, password: str
) -> AsyncIterator[tuple[httpx.AsyncClient, str]]:
    """A workspace whose live ``sms_e`` connection sends to the Kannel stand-in ``kannel``
    (an ASGI app) with its ``dlr_url`` at the REST app, both served on loopback: a client of
    the REST app and a live key. The app runs with its lifespan and without its worker."""
    async with running_servers() as servers:
        kannel_url = await servers.start(kannel)
        app_url = await servers.start(create_app(messenger, worker=False, mcp=False), lifespan=True)
        workspace = await messenger.workspaces.create("Acme")
        await messenger.connections.add(
            workspace.id, "sms_e", default_sender="ACME", base_url=kannel_url,
            credentials={"username": username, "password": password, "dlr_url": app_url},
        )  # fmt: skip
        key = await messenger.keys.create(workspace.id, livemode=True)
        async with httpx.AsyncClient(base_url=app_url, timeout=60) as http:
            yield http, key.secret


@contextlib.asynccontextmanager
async def serving(app: Any, *, lifespan: bool) -> AsyncIterator[str]:
    """Run ``app`` under uvicorn on a free loopback port; yields the base URL while it runs."""
    async with running_servers() as servers:
        yield await servers.start(app, lifespan=lifespan)


async def eventually(
    probe: Callable[[], Awaitable[T]],
    done: Callable[[T], bool],
    *,
    tick: Callable[[], object] | None = None,
    interval: float = 0.01,
    within: float = DEADLINE_SECONDS,
) -> T:
    """Call ``probe`` until ``done`` holds for its result (``tick`` between calls, e.g. to move
    the clock), or fail with the last result after ``within`` seconds of real time."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        value = await probe()
        if done(value):
            return value
        if loop.time() > deadline:
            raise AssertionError(f"not reached within {within} s; last seen: {value!r}")
        if tick is not None:
            tick()
        await asyncio.sleep(interval)


# --------------------------------------------------------------------------- webhook receiver


@dataclass(frozen=True)
class Delivery:
    """One webhook request the receiver got, and what it answered."""

    headers: dict[str, str]
    body: bytes
    answered: int

    @property
    def event(self) -> dict[str, Any]:
        document: dict[str, Any] = json.loads(self.body)
        return document

    @property
    def type(self) -> str:
        return str(self.event["type"])

    @property
    def job_id(self) -> str:
        return str(self.event["data"]["job_id"])

    @property
    def webhook_id(self) -> str:
        return self.headers["webhook-id"]


@dataclass
class Receiver:
    """A loopback webhook receiver: records every POST, answers 200 unless told otherwise.

    ``fail_once`` holds ``(job_id, event type)`` pairs whose first delivery is answered 500.
    """

    base_url: str = ""
    deliveries: list[Delivery] = field(default_factory=list)
    fail_once: set[tuple[str, str]] = field(default_factory=set)

    @property
    def url(self) -> str:
        return self.base_url + "/hook"

    def for_job(self, job_id: str) -> list[Delivery]:
        return [d for d in self.deliveries if d.job_id == job_id]

    def accepted_types(self, job_id: str) -> list[str]:
        """The event types of ``job_id`` the receiver answered 2xx, in arrival order."""
        return [d.type for d in self.for_job(job_id) if d.answered < 300]

    async def _handle(self, request: Request) -> Response:
        body = await request.body()
        headers = {k.lower(): v for k, v in request.headers.items()}
        status = 200
        try:
            event = json.loads(body)
            key = (str(event["data"]["job_id"]), str(event["type"]))
        except (ValueError, KeyError, TypeError):
            key = ("", "")
        if key in self.fail_once:
            self.fail_once.discard(key)
            status = 500
        self.deliveries.append(Delivery(headers, body, status))
        return Response(b"", status_code=status)


async def start_receiver(servers: Servers) -> Receiver:
    receiver = Receiver()
    app = Starlette(routes=[Route("/hook", receiver._handle, methods=["POST"])])
    receiver.base_url = await servers.start(app)
    return receiver


# --------------------------------------------------------------------------- small readers


def attempts_of(record: Mapping[str, Any]) -> list[tuple[str, str, str | None, str | None]]:
    """``(provider, status, provider_message_id, error code)`` of each attempt of a record."""
    return [
        (
            a["provider"],
            a["status"],
            a["provider_message_id"],
            a["error"]["code"] if a["error"] else None,
        )
        for a in record["attempts"]
    ]


def error_code(response: httpx.Response) -> str:
    return str(response.json()["error"]["code"])


def one_second_steps(count: int) -> Sequence[timedelta]:
    return tuple(timedelta(seconds=1) for _ in range(count))


# --------------------------------------------------------------------------- the full loop

SENDER = "UMTEST"
#: Ten ticks of the clock: far enough after a report (due after 1 s) that the worker, which
#: looks every 20 ms while the clock moves a second every 50 ms, never sees both due at once.
DLR_TIMEOUT = timedelta(seconds=10)
#: Real time between two one-second steps of the clock while a test waits for the worker.
TICK_INTERVAL = 0.05


@dataclass
class Loop:
    clock: ManualClock
    http: httpx.AsyncClient
    receiver: Receiver
    secret: str

    async def send(self, payload: dict[str, object]) -> httpx.Response:
        return await self.http.post("/v1/messages", json=payload)

    async def get(self, job_id: str) -> dict[str, Any]:
        response = await self.http.get(f"/v1/messages/{job_id}")
        assert response.status_code == 200, response.text
        document: dict[str, Any] = response.json()
        return document

    async def final(self, job_id: str) -> dict[str, Any]:
        """The record once it is final, moving the clock a second at a time meanwhile."""
        return await eventually(
            lambda: self.get(job_id),
            lambda record: record["status"] in FINAL,
            tick=lambda: self.clock.advance(1),
            interval=TICK_INTERVAL,
        )

    async def events(self, job_id: str, expected: Counter[str]) -> list[Delivery]:
        """The 2xx-answered deliveries of ``job_id`` once they are exactly ``expected``."""

        async def accepted() -> Counter[str]:
            return Counter(self.receiver.accepted_types(job_id))

        await eventually(
            accepted,
            lambda got: got == expected,
            tick=lambda: self.clock.advance(1),
            interval=TICK_INTERVAL,
        )
        return self.receiver.for_job(job_id)


@contextlib.asynccontextmanager
async def running_loop() -> AsyncIterator[Loop]:
    """A test-mode workspace on all providers (10 s DLR time-outs, reports after 1 s), a
    webhook receiver subscribed to every event, and the app with its worker on a socket."""
    clock = ManualClock(datetime.now(UTC).replace(microsecond=0))
    messenger = QuickWorkerMessenger(
        clock=clock,
        simulator_settings=SimulatorSettings(report_delay=timedelta(seconds=1)),
        webhook_policy=LOOPBACK,
        webhook_schedule=one_second_steps(3),
    )
    await messenger.open()
    workspace = await messenger.workspaces.create("end to end")
    for code in ALL_PROVIDERS:
        await messenger.connections.add(
            workspace.id,
            code,
            default_sender=SENDER,
            approved_senders=(SENDER,),
            dlr_timeout=DLR_TIMEOUT,
        )
    key = (await messenger.keys.create(workspace.id, livemode=False)).secret
    async with running_servers() as servers:
        receiver = await start_receiver(servers)
        created = await messenger.webhooks.create(workspace.id, receiver.url)
        # The app's lifespan opens the messenger again, runs the worker, and closes it.
        base_url = await servers.start(create_app(messenger), lifespan=True)
        async with httpx.AsyncClient(base_url=base_url, headers=bearer(key)) as http:
            yield Loop(clock, http, receiver, created.secret)


def check_signed(loop: Loop, deliveries: list[Delivery]) -> None:
    """Every delivery verifies with our helper and with standardwebhooks, in test mode."""
    independent = standardwebhooks.Webhook(loop.secret)
    for delivery in deliveries:
        event = verify(delivery.body, delivery.headers, loop.secret)
        assert independent.verify(delivery.body, delivery.headers) == event
        assert event["data"]["livemode"] is False  # type: ignore[index]


def pmid(code: str, job_id: str, attempt: int) -> str:
    return f"sim-{code}-{job_id}-{attempt}"
