"""Escalation across channels (D36) over real HTTP, on SQLite and PostgreSQL.

The served app on a loopback socket; live sends go to a local WhatsApp Cloud API fake (its
wire format, its error codes, the authentication template's copy-code button) and a local
Verimor fake (``sms_c``). The late-delivery escalation is the worker's DLR time-out item,
run with an injected clock.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from _sql_apps import BACKENDS, sql_store
from _support import bearer, error_code, running_servers
from fakes import telegram, whatsapp
from fakes.telegram import TelegramFake
from fakes.verimor import FakeVerimor
from fakes.whatsapp import WhatsAppFake

from unified_messaging import AsyncClient, EscalationInvalid, ManualClock, Messenger, Vault
from unified_messaging.store.sql import SqlStore

IN_WINDOW = "+905551112233"  # wrote to the business within 24 hours: free text reaches them
OUTSIDE = "+905557778899"  # did not: free text is refused (131047), a template is not
AUTH_TEMPLATE = "um_code"
CODE = re.compile(r"(?<![0-9])[0-9]{6}(?![0-9])")


@dataclass
class Bed:
    messenger: Messenger
    clock: ManualClock
    http: httpx.AsyncClient
    whatsapp: WhatsAppFake
    verimor: FakeVerimor
    telegram: TelegramFake
    workspace_id: str
    live: str

    async def post(self, path: str, body: dict[str, object]) -> httpx.Response:
        return await self.http.post(path, json=body, headers=bearer(self.live))

    async def get(self, path: str) -> dict[str, Any]:
        response = await self.http.get(path, headers=bearer(self.live))
        assert response.status_code == 200, response.text
        found: dict[str, Any] = response.json()
        return found

    async def run_worker(self) -> None:
        worker = self.messenger.worker()
        while await worker.run_once():
            pass

    def whatsapp_sends(self) -> list[dict[str, Any]]:
        return [
            r.json  # type: ignore[misc]
            for r in self.whatsapp.received
            if r.path.endswith("/messages") and isinstance(r.json, dict)
        ]

    def sms_texts(self) -> list[str]:
        return [m["msg"] for r in self.verimor.sends() for m in r.json["messages"]]  # type: ignore[index]

    async def units_used(self) -> int:
        return (await self.messenger.workspaces.quota_usage(self.workspace_id)).used


@asynccontextmanager
async def escalation_bed(backend: str, directory: Path) -> AsyncIterator[Bed]:
    async with sql_store(backend, directory) as store:
        clock = ManualClock()
        messenger = Messenger(store, clock=clock, vault=Vault.generate())
        await messenger.open()
        try:
            async with running_servers() as servers:
                verimor = FakeVerimor()
                fake = WhatsAppFake()
                bot = TelegramFake()
                workspace = await messenger.workspaces.create("escalation")
                await messenger.connections.add(
                    workspace.id, "sms_c",
                    credentials={"username": verimor.username, "password": verimor.password},
                    default_sender="UMTEST", base_url=await servers.start(verimor.app),
                )  # fmt: skip
                await messenger.connections.add(
                    workspace.id, "bizchat",
                    credentials={"access_token": whatsapp.ACCESS_TOKEN,
                                 "phone_number_id": whatsapp.PHONE_NUMBER_ID,
                                 "app_secret": whatsapp.APP_SECRET, "verify_token": "vt-esc"},
                    base_url=await servers.start(fake.app),
                )  # fmt: skip
                await messenger.connections.add(
                    workspace.id, "chatbot", credentials={"bot_token": telegram.TOKEN},
                    base_url=await servers.start(bot.app),
                )  # fmt: skip
                from unified_messaging.asgi import create_app

                url = await servers.start(create_app(messenger, worker=False, mcp=False))
                async with httpx.AsyncClient(base_url=url) as http:
                    yield Bed(
                        messenger=messenger, clock=clock, http=http, whatsapp=fake,
                        verimor=verimor, telegram=bot, workspace_id=workspace.id,
                        live=(await messenger.keys.create(workspace.id, livemode=True)).secret,
                    )  # fmt: skip
        finally:
            await messenger.aclose()


@pytest.fixture(params=BACKENDS)
async def bed(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Bed]:
    async with escalation_bed(request.param, tmp_path) as built:
        yield built


def _attempts(record: dict[str, Any]) -> list[tuple[str, str]]:
    return [(a["provider"], a["status"]) for a in record["attempts"]]


# ------------------------------------------------------------------------ ordinary messages


async def test_a_whatsapp_send_refused_goes_by_sms_at_once_as_one_message(bed: Bed) -> None:
    sent = await bed.post(
        "/v1/messages",
        {"to": OUTSIDE, "body": "Siparişiniz hazır", "provider": "bizchat",
         "channel_fallback": ["sms"]},
    )  # fmt: skip

    assert sent.status_code == 201, sent.text
    job_id = sent.json()["job_id"]
    record = await bed.get(f"/v1/messages/{job_id}")
    assert record["status"] == "sent"
    assert record["provider"] == "sms_c"
    assert _attempts(record) == [("bizchat", "rejected"), ("sms_c", "accepted")]
    # 131047: the recipient is outside the 24-hour window, which SMS does not know.
    assert record["attempts"][0]["error"]["code"] == "OUTSIDE_CUSTOMER_SERVICE_WINDOW"
    assert bed.sms_texts() == ["Siparişiniz hazır"]
    assert await bed.units_used() == 1  # one logical message, one unit
    listed = await bed.get(f"/v1/messages?to={OUTSIDE}")
    assert [m["job_id"] for m in listed["data"]] == [job_id]


async def test_a_whatsapp_send_not_delivered_in_time_goes_by_sms_when_the_timer_runs(
    bed: Bed,
) -> None:
    sent = await bed.post(
        "/v1/messages",
        {"to": IN_WINDOW, "body": "Kargonuz yolda", "provider": "bizchat",
         "channel_fallback": ["sms"], "escalate_after": 20},
    )  # fmt: skip
    assert sent.status_code == 201, sent.text
    job_id = sent.json()["job_id"]
    assert _attempts(await bed.get(f"/v1/messages/{job_id}")) == [("bizchat", "accepted")]

    bed.clock.advance(timedelta(seconds=19))
    await bed.run_worker()
    assert bed.sms_texts() == []  # not yet: the wait is 20 s

    bed.clock.advance(timedelta(seconds=2))
    await bed.run_worker()

    record = await bed.get(f"/v1/messages/{job_id}")
    assert _attempts(record) == [("bizchat", "unknown"), ("sms_c", "accepted")]
    assert (record["status"], record["provider"]) == ("sent", "sms_c")
    assert bed.sms_texts() == ["Kargonuz yolda"]
    assert await bed.units_used() == 1


async def test_the_escalation_hop_passes_the_gate_a_suppressed_recipient_is_not_reached(
    bed: Bed,
) -> None:
    auth = await bed.messenger.principal(bed.workspace_id, livemode=True)
    await bed.messenger.suppressions.add(auth, {"channel": "sms", "recipient": IN_WINDOW})
    sent = await bed.post(
        "/v1/messages",
        {"to": IN_WINDOW, "body": "Kampanya", "provider": "bizchat",
         "channel_fallback": ["sms"], "escalate_after": 5},
    )  # fmt: skip
    assert sent.status_code == 201, sent.text
    job_id = sent.json()["job_id"]

    bed.clock.advance(timedelta(seconds=6))
    await bed.run_worker()

    record = await bed.get(f"/v1/messages/{job_id}")
    assert record["status"] == "failed"
    assert record["error"]["code"] == "RECIPIENT_SUPPRESSED"
    assert bed.sms_texts() == []


@pytest.mark.parametrize(
    ("extra", "status", "code"),
    [
        ({"channel_fallback": ["fax"]}, 422, "ESCALATION_INVALID"),
        ({"channel_fallback": ["sms", "sms"]}, 422, "ESCALATION_INVALID"),
        ({"channel_fallback": ["bizchat"]}, 422, "ESCALATION_INVALID"),  # the first channel
        ({"channel_fallback": ["sms"], "escalate_after": 4}, 422, "ESCALATION_INVALID"),
        ({"channel_fallback": ["sms"], "escalate_after": 3601}, 422, "ESCALATION_INVALID"),
        ({"escalate_after": 30}, 422, "ESCALATION_INVALID"),  # nothing to escalate to
        # A phone number is no Telegram chat id: one recipient for every channel.
        ({"channel_fallback": ["chatbot"]}, 422, "ESCALATION_INVALID"),
        ({"channel_fallback": "sms"}, 400, "VALIDATION_ERROR"),
        ({"channel_fallback": ["sms"], "escalate_after": "soon"}, 400, "VALIDATION_ERROR"),
    ],
)
async def test_bad_escalations_are_refused_with_a_clear_code(
    bed: Bed, extra: dict[str, object], status: int, code: str
) -> None:
    refused = await bed.post(
        "/v1/messages", {"to": IN_WINDOW, "body": "x", "provider": "bizchat", **extra}
    )
    assert (refused.status_code, error_code(refused)) == (status, code), refused.text
    assert bed.whatsapp_sends() == [] and bed.sms_texts() == []


# ------------------------------------------------------------------------ verification codes


async def _with_auth_template(bed: Bed) -> None:
    bed.whatsapp.templates[(AUTH_TEMPLATE, "tr")] = 1
    bed.whatsapp.authentication.add((AUTH_TEMPLATE, "tr"))
    await bed.messenger.verifications.update_settings(
        bed.workspace_id, whatsapp_template=AUTH_TEMPLATE
    )


def _template_code(sent: dict[str, Any]) -> str:
    """The code of an authentication template send, checked against its copy-code button."""
    assert sent["type"] == "template"
    template = sent["template"]
    assert template["name"] == AUTH_TEMPLATE
    body, button = template["components"]
    code = body["parameters"][0]["text"]
    assert button == {
        "type": "button", "sub_type": "url", "index": "0",
        "parameters": [{"type": "text", "text": code}],
    }  # fmt: skip
    assert isinstance(code, str)
    return code


async def test_a_whatsapp_code_not_delivered_in_time_goes_by_sms_and_approves(bed: Bed) -> None:
    await _with_auth_template(bed)
    started = await bed.post("/v1/verifications", {"to": OUTSIDE, "channels": ["bizchat", "sms"]})
    assert started.status_code == 201, started.text
    body = started.json()
    assert body["channel"] == "bizchat"
    [sent] = bed.whatsapp_sends()
    code = _template_code(sent)
    assert [(s["channel"], s["status"]) for s in body["sends"]] == [("bizchat", "sent")]

    bed.clock.advance(timedelta(seconds=31))  # the default escalate_after: 30 s
    await bed.run_worker()

    [text] = bed.sms_texts()
    found = CODE.search(text)
    assert found is not None and found[0] == code  # the same code, by the next channel
    now = await bed.get(f"/v1/verifications/{body['id']}")
    assert now["channel"] == "sms"
    sends = [(s["channel"], s["provider"], s["status"]) for s in now["sends"]]
    assert sends == [("bizchat", "bizchat", "unknown"), ("sms", "sms_c", "sent")]
    assert len({s["job_id"] for s in now["sends"]}) == 1
    assert await bed.units_used() == 1
    checked = await bed.post(f"/v1/verifications/{body['id']}/check", {"code": code})
    assert checked.json()["status"] == "approved"


async def test_a_refused_whatsapp_template_sends_the_code_by_sms_at_once(bed: Bed) -> None:
    await bed.messenger.verifications.update_settings(
        bed.workspace_id, whatsapp_template="not_approved"
    )
    started = await bed.post("/v1/verifications", {"to": OUTSIDE, "channels": ["bizchat", "sms"]})
    assert started.status_code == 201, started.text
    body = started.json()
    sends = [(s["channel"], s["status"]) for s in body["sends"]]
    assert sends == [("bizchat", "rejected"), ("sms", "sent")]
    assert body["channel"] == "sms"
    [text] = bed.sms_texts()
    code = CODE.search(text)
    assert code is not None
    checked = await bed.post(f"/v1/verifications/{body['id']}/check", {"code": code[0]})
    assert checked.json()["status"] == "approved"


async def test_cancel_stops_the_escalation(bed: Bed) -> None:
    await _with_auth_template(bed)
    started = await bed.post("/v1/verifications", {"to": OUTSIDE, "channels": ["bizchat", "sms"]})
    verification_id = started.json()["id"]
    canceled = await bed.post(f"/v1/verifications/{verification_id}/cancel", {})
    assert canceled.json()["status"] == "canceled"

    bed.clock.advance(timedelta(seconds=120))
    await bed.run_worker()

    assert bed.sms_texts() == []
    assert len(bed.whatsapp_sends()) == 1


async def test_an_approved_code_goes_by_no_later_channel(bed: Bed) -> None:
    await _with_auth_template(bed)
    started = await bed.post("/v1/verifications", {"to": OUTSIDE, "channels": ["bizchat", "sms"]})
    code = _template_code(bed.whatsapp_sends()[0])
    checked = await bed.post(f"/v1/verifications/{started.json()['id']}/check", {"code": code})
    assert checked.json()["status"] == "approved"

    bed.clock.advance(timedelta(seconds=120))
    await bed.run_worker()

    assert bed.sms_texts() == []


async def test_a_code_by_telegram_goes_to_the_chat_and_approves(bed: Bed) -> None:
    started = await bed.post("/v1/verifications", {"to": "4242", "channel": "chatbot"})
    assert started.status_code == 201, started.text
    body = started.json()
    assert (body["to"], body["channel"]) == ("4242", "chatbot")
    assert [(s["channel"], s["status"]) for s in body["sends"]] == [("chatbot", "delivered")]
    [sent] = [r.json for r in bed.telegram.received if r.path.endswith("/sendMessage")]
    assert isinstance(sent, dict) and sent["chat_id"] in ("4242", 4242)
    code = CODE.search(str(sent["text"]))
    assert code is not None
    checked = await bed.post(f"/v1/verifications/{body['id']}/check", {"code": code[0]})
    assert checked.json()["status"] == "approved"
    assert bed.sms_texts() == [] and bed.whatsapp_sends() == []


async def test_a_chat_id_and_a_phone_number_share_no_escalation(bed: Bed) -> None:
    for to in ("4242", OUTSIDE):
        refused = await bed.post("/v1/verifications", {"to": to, "channels": ["chatbot", "sms"]})
        assert (refused.status_code, error_code(refused)) == (422, "INVALID_RECIPIENT")
    assert bed.telegram.received == [] and bed.sms_texts() == []


async def test_the_escalation_timer_survives_a_restart(tmp_path: Path) -> None:
    """The late-delivery timer is a stored work item: a new process's worker runs it."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'restart.db'}"
    vault, clock = Vault.generate(), ManualClock()
    async with running_servers() as servers:
        verimor, fake = FakeVerimor(), WhatsAppFake()
        first = Messenger(SqlStore(url), clock=clock, vault=vault)
        await first.open()
        workspace = await first.workspaces.create("restart")
        await first.connections.add(
            workspace.id, "sms_c",
            credentials={"username": verimor.username, "password": verimor.password},
            default_sender="UMTEST", base_url=await servers.start(verimor.app),
        )  # fmt: skip
        await first.connections.add(
            workspace.id, "bizchat",
            credentials={"access_token": whatsapp.ACCESS_TOKEN,
                         "phone_number_id": whatsapp.PHONE_NUMBER_ID,
                         "app_secret": whatsapp.APP_SECRET, "verify_token": "vt"},
            base_url=await servers.start(fake.app),
        )  # fmt: skip
        auth = await first.principal(workspace.id, livemode=True)
        sent = await first.send(
            auth, {"to": IN_WINDOW, "body": "Yolda", "provider": "bizchat",
                   "channel_fallback": ["sms"], "escalate_after": 10},
        )  # fmt: skip
        await first.aclose()
        assert verimor.sends() == []

        clock.advance(timedelta(seconds=11))
        second = Messenger(SqlStore(url), clock=clock, vault=vault)
        await second.open()
        try:
            worker = second.worker()
            while await worker.run_once():
                pass
            record = await second.get_message(
                await second.principal(workspace.id, livemode=True), sent.job_id
            )
        finally:
            await second.aclose()
    assert [(a.provider, a.status) for a in record.attempts] == [
        ("bizchat", "unknown"), ("sms_c", "accepted"),
    ]  # fmt: skip
    assert len(verimor.sends()) == 1


async def test_the_async_client_sends_an_escalation_and_starts_a_code_with_channels(
    bed: Bed,
) -> None:
    await _with_auth_template(bed)
    async with AsyncClient(str(bed.http.base_url), bed.live) as client:
        sent = await client.send(
            {"to": OUTSIDE, "body": "Hazır", "provider": "bizchat", "channel_fallback": ["sms"]}
        )
        started = await client.verifications.start(
            {"to": IN_WINDOW, "channels": ["bizchat", "sms"]}
        )
        with pytest.raises(EscalationInvalid):
            await client.send(
                {"to": OUTSIDE, "body": "x", "provider": "bizchat",
                 "channel_fallback": ["sms"], "escalate_after": 0}
            )  # fmt: skip
    assert [(a.provider, a.status) for a in sent.attempts] == [
        ("bizchat", "rejected"), ("sms_c", "accepted"),
    ]  # fmt: skip
    assert [s.channel for s in started.sends] == ["bizchat"]
    assert bed.sms_texts() == ["Hazır"]
