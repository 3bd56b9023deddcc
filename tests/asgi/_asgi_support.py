"""Helpers shared by the REST edge's tests (fixtures are in ``conftest.py``)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import httpx

from unified_messaging import ManualClock, Messenger, Workspace
from unified_messaging.providers import (
    InboundCallback,
    ProviderReport,
    SubmitOutcome,
    SubmitRequest,
)

NORMAL = "+905551234567"

#: ``await make_client(app, peer=(ip, port), headers=...)`` (the ``make_client`` fixture).
ClientFactory = Callable[..., Awaitable[httpx.AsyncClient]]


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def error_of(response: httpx.Response) -> dict[str, object]:
    """The D13 error object of a response, checked for its shape on the way."""
    body = response.json()
    assert set(body) == {"error"}
    error = body["error"]
    assert isinstance(error, dict)
    assert {"code", "message"} <= set(error)
    assert ("details" in error) == (response.status_code == 400)
    assert "x-request-id" in response.headers
    return error


def code_of(response: httpx.Response) -> object:
    return error_of(response)["code"]


@dataclass
class FakeLiveAdapter:
    """A live provider that accepts (or not), optionally waiting on a gate first."""

    answer: str = "accepted"
    gate: asyncio.Event | None = None
    submitted: list[SubmitRequest] = field(default_factory=list)
    entered: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def code(self) -> str:
        return "sms_a"

    @property
    def max_batch(self) -> int:
        return 1

    async def submit(self, request: SubmitRequest) -> SubmitOutcome:
        self.submitted.append(request)
        self.entered.set()
        if self.gate is not None:
            await self.gate.wait()
        if self.answer == "accepted":
            return SubmitOutcome.accepted(f"live-{request.job_id}")
        return SubmitOutcome.unavailable("down")

    async def submit_batch(self, requests: Sequence[SubmitRequest]) -> list[SubmitOutcome]:
        return [await self.submit(r) for r in requests]

    def parse_reports(self, callback: InboundCallback) -> list[ProviderReport]:
        return []

    async def poll_reports(self, provider_message_ids: Sequence[str]) -> list[ProviderReport]:
        return []

    async def aclose(self) -> None:
        return None


@dataclass
class LiveSetup:
    messenger: Messenger
    workspace: Workspace
    api_key: str
    adapter: FakeLiveAdapter
    clock: ManualClock
