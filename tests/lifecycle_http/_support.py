"""Helpers for the lifecycle-over-HTTP tests: real uvicorn servers, a webhook receiver, polling.

Everything here talks over loopback sockets. The REST app runs under uvicorn (with or without
its lifespan, so with or without the worker); the webhook receiver is a second uvicorn app
that records every request and answers from a script.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, TypeVar

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from unified_messaging import Messenger
from unified_messaging._domain import Connection
from unified_messaging._webhook_sender import TargetPolicy

__all__ = [
    "FINAL",
    "LOOPBACK",
    "Delivery",
    "QuickWorkerMessenger",
    "Receiver",
    "bearer",
    "dlr_path",
    "eventually",
    "magic",
    "running_receiver",
    "serving",
    "sim_report",
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


@contextlib.asynccontextmanager
async def serving(app: Any, *, lifespan: bool) -> AsyncIterator[str]:
    """Run ``app`` under uvicorn on a free loopback port; yields the base URL while it runs."""
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=0,
        lifespan="on" if lifespan else "off",
        ws="none",
        log_config=None,
        access_log=False,
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    try:
        while not server.started:
            if task.done():
                task.result()  # startup failed: raise why
            await asyncio.sleep(0.005)
        port = server.servers[0].sockets[0].getsockname()[1]
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task


async def eventually(
    probe: Callable[[], Awaitable[T]],
    done: Callable[[T], bool],
    *,
    tick: Callable[[], object] | None = None,
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
        await asyncio.sleep(0.01)


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


@contextlib.asynccontextmanager
async def running_receiver() -> AsyncIterator[Receiver]:
    receiver = Receiver()
    app = Starlette(routes=[Route("/hook", receiver._handle, methods=["POST"])])
    async with serving(app, lifespan=False) as base_url:
        receiver.base_url = base_url
        yield receiver


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
