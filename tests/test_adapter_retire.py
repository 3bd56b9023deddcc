"""A connection whose credentials change gets a new live adapter; the replaced one (and its
HTTP pool) is closed once the sends in flight on it return, and none of them fails for it.

Real ``sms_e`` adapters talk to the Kannel fake over loopback HTTP, behind a gate that holds
every request until the test opens it, so the sends are provably in flight (no sleeps).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from fakes._server import serve
from fakes.kannel import PASSWORD, USERNAME, KannelFake

from unified_messaging import ManualClock, Messenger, Vault
from unified_messaging._domain import Connection
from unified_messaging._routing.adapters import AdapterPool
from unified_messaging.providers.base import SubmitRequest
from unified_messaging.providers.kannel import KannelAdapter
from unified_messaging.providers.simulator import SimulatorSettings

ROUNDS = 4


class Gate:
    """ASGI middleware: counts the requests that arrive and holds them until opened."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.opened = asyncio.Event()
        self.arrived = 0
        self._changed = asyncio.Condition()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            async with self._changed:
                self.arrived += 1
                self._changed.notify_all()
            await self.opened.wait()
        await self.app(scope, receive, send)

    async def wait_for(self, count: int) -> None:
        async with self._changed:
            await self._changed.wait_for(lambda: self.arrived >= count)


class Built:
    """A factory of real Kannel adapters that keeps every one it built."""

    def __init__(self) -> None:
        self.adapters: list[KannelAdapter] = []

    def __call__(self, connection: Connection, credentials: Mapping[str, str]) -> KannelAdapter:
        adapter = KannelAdapter(connection, credentials)
        self.adapters.append(adapter)
        return adapter

    def closed(self) -> list[bool]:
        return [adapter.client.is_closed for adapter in self.adapters]


async def new_credentials(messenger: Messenger, connection_id: str, sealed: str) -> None:
    """Store new sealed credentials the one way they move: compare-and-set."""
    current = await messenger.store.get_connection(connection_id)
    assert current is not None
    assert await messenger.store.swap_connection_credentials(
        connection_id, current.credentials, sealed
    )


def credentials(route: int) -> dict[str, str]:
    # The SMSC route tells on the wire which adapter (which credentials) sent a request.
    return {"username": USERNAME, "password": PASSWORD, "smsc": f"route-{route}"}


async def test_replacing_credentials_under_sends_in_flight_closes_old_pools_and_fails_none() -> (
    None
):
    fake, built, vault = KannelFake(), Built(), Vault.generate()
    gate = Gate(fake.app)
    messenger = Messenger(clock=ManualClock(), vault=vault, live_adapters={"sms_e": built})
    async with messenger, serve(gate) as base_url:
        workspace = await messenger.workspaces.create("rotating")
        connection = await messenger.connections.add(
            workspace.id, "sms_e", credentials=credentials(0), base_url=base_url,
            default_sender="UMTEST",
        )  # fmt: skip
        auth = await messenger.principal(workspace.id, livemode=True)
        sends: list[asyncio.Task[Any]] = []
        for route in range(ROUNDS):
            if route:
                sealed = vault.encrypt_json(
                    credentials(route), workspace_id=workspace.id, connection_id=connection.id
                )
                await new_credentials(messenger, connection.id, sealed)
            body = {"to": "+905321234567", "body": f"message {route}"}
            sends.append(asyncio.create_task(messenger.send(auth, body)))
            await gate.wait_for(route + 1)  # this send is now in flight on adapter `route`

        assert len(built.adapters) == ROUNDS
        assert built.closed() == [False] * ROUNDS  # each retired one still carries a send

        gate.opened.set()
        answers = await asyncio.gather(*sends)

        assert [a.status for a in answers] == ["sent"] * ROUNDS
        wire = [(r.params["smsc"], r.params["text"]) for r in fake.received]
        assert sorted(wire) == [(f"route-{n}", f"message {n}") for n in range(ROUNDS)]
        # Every replaced pool closed as its send returned; the current one stays open.
        assert built.closed() == [True] * (ROUNDS - 1) + [False]

        # Replaced while idle: closed without waiting for shutdown, and the next send goes
        # through the new adapter.
        sealed = vault.encrypt_json(
            credentials(ROUNDS), workspace_id=workspace.id, connection_id=connection.id
        )
        await new_credentials(messenger, connection.id, sealed)
        answer = await messenger.send(auth, {"to": "+905321234567", "body": "after"})
        await messenger._adapters.settle()

        assert answer.status == "sent"
        assert fake.received[-1].params["smsc"] == f"route-{ROUNDS}"
        assert built.closed() == [True] * ROUNDS + [False]
    assert built.closed() == [True] * (ROUNDS + 1)


async def test_a_caller_holding_a_replaced_adapter_reaches_its_replacement() -> None:
    fake, built, vault = KannelFake(), Built(), Vault.generate()
    pool = AdapterPool(
        vault=vault,
        clock=ManualClock(),
        live_adapters={"sms_e": built},
        simulator_settings=SimulatorSettings(),
        on_simulated=None,
    )
    async with serve(fake.app) as base_url:

        def connection(route: int) -> Connection:
            sealed = vault.encrypt_json(credentials(route), workspace_id="ws", connection_id="c")
            return Connection(
                id="c", workspace_id="ws", provider="sms_e", credentials=sealed,
                created_at=datetime(2026, 1, 1, tzinfo=UTC), base_url=base_url,
            )  # fmt: skip

        first, second = connection(0), connection(1)
        held = pool.for_connection(first, livemode=True)  # a send planned...
        current = pool.for_connection(second, livemode=True)  # ...then the change
        await pool.settle()
        assert built.closed() == [True, False]

        outcome = await held.submit(SubmitRequest("job_1", "+905321234567", "Selam", "UMTEST"))

        assert outcome.kind == "accepted"
        assert fake.received[-1].params["smsc"] == "route-1"  # through the replacement
        assert current is pool.for_connection(second, livemode=True)
        assert built.closed() == [True, False]
        await pool.aclose()
    assert built.closed() == [True, True]
