"""A ready test-mode setup: one workspace, a test key, all seven providers on the simulator."""

from __future__ import annotations

import asyncio
import concurrent.futures
from dataclasses import dataclass
from datetime import timedelta

from .._access.flood_guard import DEFAULT_RECIPIENT_LIMIT, RecipientLimit
from .._clock import Clock, ManualClock
from .._domain import Workspace
from .._messenger import Messenger, Principal
from .._types import ALL_PROVIDERS, Channel, ProviderCode
from ..providers.simulator import SimulatorSettings
from ..suppressions._inbound import InboundRecord
from ._outbox import Outbox

__all__ = ["DEFAULT_TEST_SENDER", "TestBed", "build_testbed", "create_testbed"]

#: The message header every simulated SMS connection approves and uses by default.
DEFAULT_TEST_SENDER = "UMTEST"


@dataclass(frozen=True, slots=True)
class TestBed:
    """Everything a host application's test needs to send and to check what was sent."""

    __test__ = False  # not a pytest test class, despite the name

    messenger: Messenger
    workspace: Workspace
    #: A ``um_test_…`` key of the workspace, for calls that go through the REST/MCP edges.
    api_key: str
    principal: Principal
    outbox: Outbox
    clock: Clock

    async def settle(self, advance: timedelta = timedelta(0)) -> int:
        """Move a :class:`ManualClock` on by ``advance``, then run the background work that is
        due (delivery reports, DLR time-outs, fallback, webhooks) until none is left.

        Returns how many items ran. ``settle()`` with the default zero report delay makes
        every simulated report arrive; ``settle(timedelta(days=1))`` also runs out the DLR
        time-outs of the default connection settings.
        """
        if advance:
            if not isinstance(self.clock, ManualClock):
                raise TypeError("settle(advance=...) needs a testbed on a ManualClock")
            self.clock.advance(advance)
        return await self.messenger.worker().run_until_idle()

    async def simulate_inbound(
        self,
        sender: str,
        text: str,
        *,
        channel: Channel = "sms",
        provider: ProviderCode | None = None,
    ) -> InboundRecord:
        """A reply from ``sender`` (a number, or a chat id on ``chatbot``), as if the
        channel's provider pushed it: ``await um_testbed.test_helpers.inbound("+905551234567",
        "STOP")`` suppresses that number, as a real STOP does, and queues ``message.inbound``
        for the workspace's webhook endpoints (``settle()`` delivers it)."""
        request: dict[str, object] = {"from": sender, "text": text, "channel": channel}
        if provider is not None:
            request["provider"] = provider
        return await self.messenger.test_helpers.inbound(self.principal, request)


async def create_testbed(
    *,
    clock: Clock | None = None,
    outbox: Outbox | None = None,
    sender: str = DEFAULT_TEST_SENDER,
    report_delay: timedelta = timedelta(0),
    messenger: Messenger | None = None,
    recipient_limit: RecipientLimit | None = DEFAULT_RECIPIENT_LIMIT,
    name: str = "test workspace",
    key_name: str = "pytest",
) -> TestBed:
    """Build a :class:`TestBed`; with ``messenger`` given, set it up inside that one.
    ``name``: the workspace's name; ``key_name``: its test key's.

    ``recipient_limit``: the workspace's flood guard (D28), on with the default as in
    production, so a host application can test its handling of ``RECIPIENT_RATE_LIMITED``;
    ``None`` turns it off for tests that send many messages to one number.
    """
    outbox = outbox if outbox is not None else Outbox()
    if messenger is None:
        clock = clock or ManualClock()
        messenger = Messenger(
            clock=clock,
            simulator_settings=SimulatorSettings(report_delay=report_delay),
            on_simulated=outbox.record,
        )
    await messenger.open()
    workspace = await messenger.workspaces.create(name, recipient_limit=recipient_limit)
    for code in ALL_PROVIDERS:
        await messenger.connections.add(
            workspace.id, code, default_sender=sender, approved_senders=(sender,)
        )
    key = await messenger.keys.create(workspace.id, livemode=False, name=key_name)
    principal = await messenger.authenticate(key.secret)
    return TestBed(messenger, workspace, key.secret, principal, outbox, messenger.clock)


def build_testbed(
    *,
    clock: Clock | None = None,
    outbox: Outbox | None = None,
    sender: str = DEFAULT_TEST_SENDER,
    report_delay: timedelta = timedelta(0),
    recipient_limit: RecipientLimit | None = DEFAULT_RECIPIENT_LIMIT,
) -> TestBed:
    """:func:`create_testbed` for synchronous code (fixtures, Django/Flask test setup).

    The set-up runs on a private thread with its own loop, so it works whether or not the
    caller's thread already has an event loop running.
    """
    coroutine = create_testbed(
        clock=clock,
        outbox=outbox,
        sender=sender,
        report_delay=report_delay,
        recipient_limit=recipient_limit,
    )
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()
