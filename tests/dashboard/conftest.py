"""Fixtures of the dashboard's tests: a testbed's messenger on a ManualClock, its REST app with
the dashboard mounted, served on real loopback HTTP, and users to sign in with."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta

import httpx
import pytest
from _dash_support import PASSWORD, Console
from fakes._server import serve

from unified_messaging import ManualClock, Messenger
from unified_messaging.asgi import create_app
from unified_messaging.providers.simulator import SimulatorSettings
from unified_messaging.testing import Outbox, TestBed, create_testbed
from unified_messaging.users._store import User
from unified_messaging.webhooks._sender import TargetPolicy


@pytest.fixture
async def bed() -> AsyncIterator[TestBed]:
    # Webhook receivers in these tests listen on loopback, which D19 refuses unless allowed.
    outbox = Outbox()
    messenger = Messenger(clock=ManualClock(), on_simulated=outbox.record,
                          simulator_settings=SimulatorSettings(report_delay=timedelta(0)),
                          webhook_policy=TargetPolicy(allow_private=True))  # fmt: skip
    testbed = await create_testbed(messenger=messenger, outbox=outbox, recipient_limit=None)
    try:
        yield testbed
    finally:
        await testbed.messenger.aclose()


@pytest.fixture
def clock(bed: TestBed) -> ManualClock:
    assert isinstance(bed.clock, ManualClock)
    return bed.clock


@pytest.fixture
def messenger(bed: TestBed) -> Messenger:
    return bed.messenger


@pytest.fixture
async def url(messenger: Messenger) -> AsyncIterator[str]:
    """The REST app with the dashboard at /dashboard, on a free loopback port."""
    app = create_app(messenger, dashboard=True, mcp=False, worker=False)
    async with serve(app) as base:
        yield base


@pytest.fixture
async def operator(messenger: Messenger) -> User:
    return await messenger.users.create("ops@example.com", PASSWORD, operator=True)


@pytest.fixture
async def member(messenger: Messenger, bed: TestBed) -> User:
    return await messenger.users.create("ayse@example.com", PASSWORD, workspace_id=bed.workspace.id)


@pytest.fixture
async def browser(url: str) -> AsyncIterator[Console]:
    """A fresh browser: its own cookie jar."""
    async with httpx.AsyncClient(follow_redirects=False, timeout=10) as http:
        yield Console(http, url + "/dashboard")


@pytest.fixture
async def signed_in(browser: Console, operator: User) -> Console:
    answer = await browser.sign_in(operator.email)
    assert answer.status_code == 303, answer.text
    return browser


@pytest.fixture
async def messenger_workspace(
    bed: TestBed, signed_in: Console, messenger: Messenger
) -> tuple[TestBed, str]:
    """A workspace with no connection yet, picked in the signed-in operator's view."""
    workspace = await messenger.workspaces.create("Empty Ltd")
    answer = await signed_in.post("/view", {"workspace_id": workspace.id})
    assert answer.status_code == 303
    return bed, workspace.id
