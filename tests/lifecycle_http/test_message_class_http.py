"""A message's İYS class (D33) through the REST app on a real socket, against the NetGSM,
Verimor, İletimerkezi and Mutlucell fakes: ``category`` and ``recipient_type`` on a send and
a bulk reach each provider in its own field (NetGSM ``iysfilter``, Verimor
``is_commercial`` + ``iys_recipient_type``, İletimerkezi ``iys`` + ``iysList``), a message
without them takes its connection's ``iys_mode``, the class is in the status record, and a
commercial message skips Mutlucell, which cannot mark it."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from _support import bearer, serving
from fakes._server import serve
from fakes.iletimerkezi import IletimerkeziFake
from fakes.mutlucell import FakeMutlucell
from fakes.netgsm import NetgsmFake
from fakes.verimor import FakeVerimor

from unified_messaging import Messenger, Vault
from unified_messaging.asgi import create_app

TO = "+905321234567"


@dataclass
class Rig:
    client: httpx.AsyncClient
    url: str
    key: str
    netgsm: NetgsmFake
    verimor: FakeVerimor
    iletimerkezi: IletimerkeziFake
    mutlucell: FakeMutlucell

    async def post(self, path: str, body: dict[str, Any]) -> httpx.Response:
        return await self.client.post(f"{self.url}{path}", json=body, headers=bearer(self.key))

    async def record(self, job_id: str) -> dict[str, Any]:
        answer = await self.client.get(f"{self.url}/v1/messages/{job_id}", headers=bearer(self.key))
        assert answer.status_code == 200, answer.text
        document: dict[str, Any] = answer.json()
        return document


@contextlib.asynccontextmanager
async def rig(*, netgsm_mode: str = "informational") -> AsyncIterator[Rig]:
    netgsm, verimor = NetgsmFake(), FakeVerimor()
    iletimerkezi, mutlucell = IletimerkeziFake(), FakeMutlucell()
    messenger = Messenger(vault=Vault.generate())
    async with (
        serve(netgsm.app) as netgsm_url,
        serve(verimor.app) as verimor_url,
        serve(iletimerkezi.app) as iletimerkezi_url,
        serve(mutlucell.app) as mutlucell_url,
        messenger,
        serving(create_app(messenger, worker=False), lifespan=False) as url,
        httpx.AsyncClient(timeout=10) as client,
    ):
        workspace = await messenger.workspaces.create("Acme", recipient_limit=None)
        await messenger.connections.add(
            workspace.id, "sms_a", base_url=netgsm_url, default_sender="ACME",
            iys_mode=netgsm_mode,  # type: ignore[arg-type]
            credentials={"usercode": netgsm.usercode, "password": netgsm.password},
        )  # fmt: skip
        await messenger.connections.add(
            workspace.id, "sms_b", base_url=iletimerkezi_url, default_sender="ACME",
            credentials={"api_key": iletimerkezi.key, "api_hash": iletimerkezi.hash},
        )  # fmt: skip
        await messenger.connections.add(
            workspace.id, "sms_c", base_url=verimor_url, default_sender="UMTEST",
            credentials={"username": verimor.username, "password": verimor.password},
        )  # fmt: skip
        await messenger.connections.add(
            workspace.id, "sms_d", base_url=mutlucell_url, default_sender="UMTEST",
            credentials={"username": mutlucell.username, "password": mutlucell.password},
        )  # fmt: skip
        key = await messenger.keys.create(workspace.id, livemode=True)
        yield Rig(client, url, key.secret, netgsm, verimor, iletimerkezi, mutlucell)


@pytest.mark.parametrize(
    ("body", "iysfilter", "category", "recipient_type"),
    [
        ({"category": "commercial"}, "11", "commercial", "BIREYSEL"),
        ({"category": "commercial", "recipient_type": "TACIR"}, "12", "commercial", "TACIR"),
        ({"category": "informational"}, "0", "informational", None),
        ({}, "0", "informational", None),  # the connection's mode
    ],
)
async def test_netgsm_gets_the_class_in_iysfilter(
    body: dict[str, Any], iysfilter: str, category: str, recipient_type: str | None
) -> None:
    async with rig() as r:
        answer = await r.post("/v1/messages", {"to": TO, "body": "Kampanya", **body})

        assert answer.status_code == 201, answer.text
        (send,) = r.netgsm.sends
        assert send.json["iysfilter"] == iysfilter  # type: ignore[index]
        record = await r.record(answer.json()["job_id"])
        assert (record["category"], record["recipient_type"]) == (category, recipient_type)


async def test_a_send_without_a_category_takes_its_connections_mode() -> None:
    async with rig(netgsm_mode="commercial_merchant") as r:
        answer = await r.post("/v1/messages", {"to": TO, "body": "Kampanya"})
        informational = await r.post(
            "/v1/messages", {"to": TO, "body": "Siparişiniz yolda", "category": "informational"}
        )

        assert [s.json["iysfilter"] for s in r.netgsm.sends] == ["12", "0"]  # type: ignore[index]
        record = await r.record(answer.json()["job_id"])
        assert (record["category"], record["recipient_type"]) == ("commercial", "TACIR")
        assert (await r.record(informational.json()["job_id"]))["category"] == "informational"


async def test_a_bulk_class_reaches_verimor_and_iletimerkezi_for_every_item() -> None:
    async with rig() as r:
        items = [{"to": TO, "body": "a"}, {"to": "+905321234568", "body": "b"}]
        for provider in ("sms_c", "sms_b"):
            answer = await r.post(
                "/v1/messages/bulk",
                {"items": items, "provider": provider, "category": "commercial",
                 "recipient_type": "TACIR"},
            )  # fmt: skip
            assert answer.status_code == 201, answer.text
            for result in answer.json()["results"]:
                record = await r.record(result["job_id"])
                assert (record["category"], record["recipient_type"]) == ("commercial", "TACIR")

        (campaign,) = r.verimor.sends()
        assert campaign.json["is_commercial"] is True  # type: ignore[index]
        assert campaign.json["iys_recipient_type"] == "TACIR"  # type: ignore[index]
        (order,) = r.iletimerkezi.orders
        sent = order.json["request"]["order"]  # type: ignore[index]
        assert (sent["iys"], sent["iysList"]) == ("1", "TACIR")


async def test_a_commercial_message_skips_mutlucell_without_calling_it() -> None:
    async with rig() as r:
        answer = await r.post(
            "/v1/messages",
            {"to": TO, "body": "Kampanya", "provider": "sms_d", "fallback": ["sms_a"],
             "category": "commercial"},
        )  # fmt: skip

        assert answer.status_code == 201, answer.text
        sent = answer.json()
        assert (sent["status"], sent["provider"]) == ("sent", "sms_a")
        skipped, accepted = sent["attempts"]
        assert (skipped["provider"], skipped["status"]) == ("sms_d", "rejected")
        assert skipped["error"]["code"] == "IYS_NOT_CONFIGURED"
        assert accepted["provider"] == "sms_a"
        assert r.mutlucell.received == []

        alone = await r.post(
            "/v1/messages",
            {"to": TO, "body": "Kampanya", "provider": "sms_d", "category": "commercial"},
        )
        assert alone.status_code == 201
        assert (alone.json()["status"], alone.json()["error"]["code"]) == (
            "failed",
            "IYS_NOT_CONFIGURED",
        )
        assert r.mutlucell.received == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"recipient_type": "TACIR"}, "recipient_type"),
        ({"category": "informational", "recipient_type": "BIREYSEL"}, "recipient_type"),
        ({"category": "promo"}, "category"),
        ({"category": "commercial", "recipient_type": "tacir"}, "recipient_type"),
        ({"category": 1}, "category"),
    ],
)
async def test_a_bad_class_is_a_400_naming_its_field(body: dict[str, Any], field: str) -> None:
    async with rig() as r:
        for path, payload in (
            ("/v1/messages", {"to": TO, "body": "x", **body}),
            ("/v1/messages/bulk", {"items": [{"to": TO, "body": "x"}], **body}),
        ):
            answer = await r.post(path, payload)
            assert answer.status_code == 400, answer.text
            error = answer.json()["error"]
            assert error["code"] == "VALIDATION_ERROR"
            assert [d["field"] for d in error["details"]] == [field]
        assert r.netgsm.sends == []
