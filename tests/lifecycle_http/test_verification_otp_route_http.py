"""A live verification through an ``sms_a`` connection whose ``otp`` setting is on, over real
HTTP on SQLite and PostgreSQL: the code goes by NetGSM's OTP route (a local fake on a
loopback socket speaking its XML), is read from what the fake got, and approves; an account
without the OTP package sends it the normal way; an ordinary message never takes the route."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from _sql_apps import BACKENDS, sql_store
from _support import LOOPBACK, bearer, running_servers
from fakes.netgsm import NetgsmFake

from unified_messaging import ManualClock, Messenger, Vault

TO = "+905321234567"
CODE = re.compile(r"(?<![0-9])[0-9]{4,10}(?![0-9])")


@dataclass
class OtpBed:
    http: httpx.AsyncClient
    netgsm: NetgsmFake
    live: str


@pytest.fixture(params=BACKENDS)
async def bed(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[OtpBed]:
    from unified_messaging.asgi import create_app

    async with sql_store(request.param, tmp_path) as store:
        messenger = Messenger(store, clock=ManualClock(), vault=Vault.generate(),
                              webhook_policy=LOOPBACK)  # fmt: skip
        await messenger.open()
        try:
            async with running_servers() as servers:
                netgsm = NetgsmFake()
                base_url = await servers.start(netgsm.app)
                workspace = await messenger.workspaces.create("otp")
                await messenger.connections.add(
                    workspace.id, "sms_a", default_sender="ACME", base_url=base_url,
                    credentials={"usercode": netgsm.usercode, "password": netgsm.password,
                                 "otp": "true"},
                )  # fmt: skip
                key = await messenger.keys.create(workspace.id, livemode=True)
                url = await servers.start(create_app(messenger, worker=False, mcp=False))
                async with httpx.AsyncClient(base_url=url) as http:
                    yield OtpBed(http, netgsm, key.secret)
        finally:
            await messenger.aclose()


def _otp_text(bed: OtpBed) -> str:
    body = bed.netgsm.otp_sends[-1].body.decode()
    found = re.search(r"<msg><!\[CDATA\[(.*?)\]\]></msg>", body)
    assert found is not None
    return found[1]


async def test_a_live_code_goes_by_the_otp_route_and_approves(bed: OtpBed) -> None:
    started = await bed.http.post("/v1/verifications", json={"to": TO}, headers=bearer(bed.live))
    assert started.status_code == 201, started.text
    text = _otp_text(bed)
    code = CODE.search(text)
    assert code is not None

    checked = await bed.http.post(
        f"/v1/verifications/{started.json()['id']}/check",
        json={"code": code[0]},
        headers=bearer(bed.live),
    )

    assert text == f"Dogrulama kodunuz: {code[0]}. Kimseyle paylasmayin."
    assert (len(bed.netgsm.otp_sends), len(bed.netgsm.sends)) == (1, 0)
    assert checked.json()["status"] == "approved"
    [send] = started.json()["sends"]
    assert (send["provider"], send["status"]) == ("sms_a", "sent")
    record = await bed.http.get(f"/v1/messages/{send['job_id']}", headers=bearer(bed.live))
    assert record.json()["body"] == "Doğrulama kodunuz: ******. Kimseyle paylaşmayın."


async def test_without_the_otp_package_the_code_goes_the_normal_way(bed: OtpBed) -> None:
    bed.netgsm.otp_package = False
    started = await bed.http.post("/v1/verifications", json={"to": TO}, headers=bearer(bed.live))
    assert started.status_code == 201, started.text
    sent = bed.netgsm.sends[-1].json
    assert isinstance(sent, dict)
    text = sent["messages"][0]["msg"]
    code = CODE.search(text)
    assert code is not None

    checked = await bed.http.post(
        f"/v1/verifications/{started.json()['id']}/check",
        json={"code": code[0]},
        headers=bearer(bed.live),
    )

    assert (len(bed.netgsm.otp_sends), len(bed.netgsm.sends)) == (1, 1)
    assert text.startswith("Doğrulama kodunuz: ")  # the normal route keeps Turkish letters
    assert sent["iysfilter"] == "0"  # a code is informational
    assert checked.json()["status"] == "approved"


async def test_an_ordinary_message_never_takes_the_otp_route(bed: OtpBed) -> None:
    sent = await bed.http.post(
        "/v1/messages", json={"to": TO, "body": "Kodunuz 123456"}, headers=bearer(bed.live)
    )

    assert sent.status_code in (200, 201), sent.text
    assert (len(bed.netgsm.otp_sends), len(bed.netgsm.sends)) == (0, 1)
