"""A text over the Kannel gateway's part limit, through the real app: refused before the call.

A ``sendsms-user`` without ``max-messages`` sends only the first SMS of a longer text (Kannel
1.4.5, ``tests/providers/test_kannel_real.py``), and the message used to be recorded with
every segment it never sent. The connection's ``max_parts`` (default 1) now refuses it with
422 ``BODY_TOO_LONG`` before the gateway hears of it; within the limit, the record's
``segments`` is what the gateway sends.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from _support import bearer, running_servers
from fakes.kannel import PASSWORD, USERNAME, KannelFake

from unified_messaging import ManualClock, Messenger, Vault, generate_key_spec
from unified_messaging.asgi import create_app
from unified_messaging.store.memory import MemoryStore

TO = "+905321234567"


@pytest.fixture
async def rig() -> AsyncIterator[tuple[httpx.AsyncClient, KannelFake, str, str]]:
    messenger = Messenger(
        MemoryStore(), clock=ManualClock(), vault=Vault.from_spec(generate_key_spec())
    )
    kannel = KannelFake()
    try:
        async with running_servers() as servers:
            kannel_url = await servers.start(kannel.app)
            app_url = await servers.start(create_app(messenger, worker=False, mcp=False),
                                          lifespan=True)  # fmt: skip
            plain = await messenger.workspaces.create("Plain")
            three = await messenger.workspaces.create("Three")
            for workspace, extra in ((plain, {}), (three, {"max_parts": "3"})):
                await messenger.connections.add(
                    workspace.id, "sms_e", default_sender="ACME", base_url=kannel_url,
                    credentials={"username": USERNAME, "password": PASSWORD, **extra},
                )  # fmt: skip
            keys = [await messenger.keys.create(w.id, livemode=True) for w in (plain, three)]
            async with httpx.AsyncClient(base_url=app_url) as http:
                yield http, kannel, keys[0].secret, keys[1].secret
    finally:
        await messenger.aclose()


async def test_a_text_over_the_gateways_part_limit_is_refused_before_the_call(
    rig: tuple[httpx.AsyncClient, KannelFake, str, str],
) -> None:
    http, kannel, plain, three = rig
    body = {"to": TO, "body": "x" * 300}  # 2 GSM-7 parts

    refused = await http.post("/v1/messages", json=body, headers=bearer(plain))
    sent = await http.post("/v1/messages", json=body, headers=bearer(three))

    assert refused.status_code == 422, refused.text
    assert refused.json()["error"]["code"] == "BODY_TOO_LONG"
    assert sent.status_code == 201, sent.text
    assert (sent.json()["status"], sent.json()["segments"]) == ("sent", 2)
    assert [r.params["text"] for r in kannel.received] == ["x" * 300]  # only the one that fits
