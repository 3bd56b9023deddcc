"""``messenger.iys``: connect (credentials checked with İYS), get, sync both ways,
disconnect, the worker's handlers, aclose; refusals and audit rows. İYS is the fake of
``fakes.iys`` behind ``httpx.ASGITransport``: no socket."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime

import httpx
import pytest
from fakes.iys import FakeIys

from namespaces._audit import audit_rows
from unified_messaging import ManualClock, Messenger, RequestInvalid
from unified_messaging.consents.rules import GMT3
from unified_messaging.iys import IysSettings
from unified_messaging.iys.errors import IysCredentialsRefused, IysNotConnected

NOW = datetime(2026, 12, 2, 10, 0, tzinfo=GMT3)
BASE_URL = "https://iys.example.com"


@dataclass
class World:
    messenger: Messenger
    fake: FakeIys
    workspace_id: str

    def body(self, **changes: object) -> dict[str, object]:
        return {"iys_code": self.fake.iys_code, "brand_code": self.fake.brand_code,
                "username": self.fake.username, "password": self.fake.password,
                "base_url": BASE_URL, **changes}  # fmt: skip


@pytest.fixture
async def world() -> AsyncIterator[World]:
    fake = FakeIys()
    transport = httpx.ASGITransport(app=fake.app())
    async with httpx.AsyncClient(transport=transport) as client:
        messenger = Messenger(clock=ManualClock(NOW), iys=IysSettings(client=client))
        workspace = await messenger.workspaces.create("acme")
        yield World(messenger, fake, workspace.id)
        await messenger.aclose()


async def test_connect_get_and_disconnect_never_showing_the_password(world: World) -> None:
    iys = world.messenger.iys
    connected = await iys.connect(world.workspace_id, world.body())

    assert (connected.iys_code, connected.username, connected.base_url) == (
        world.fake.iys_code, world.fake.username, BASE_URL,
    )  # fmt: skip
    assert connected.token_valid_until is not None  # the token of the check is kept
    assert world.fake.password.encode() not in connected.to_json()
    assert await iys.get(world.workspace_id) == connected
    workspace = await world.messenger.workspaces.get(world.workspace_id)
    assert workspace.consent_policy == "iys"  # connecting turns the check on
    assert (await iys.disconnect(world.workspace_id)).workspace_id == world.workspace_id
    with pytest.raises(IysNotConnected) as gone:
        await iys.get(world.workspace_id)
    assert (gone.value.code, gone.value.http_status) == ("IYS_NOT_CONNECTED", 404)
    assert [row for row in await audit_rows(world.messenger) if row[0].startswith("iys.")] == [
        ("iys.disconnect", world.workspace_id, world.workspace_id),
        ("iys.connect", world.workspace_id, world.workspace_id),
    ]


async def test_sync_pulls_the_citizens_changes_and_registers_ours(world: World) -> None:
    await world.messenger.iys.connect(world.workspace_id, world.body())
    world.fake.citizen_change("+905550000023", "RET")
    live = await world.messenger.principal(world.workspace_id, livemode=True)
    ours = await world.messenger.consents.create(
        live, {"recipient": "+905550000024", "status": "ONAY", "source": "HS_WEB"}
    )

    report = await world.messenger.iys.sync(world.workspace_id)

    assert sum(report.pulled.values()) == 1
    assert (report.registered, report.refused, report.pending) == (1, 0, 0)
    assert (await world.messenger.consents.get(live, ours.id)).iys_state == "registered"
    pulled = await world.messenger.consents.list(live, {"recipient": "+905550000023"})
    assert [c.status for c in pulled.data] == ["RET"]


async def test_refusals_wrong_credentials_a_bad_url_and_no_connection(world: World) -> None:
    iys = world.messenger.iys
    with pytest.raises(IysCredentialsRefused) as refused:
        await iys.connect(world.workspace_id, world.body(password="wrong"))
    assert (refused.value.code, refused.value.http_status) == ("IYS_CREDENTIALS_REFUSED", 422)
    with pytest.raises(RequestInvalid):
        await iys.connect(world.workspace_id, world.body(base_url="ftp://iys.example.com"))
    for call in (iys.sync(world.workspace_id), iys.disconnect(world.workspace_id)):
        with pytest.raises(IysNotConnected):
            await call
    assert not [row for row in await audit_rows(world.messenger) if row[0].startswith("iys.")]


async def test_the_workers_handlers_and_aclose() -> None:
    messenger = Messenger()
    iys = messenger.iys

    assert set(iys.batch_handlers()) <= set(iys.handlers())
    assert len(iys.handlers()) == 3 and all(callable(h) for h in iys.handlers().values())
    await iys.aclose()
    await iys.aclose()  # twice is fine


async def test_state_shows_the_connection_and_what_waits_never_the_password(world: World) -> None:
    iys = world.messenger.iys
    before = await iys.state(world.workspace_id)
    assert (before.connection, before.pending, before.refused) == (None, 0, [])

    await iys.connect(world.workspace_id, world.body())
    live = await world.messenger.principal(world.workspace_id, livemode=True)
    await world.messenger.consents.create(
        live, {"recipient": "+905550000025", "status": "ONAY", "source": "HS_WEB"}
    )
    waiting = await iys.state(world.workspace_id)

    assert waiting.connection is not None
    assert waiting.connection.username == world.fake.username
    assert waiting.pending == 1  # recorded, not yet registered
    assert world.fake.password.encode() not in waiting.to_json()
    await iys.sync(world.workspace_id)
    assert (await iys.state(world.workspace_id)).pending == 0
