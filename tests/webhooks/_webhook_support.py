"""Helpers for the webhook tests: a scripted loopback receiver and a message record to announce.

The receiver is a real Starlette app under uvicorn on 127.0.0.1 (``fakes._server.serve``); it
records every request and answers from a script, then 200 once the script runs out.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from fakes._server import serve
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from unified_messaging._domain import MessageRecord
from unified_messaging.webhooks._sender import TargetPolicy

__all__ = ["LOOPBACK", "Answer", "Received", "Receiver", "message_record", "running_receiver"]

#: Tests run their receivers on 127.0.0.1, which production refuses.
LOOPBACK = TargetPolicy(allow_private=True)


@dataclass(frozen=True)
class Answer:
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""
    #: Answer only once this is set (a receiver that hangs until the test lets it go).
    release: asyncio.Event | None = None


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    base_url: str = ""
    received: list[Received] = field(default_factory=list)
    script: list[Answer] = field(default_factory=list)
    #: Set at each request's arrival (a test clears it to wait for the next one).
    arrived: asyncio.Event = field(default_factory=asyncio.Event)
    #: Requests to these paths are answered only once the event is set (see :meth:`hold`).
    holds: dict[str, asyncio.Event] = field(default_factory=dict)
    #: Set at the first request to each path (see :meth:`seen`).
    sightings: dict[str, asyncio.Event] = field(default_factory=dict)

    def url(self, path: str = "/hook") -> str:
        return self.base_url + path

    def answer(self, *answers: Answer) -> None:
        """Answer the next requests with these, in order; 200 after them."""
        self.script.extend(answers)

    def hold(self, path: str, release: asyncio.Event) -> None:
        """Requests to ``path`` hang until ``release`` is set (a receiver that never answers)."""
        self.holds[path] = release

    def seen(self, path: str) -> asyncio.Event:
        """Set once a request to ``path`` has arrived."""
        return self.sightings.setdefault(path, asyncio.Event())

    async def _handle(self, request: Request) -> Response:
        self.received.append(
            Received(request.url.path, dict(request.headers), await request.body())
        )
        answer = self.script.pop(0) if self.script else Answer()
        self.arrived.set()
        self.seen(request.url.path).set()
        if answer.release is not None:
            await answer.release.wait()
        held = self.holds.get(request.url.path)
        if held is not None:
            await held.wait()
        return Response(answer.body, status_code=answer.status, headers=dict(answer.headers))


@contextlib.asynccontextmanager
async def running_receiver() -> AsyncIterator[Receiver]:
    receiver = Receiver()
    app = Starlette(routes=[Route("/{path:path}", receiver._handle, methods=["POST"])])
    async with serve(app) as base_url:
        receiver.base_url = base_url
        yield receiver


def message_record(workspace_id: str, *, livemode: bool = False) -> MessageRecord:
    """A delivered SMS, as the lifecycle would store it."""
    at = datetime(2026, 1, 1, tzinfo=UTC)
    return MessageRecord(
        job_id="job_01TESTWEBHOOK",
        workspace_id=workspace_id,
        livemode=livemode,
        status="delivered",
        to="+905551112233",
        channel="sms",
        provider="sms_a",
        created_at=at,
        updated_at=at,
        text="Your code is 123456",
        sender="ACME",
        sent_at=at,
        final_at=at,
    )
