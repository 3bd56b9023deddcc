"""The suppression list and opt-outs over real sockets, on SQLite and PostgreSQL.

The REST app runs under uvicorn on a SQL store; live sends go to the WhatsApp and Telegram
fakes, which answer in the providers' wire formats; replies come in through the signed
report URL (``/v1/dlr/…``); the worker delivers ``message.inbound`` events to a receiver.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from _sql_apps import BACKENDS, sql_store
from _support import LOOPBACK, Receiver, bearer, dlr_path, error_code, running_servers
from _support import start_receiver as _start_receiver
from fakes import telegram, whatsapp
from fakes.telegram import Canned, TelegramFake
from fakes.whatsapp import WhatsAppFake, text_message

from unified_messaging import Connection, ManualClock, Messenger, Vault
from unified_messaging.asgi import create_app

IN_WINDOW = "+905551112233"  # the WhatsApp fake's recipient who wrote within 24 hours
BLOCKED_CHAT = "777"  # the Telegram fake's user who blocked the bot
OPEN_CHAT = "4242"


@dataclass
class Bed:
    messenger: Messenger
    http: httpx.AsyncClient
    receiver: Receiver
    whatsapp: WhatsAppFake
    telegram: TelegramFake
    bizchat: Connection
    chatbot: Connection
    verimor: Connection
    live: str
    test: str

    async def send(self, key: str, payload: dict[str, object]) -> httpx.Response:
        return await self.http.post("/v1/messages", json=payload, headers=bearer(key))

    async def suppressions(self, key: str, **query: str) -> dict[str, Any]:
        response = await self.http.get("/v1/suppressions", params=query, headers=bearer(key))
        assert response.status_code == 200, response.text
        document: dict[str, Any] = response.json()
        return document

    async def add(self, key: str, payload: object) -> httpx.Response:
        return await self.http.post("/v1/suppressions", json=payload, headers=bearer(key))

    async def inbound(self, connection: Connection, body: bytes, **headers: str) -> int:
        response = await self.http.post(dlr_path(connection), content=body, headers=headers)
        return response.status_code

    async def deliver_events(self) -> list[dict[str, Any]]:
        """Run the worker until nothing is due; the ``message.inbound`` events received."""
        worker = self.messenger.worker()
        while await worker.run_once():
            pass
        return [d.event for d in self.receiver.deliveries if d.type == "message.inbound"]


@pytest.fixture(params=BACKENDS)
async def bed(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Bed]:
    async with sql_store(request.param, tmp_path) as store:
        messenger = Messenger(
            store, clock=ManualClock(), vault=Vault.generate(), webhook_policy=LOOPBACK
        )
        await messenger.open()
        try:
            async with running_servers() as servers:
                built = await _bed(messenger, servers)
                try:
                    yield built
                finally:
                    await built.http.aclose()
        finally:
            await messenger.aclose()


async def _bed(messenger: Messenger, servers: Any) -> Bed:
    wa, tg = WhatsAppFake(), TelegramFake()
    wa_url, tg_url = await servers.start(wa.app), await servers.start(tg.app)
    workspace = await messenger.workspaces.create("opt-outs")
    bizchat = await messenger.connections.add(
        workspace.id,
        "bizchat",
        credentials={
            "access_token": whatsapp.ACCESS_TOKEN,
            "phone_number_id": whatsapp.PHONE_NUMBER_ID,
            "app_secret": whatsapp.APP_SECRET,
            "verify_token": "verify-token-4f9c",
        },
        base_url=wa_url,
    )
    chatbot = await messenger.connections.add(
        workspace.id, "chatbot", credentials={"bot_token": telegram.TOKEN}, base_url=tg_url
    )
    verimor = await messenger.connections.add(
        workspace.id,
        "sms_c",
        credentials={"username": "908501234567", "password": "pw-7e1f"},
        default_sender="ACME",
    )
    receiver = await _start_receiver(servers)
    await messenger.webhooks.create(workspace.id, receiver.url)
    live = (await messenger.keys.create(workspace.id, livemode=True)).secret
    test = (await messenger.keys.create(workspace.id, livemode=False)).secret
    base_url = await servers.start(create_app(messenger, worker=False, mcp=False))
    # No time-out: the tests assert outcomes, and httpx's default five seconds ran out for
    # the concurrent adds on a loaded machine (the server, the store and these requests
    # share one event loop and the database server, and wait their turns on the CPU).
    http = httpx.AsyncClient(base_url=base_url, timeout=None)  # noqa: S113 - see above
    return Bed(messenger, http, receiver, wa, tg, bizchat, chatbot, verimor, live, test)


# ------------------------------------------------------------------------ opt-outs by reply


async def test_a_whatsapp_dur_reply_suppresses_the_number_and_the_next_send_is_refused(
    bed: Bed,
) -> None:
    first = await bed.send(bed.live, {"provider": "bizchat", "to": IN_WINDOW, "body": "Kampanya"})
    assert first.status_code == 201, first.text

    body, headers = bed.whatsapp.inbound_webhook([text_message("905551112233", "  dur. ")])
    assert await bed.inbound(bed.bizchat, body, **headers) == 200

    again = await bed.send(bed.live, {"provider": "bizchat", "to": "0555 111 22 33", "body": "x"})
    assert again.status_code == 422
    assert error_code(again) == "RECIPIENT_SUPPRESSED"
    [entry] = (await bed.suppressions(bed.live))["data"]
    assert (entry["channel"], entry["recipient"], entry["source"], entry["livemode"]) == (
        "bizchat", IN_WINDOW, "bizchat", True,
    )  # fmt: skip
    [event] = await bed.deliver_events()
    assert event["data"]["sender"] == IN_WINDOW
    assert event["data"]["text"] == "  dur. "
    assert (event["data"]["opt_out"], event["data"]["stop_word"]) == (True, "DUR")
    sends = [r for r in bed.whatsapp.received if r.path.endswith("/messages")]
    assert len(sends) == 1  # the refused send never reached WhatsApp


@pytest.mark.parametrize("text", ["İPTAL", "iptal", "IPTAL", "ıptal", "Stop!", "RET"])
async def test_stop_words_match_the_turkish_way(bed: Bed, text: str) -> None:
    body, headers = bed.whatsapp.inbound_webhook([text_message("905551112233", text)])
    assert await bed.inbound(bed.bizchat, body, **headers) == 200

    assert [e["recipient"] for e in (await bed.suppressions(bed.live))["data"]] == [IN_WINDOW]


async def test_an_ordinary_reply_is_forwarded_and_suppresses_nobody(bed: Bed) -> None:
    body, headers = bed.whatsapp.inbound_webhook([text_message("905551112233", "Dur bakalım")])
    assert await bed.inbound(bed.bizchat, body, **headers) == 200
    # Meta retries a webhook it thinks failed: the same message is one event.
    assert await bed.inbound(bed.bizchat, body, **headers) == 200

    [event] = await bed.deliver_events()
    assert (event["data"]["text"], event["data"]["opt_out"]) == ("Dur bakalım", False)
    assert (await bed.suppressions(bed.live))["data"] == []
    sent = await bed.send(bed.live, {"provider": "bizchat", "to": IN_WINDOW, "body": "Tamam"})
    assert sent.status_code == 201


async def test_a_reply_with_a_wrong_signature_changes_nothing(bed: Bed) -> None:
    body, headers = bed.whatsapp.inbound_webhook(
        [text_message("905551112233", "STOP")], secret="not-the-app-secret"
    )
    assert await bed.inbound(bed.bizchat, body, **headers) == 401

    assert (await bed.suppressions(bed.live))["data"] == []
    assert await bed.deliver_events() == []


async def test_an_inbound_sms_stop_through_verimor_suppresses_the_number(bed: Bed) -> None:
    push = [{
        "message_id": 98765, "type": "inbound", "received_at": "2026-01-02 09:00:00",
        "network": "TURKCELL", "source_addr": "905319876543",
        "destination_addr": "908501234567", "keyword": "", "content": "İptal",
    }]  # fmt: skip
    assert await bed.inbound(bed.verimor, json.dumps(push).encode()) == 200

    [entry] = (await bed.suppressions(bed.live, channel="sms"))["data"]
    assert (entry["recipient"], entry["source"]) == ("+905319876543", "sms")
    [event] = await bed.deliver_events()
    assert event["data"]["stop_word"] == "İPTAL"


# ------------------------------------------------------------------------ the chat bot


async def test_a_blocked_bot_is_suppressed_and_not_tried_again(bed: Bed) -> None:
    payload = {"provider": "chatbot", "to": BLOCKED_CHAT, "body": "Merhaba"}
    refused = await bed.send(bed.live, payload)
    assert (refused.status_code, error_code(refused)) == (422, "CHAT_UNREACHABLE")

    [entry] = (await bed.suppressions(bed.live, channel="chatbot"))["data"]
    assert (entry["recipient"], entry["source"]) == (BLOCKED_CHAT, "chatbot")
    assert "blocked" in entry["reason"]
    again = await bed.send(bed.live, payload)
    assert (again.status_code, error_code(again)) == (422, "RECIPIENT_SUPPRESSED")
    calls = [r for r in bed.telegram.received if r.path.endswith("/sendMessage")]
    assert len(calls) == 1


async def test_a_bot_blocked_at_the_workers_hand_over_is_suppressed(bed: Bed) -> None:
    # D7: Telegram is down at submit, so the message is queued for the worker, which finds
    # the bot blocked when it hands the message over.
    await bed.messenger.workspaces.set_retry_unavailable(bed.chatbot.workspace_id, True)
    bed.telegram.script(Canned(status=502, body=telegram.error_body(502, "Bad Gateway")))
    queued = await bed.send(bed.live, {"provider": "chatbot", "to": BLOCKED_CHAT, "body": "Hi"})
    assert (queued.status_code, queued.json()["status"]) == (201, "queued"), queued.text
    assert (await bed.suppressions(bed.live))["data"] == []

    clock = bed.messenger.clock
    assert isinstance(clock, ManualClock)
    worker = bed.messenger.worker()
    for _ in range(20):
        clock.advance(timedelta(seconds=30))
        await worker.run_once()
        if (await bed.suppressions(bed.live))["data"]:
            break
    [entry] = (await bed.suppressions(bed.live))["data"]
    assert (entry["recipient"], entry["source"]) == (BLOCKED_CHAT, "chatbot")


async def test_a_chat_never_started_is_not_an_opt_out(bed: Bed) -> None:
    refused = await bed.send(bed.live, {"provider": "chatbot", "to": "888", "body": "Merhaba"})
    assert error_code(refused) == "CHAT_UNREACHABLE"

    assert (await bed.suppressions(bed.live))["data"] == []


async def test_a_telegram_stop_command_suppresses_the_chat(bed: Bed) -> None:
    update = {
        "update_id": 10001,
        "message": {
            "message_id": 55,
            "from": {"id": 4242, "is_bot": False, "first_name": "Ayşe"},
            "chat": {"id": 4242, "type": "private", "first_name": "Ayşe"},
            "date": 1767340800,
            "text": "/stop",
        },
    }
    assert await bed.inbound(bed.chatbot, json.dumps(update).encode()) == 200

    sent = await bed.send(bed.live, {"provider": "chatbot", "to": OPEN_CHAT, "body": "Selam"})
    assert (sent.status_code, error_code(sent)) == (422, "RECIPIENT_SUPPRESSED")
    [event] = await bed.deliver_events()
    assert (event["data"]["sender"], event["data"]["stop_word"]) == (OPEN_CHAT, "/stop")


# ------------------------------------------------------------------------ the list over REST


async def test_bulk_fails_only_the_suppressed_item_for_test_keys_too(bed: Bed) -> None:
    added = await bed.add(bed.test, {"channel": "sms", "recipient": "0555 000 00 22"})
    assert added.status_code == 201, added.text

    response = await bed.http.post(
        "/v1/messages/bulk",
        json={
            "provider": "sms_c",
            "items": [
                {"to": "+905550000021", "body": "a"},
                {"to": "+905550000022", "body": "b"},
                {"to": "+905550000023", "body": "c"},
            ],
        },
        headers=bearer(bed.test),
    )

    assert response.status_code == 201, response.text
    document = response.json()
    assert (document["sent"], document["failed"]) == (2, 1)
    results = document["results"]
    assert [r["status"] for r in results] == ["sent", "failed", "sent"]
    assert results[1]["error"]["code"] == "RECIPIENT_SUPPRESSED"
    record = await bed.http.get(f"/v1/messages/{results[1]['job_id']}", headers=bearer(bed.test))
    assert record.json()["status"] == "failed"


async def test_live_and_test_lists_are_apart(bed: Bed) -> None:
    await bed.add(bed.test, {"channel": "sms", "recipient": "+905550000024"})

    assert (await bed.suppressions(bed.live))["data"] == []
    live_send = await bed.send(bed.live, {"provider": "sms_c", "to": "+905550000024", "body": "x"})
    assert error_code(live_send) != "RECIPIENT_SUPPRESSED"
    test_send = await bed.send(bed.test, {"provider": "sms_c", "to": "+905550000024", "body": "x"})
    assert (test_send.status_code, error_code(test_send)) == (422, "RECIPIENT_SUPPRESSED")


async def test_add_list_page_and_remove(bed: Bed) -> None:
    first = await bed.add(
        bed.live, {"channel": "sms", "recipient": "0 (555) 000-00-31", "reason": "asked by phone"}
    )
    assert first.status_code == 201
    entry = first.json()
    assert (entry["recipient"], entry["source"], entry["reason"]) == (
        "+905550000031", "api", "asked by phone",
    )  # fmt: skip
    again = await bed.add(bed.live, {"channel": "sms", "recipient": "+905550000031"})
    assert again.json() == entry  # idempotent: the first entry stays as it was
    await bed.add(bed.live, {"channel": "bizchat", "recipient": "+4915112345678"})

    page = await bed.suppressions(bed.live, limit="1")
    assert (len(page["data"]), page["has_more"]) == (1, True)
    rest = await bed.suppressions(bed.live, starting_after=page["data"][0]["id"])
    assert rest["has_more"] is False
    assert {e["recipient"] for e in page["data"] + rest["data"]} == {
        "+905550000031", "+4915112345678",
    }  # fmt: skip
    by_number = await bed.suppressions(bed.live, recipient="05550000031")
    assert [e["id"] for e in by_number["data"]] == [entry["id"]]

    removed = await bed.http.delete(
        "/v1/suppressions",
        params={"channel": "sms", "recipient": "05550000031"},
        headers=bearer(bed.live),
    )
    assert (removed.status_code, removed.json()["id"]) == (200, entry["id"])
    gone = await bed.http.delete(
        "/v1/suppressions",
        params={"channel": "sms", "recipient": "05550000031"},
        headers=bearer(bed.live),
    )
    assert (gone.status_code, error_code(gone)) == (404, "NOT_FOUND")
    sent = await bed.send(bed.live, {"provider": "sms_c", "to": "+905550000031", "body": "x"})
    assert error_code(sent) != "RECIPIENT_SUPPRESSED"

    events = await bed.messenger.audit.list(action="suppression.add")
    assert {e.actor for e in events.data} == {f"api_key:{(await _live_key_id(bed))}"}
    assert all(e.target.startswith("sup_") for e in events.data)


async def _live_key_id(bed: Bed) -> str:
    workspace_id = bed.bizchat.workspace_id
    [key] = [k for k in await bed.messenger.keys.list(workspace_id) if k.livemode]
    return key.id


async def test_two_adds_at_once_leave_one_row(bed: Bed) -> None:
    payload = {"channel": "sms", "recipient": "+905550000041"}
    answers = await asyncio.gather(*(bed.add(bed.live, payload) for _ in range(8)))

    assert {a.status_code for a in answers} == {201}
    assert len({a.json()["id"] for a in answers}) == 1
    assert len((await bed.suppressions(bed.live))["data"]) == 1


@pytest.mark.parametrize(
    ("payload", "status", "code", "field"),
    [
        ({"channel": "fax", "recipient": "+905550000051"}, 400, "VALIDATION_ERROR", "channel"),
        ({"channel": "sms"}, 400, "VALIDATION_ERROR", "recipient"),
        ({"channel": "sms", "recipient": ""}, 400, "VALIDATION_ERROR", "recipient"),
        ({"channel": "sms", "recipient": "9" * 65}, 400, "VALIDATION_ERROR", "recipient"),
        ({"channel": "sms", "recipient": "+90555\x00"}, 400, "VALIDATION_ERROR", "recipient"),
        ({"channel": "sms", "recipient": "+905550000051", "reason": "x" * 201}, 400,
         "VALIDATION_ERROR", "reason"),
        ({"channel": "sms", "recipient": "+905550000051", "extra": 1}, 400,
         "VALIDATION_ERROR", "extra"),
        ({"channel": "sms", "recipient": "'; DROP TABLE um_suppressions;--"}, 422,
         "INVALID_RECIPIENT", None),
        ({"channel": "sms", "recipient": "+12025550123"}, 422, "INVALID_RECIPIENT", None),
        ({"channel": "chatbot", "recipient": "@ab"}, 422, "INVALID_RECIPIENT", None),
        ({"channel": "bizchat", "recipient": "𝟘𝟝𝟝𝟝 ☎"}, 422, "INVALID_RECIPIENT", None),
        (["not", "an", "object"], 400, "VALIDATION_ERROR", None),
    ],
)  # fmt: skip
async def test_bad_input_gets_a_clear_error(
    bed: Bed, payload: object, status: int, code: str, field: str | None
) -> None:
    response = await bed.add(bed.live, payload)

    assert (response.status_code, error_code(response)) == (status, code), response.text
    if field is not None:
        assert field in [d["field"] for d in response.json()["error"]["details"]]
    assert (await bed.suppressions(bed.live))["data"] == []


async def test_hostile_text_is_kept_as_given(bed: Bed) -> None:
    reason = "Robert'); DROP TABLE um_suppressions;-- İşçi 👋 \u202e"
    added = await bed.add(
        bed.live, {"channel": "sms", "recipient": "05550000061", "reason": reason}
    )

    assert added.status_code == 201, added.text
    [entry] = (await bed.suppressions(bed.live))["data"]
    assert entry["reason"] == reason


@pytest.mark.parametrize(
    "query",
    [{"limit": "0"}, {"limit": "101"}, {"channel": "fax"}, {"nope": "1"}],
)
async def test_bad_list_queries_are_400(bed: Bed, query: dict[str, str]) -> None:
    response = await bed.http.get("/v1/suppressions", params=query, headers=bearer(bed.live))

    assert (response.status_code, error_code(response)) == (400, "VALIDATION_ERROR")


async def test_a_cursor_of_the_other_mode_is_404(bed: Bed) -> None:
    entry = (await bed.add(bed.test, {"channel": "sms", "recipient": "+905550000071"})).json()

    response = await bed.http.get(
        "/v1/suppressions", params={"starting_after": entry["id"]}, headers=bearer(bed.live)
    )
    assert (response.status_code, error_code(response)) == (404, "NOT_FOUND")
