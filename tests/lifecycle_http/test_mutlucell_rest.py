"""Mutlucell (``sms_d``) through the REST app, its real adapter and its loopback fake.

Item 2: ``$<pack id>#0.0`` means Mutlucell used no credit: it sent nothing. That is a refusal,
so the send moves on to the fallback provider instead of ending ``sent`` with ``sms_d``.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
from _support import bearer, serving
from fakes._server import serve
from fakes.mutlucell import FakeMutlucell
from fakes.netgsm import NetgsmFake

from unified_messaging import ManualClock, Messenger, Vault
from unified_messaging.asgi import create_app


@dataclass
class Rig:
    client: httpx.AsyncClient
    url: str
    key: str
    mutlucell: FakeMutlucell
    netgsm: NetgsmFake

    async def send(self, **request: Any) -> httpx.Response:
        return await self.client.post(
            f"{self.url}/v1/messages", json=request, headers=bearer(self.key)
        )


@contextlib.asynccontextmanager
async def rig() -> AsyncIterator[Rig]:
    mutlucell, netgsm = FakeMutlucell(), NetgsmFake()
    messenger = Messenger(clock=ManualClock(), vault=Vault.generate())
    async with (
        serve(mutlucell.app) as d,
        serve(netgsm.app) as a,
        messenger,
        serving(create_app(messenger, worker=False), lifespan=False) as url,
        httpx.AsyncClient(timeout=10) as client,
    ):
        workspace = await messenger.workspaces.create("mutlucell", recipient_limit=None)
        await messenger.connections.add(
            workspace.id, "sms_d", base_url=d, default_sender="UMTEST",
            credentials={"username": mutlucell.username, "password": mutlucell.password},
        )  # fmt: skip
        await messenger.connections.add(
            workspace.id, "sms_a", base_url=a, default_sender="ACME",
            credentials={"usercode": netgsm.usercode, "password": netgsm.password},
        )  # fmt: skip
        key = await messenger.keys.create(workspace.id, livemode=True)
        yield Rig(client, url, key.secret, mutlucell, netgsm)


async def test_a_pack_that_used_no_credit_is_a_refusal_and_fallback_moves_on() -> None:
    async with rig() as r:
        r.mutlucell.blacklist.add("905321234567")  # Mutlucell skips it: "$<id>#0.0"
        response = await r.send(to="+905321234567", body="Merhaba", fallback=["sms_a"])

    assert response.status_code == 201, response.text
    body = response.json()
    assert (body["status"], body["provider"]) == ("sent", "sms_a")
    assert [(a["provider"], a["status"]) for a in body["attempts"]] == [
        ("sms_d", "rejected"),
        ("sms_a", "accepted"),
    ]
    assert len(r.mutlucell.sends()) == 1
    assert len(r.netgsm.sends) == 1


async def test_a_pack_that_used_no_credit_without_fallback_is_failed() -> None:
    async with rig() as r:
        r.mutlucell.blacklist.add("905321234567")
        response = await r.send(to="+905321234567", body="Merhaba")

    body = response.json()
    assert (response.status_code, body["status"]) == (201, "failed")
    assert body["error"]["code"] == "PROVIDER_REJECTED"
    assert "sent nothing" in body["error"]["message"]


async def test_a_pack_that_used_credit_is_sent() -> None:
    async with rig() as r:
        response = await r.send(to="+905321234567", body="Merhaba", fallback=["sms_a"])

    body = response.json()
    assert (body["status"], body["provider"]) == ("sent", "sms_d")
    assert r.netgsm.sends == []
