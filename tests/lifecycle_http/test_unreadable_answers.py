"""A 2xx answer we cannot read, through the REST app, every live adapter and its
loopback fake wrapped in fault injection.

A 2xx means the request arrived; a body in the wrong format (a captive portal's page) or cut
mid-way does not say what became of it. The provider may have taken the message, so the send
must not fall back (that could send the SMS twice): the message ends ``unknown`` with
``PROVIDER_OUTCOME_UNKNOWN``, the quota unit is kept, and a report that names the attempt
can still settle it.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from _support import bearer, serving
from fakes._server import serve
from fakes.faults import Faults
from fakes.iletimerkezi import IletimerkeziFake
from fakes.jasmin import JasminFake
from fakes.kannel import KannelFake
from fakes.mutlucell import FakeMutlucell
from fakes.netgsm import NetgsmFake
from fakes.telegram import TelegramFake
from fakes.verimor import FakeVerimor
from fakes.whatsapp import WhatsAppFake

from unified_messaging import ManualClock, Messenger, Vault
from unified_messaging.asgi import create_app
from unified_messaging.providers.registry import LIVE_ADAPTERS

UNKNOWN = "PROVIDER_OUTCOME_UNKNOWN"


@dataclass(frozen=True)
class Provider:
    """A provider code, its fake, and how a connection of it is set up against the fake."""

    code: str
    fake: Callable[[], Any]
    credentials: Callable[[Any], dict[str, str]]
    to: str = "+905551234567"
    sender: str | None = "UMTEST"
    label: str = ""

    @property
    def name(self) -> str:
        return self.label or self.code


def _whatsapp(fake: WhatsAppFake) -> dict[str, str]:
    return {
        "access_token": fake.access_token,
        "phone_number_id": fake.phone_number_id,
        "app_secret": fake.app_secret,
        "verify_token": "verify-me",
    }


PROVIDERS = [
    Provider("sms_a", NetgsmFake, lambda f: {"usercode": f.usercode, "password": f.password}),
    Provider("sms_b", IletimerkeziFake, lambda f: {"api_key": f.key, "api_hash": f.hash}),
    Provider("sms_c", FakeVerimor, lambda f: {"username": f.username, "password": f.password}),
    Provider("sms_d", FakeMutlucell, lambda f: {"username": f.username, "password": f.password}),
    Provider("sms_e", KannelFake, lambda f: {"username": f.username, "password": f.password}),
    Provider(
        "sms_e",
        JasminFake,
        lambda f: {"gateway": "jasmin", "username": f.username, "password": f.password},
        label="sms_e-jasmin",
    ),
    Provider("chatbot", TelegramFake, lambda f: {"bot_token": f.token}, to="4242", sender=None),
    Provider("bizchat", WhatsAppFake, lambda f: _whatsapp(f), sender=None),
]
BY_CODE = {p.code: p for p in PROVIDERS if not p.label}


@dataclass
class Rig:
    messenger: Messenger
    clock: ManualClock
    client: httpx.AsyncClient
    url: str
    key: str
    workspace_id: str
    primary: Faults
    backup: Faults | None

    async def send(self, provider: Provider, fallback: list[str]) -> httpx.Response:
        body: dict[str, Any] = {
            "to": provider.to,
            "body": "Kodunuz 4821",
            "provider": provider.code,
        }
        if fallback:
            body["fallback"] = fallback
        return await self.client.post(f"{self.url}/v1/messages", json=body,
                                      headers=bearer(self.key))  # fmt: skip

    async def record(self, job_id: str) -> dict[str, Any]:
        answer = await self.client.get(f"{self.url}/v1/messages/{job_id}", headers=bearer(self.key))
        document: dict[str, Any] = answer.json()
        return document


def backup_of(provider: Provider) -> Provider | None:
    """A healthy SMS provider to fall back to (fallback is SMS only, D6)."""
    if not provider.code.startswith("sms_"):
        return None
    return BY_CODE["sms_a" if provider.code == "sms_b" else "sms_b"]


@contextlib.asynccontextmanager
async def rig(
    provider: Provider, *, retry_unavailable: bool = False, **credentials: str
) -> AsyncIterator[Rig]:
    backup = backup_of(provider)
    fake = provider.fake()
    primary = Faults(fake.app)
    backup_fake = backup.fake() if backup is not None else None
    spare = Faults(backup_fake.app) if backup_fake is not None else None
    clock = ManualClock()
    messenger = Messenger(clock=clock, vault=Vault.generate())
    async with contextlib.AsyncExitStack() as stack:
        a = await stack.enter_async_context(serve(primary))
        b = await stack.enter_async_context(serve(spare)) if spare is not None else None
        await stack.enter_async_context(messenger)
        url = await stack.enter_async_context(
            serving(create_app(messenger, worker=False), lifespan=False)
        )
        client = await stack.enter_async_context(httpx.AsyncClient(timeout=20))
        workspace = await messenger.workspaces.create("unreadable", recipient_limit=None)
        await messenger.workspaces.set_retry_unavailable(workspace.id, retry_unavailable)
        await messenger.connections.add(
            workspace.id, provider.code, base_url=a, default_sender=provider.sender,
            credentials={**provider.credentials(fake), **credentials},
        )  # fmt: skip
        if backup is not None and b is not None:
            await messenger.connections.add(
                workspace.id, backup.code, base_url=b, default_sender="UMTEST",
                credentials=backup.credentials(backup_fake),
            )  # fmt: skip
        key = await messenger.keys.create(workspace.id, livemode=True)
        yield Rig(messenger, clock, client, url, key.secret, workspace.id, primary, spare)


@pytest.mark.parametrize("how", ["wrong-content-type", "cut-body"])
@pytest.mark.parametrize("provider", PROVIDERS, ids=[p.name for p in PROVIDERS])
async def test_a_2xx_we_cannot_read_is_unknown_never_a_fallback_and_keeps_its_unit(
    provider: Provider, how: str
) -> None:
    async with rig(provider) as r:
        if how == "cut-body":
            r.primary.reset()  # "200", a first byte, then the connection is cut
        else:
            r.primary.garble()  # "200" with a captive portal's HTML page
        backup = backup_of(provider)
        response = await r.send(provider, [backup.code] if backup else [])

        assert response.status_code == 201, response.text
        sent = response.json()
        assert (sent["status"], sent["provider"]) == ("sent", provider.code)  # handed over
        record = await r.record(sent["job_id"])
        assert record["status"] == "unknown"
        assert record["error"]["code"] == UNKNOWN
        assert "HTTP 200" in record["error"]["message"]
        assert [(a["provider"], a["status"], a["error"]["code"]) for a in record["attempts"]] == [
            (provider.code, "unknown", UNKNOWN)
        ]
        assert r.primary.requests == 1  # not sent again either
        if r.backup is not None:
            assert r.backup.requests == 0  # no second provider for a message that may be out
        usage = await r.messenger.workspaces.quota_usage(r.workspace_id)
        assert usage.used == 1  # D17: the provider may have taken it


@pytest.mark.parametrize(
    ("code", "status", "body", "content_type"),
    [
        ("sms_a", 200, b"{}", "application/json"),  # JSON, but no code NetGSM documents
        ("sms_a", 200, b'{"code": "01", "jobid": "1"}', "application/json"),
        ("sms_d", 202, b"$88096496#1.0", "text/plain"),  # a 2xx that is not Mutlucell's 200
        (
            "sms_b",
            200,
            b'{"response": {"status": {"code": 201, "message": "?"}}}',
            "application/json",
        ),
    ],
    ids=["netgsm-no-code", "netgsm-undocumented-code", "mutlucell-202", "iletimerkezi-201"],
)
async def test_a_2xx_in_the_format_that_proves_nothing_is_unknown(
    code: str, status: int, body: bytes, content_type: str
) -> None:
    provider = BY_CODE[code]
    async with rig(provider) as r:
        r.primary.garble(status=status, body=body, content_type=content_type)
        backup = backup_of(provider)
        assert backup is not None
        response = await r.send(provider, [backup.code])

        record = await r.record(response.json()["job_id"])
        assert (record["status"], record["error"]["code"]) == ("unknown", UNKNOWN)
        assert r.backup is not None and r.backup.requests == 0


async def test_a_non_2xx_we_cannot_read_still_falls_back() -> None:
    """A 4xx or 5xx page proves the provider took nothing: fallback is safe, and the
    attempt says what the provider answered."""
    provider = BY_CODE["sms_a"]
    async with rig(provider) as r:
        r.primary.garble(status=502, body=b"<html><h1>502 Bad Gateway</h1></html>")
        response = await r.send(provider, ["sms_b"])

        assert (response.status_code, response.json()["provider"]) == (201, "sms_b")
        record = await r.record(response.json()["job_id"])
        first = record["attempts"][0]
        assert (first["status"], first["error"]["code"]) == ("unavailable", "PROVIDER_UNAVAILABLE")
        assert (
            "HTTP 502 (text/html): <html><h1>502 Bad Gateway</h1></html>"
            in (first["error"]["message"])
        )


@pytest.mark.parametrize("when", ["at-submit", "at-a-d7-retry"])
async def test_a_kannel_report_settles_a_message_left_unknown(when: str) -> None:
    """Kannel's reports name the id we put in the ``dlr-url`` before sending, so a report
    can still say what became of a message whose answer could not be read."""
    provider = BY_CODE["sms_e"]
    async with rig(provider, retry_unavailable=True, dlr_url="https://um.example") as r:
        if when == "at-a-d7-retry":
            r.primary.storm(503, count=1)
        else:
            r.primary.garble()
        response = await r.send(provider, ["sms_b"] if when == "at-submit" else [])
        if when == "at-a-d7-retry":
            assert response.json()["status"] == "queued"
            r.primary.garble()
            r.clock.advance(30)
            await r.messenger.worker().run_until_idle()
        job_id = response.json()["job_id"]
        attempt = (await r.record(job_id))["attempts"][-1]
        assert attempt["status"] == "unknown"
        connection = (await r.messenger.connections.list(r.workspace_id))[0]

        report = await r.client.get(
            f"{r.url}/v1/dlr/{connection.id}/{connection.dlr_token}",
            params={"id": attempt["provider_message_id"], "type": "1", "answer": "ACK"},
        )

        assert report.status_code == 200, report.text
        record = await r.record(job_id)
        assert record["status"] == "delivered"
        assert record["attempts"][-1]["status"] == "delivered"


async def test_a_d7_retry_that_gets_an_unreadable_2xx_ends_unknown_and_stops() -> None:
    """The worker's hand-over follows the same rule: D7 retries a provider that was down,
    and stops for good once it may have taken the message."""
    provider = BY_CODE["sms_a"]
    async with rig(provider, retry_unavailable=True) as r:
        r.primary.storm(503, count=1)
        response = await r.send(provider, [])
        assert response.json()["status"] == "queued"
        r.primary.garble()
        worker = r.messenger.worker()
        for _ in range(5):  # well past every back-off step of D7's first minute
            r.clock.advance(30)
            await worker.run_until_idle()

        record = await r.record(response.json()["job_id"])
        assert record["status"] == "unknown"
        assert [(a["status"], a["error"]["code"]) for a in record["attempts"]] == [
            ("unavailable", "PROVIDER_UNAVAILABLE"),
            ("unknown", UNKNOWN),
        ]
        assert r.primary.requests == 2  # never a third hand-over
        assert (await r.messenger.workspaces.quota_usage(r.workspace_id)).used == 1


async def test_a_bulk_batch_answered_with_an_unreadable_2xx_is_unknown_item_by_item() -> None:
    """NetGSM takes the batch in one request: every message in it may have been taken."""
    provider = BY_CODE["sms_a"]
    async with rig(provider) as r:
        r.primary.garble()
        items = [{"to": f"+90555123456{i}", "body": "Kodunuz 4821"} for i in range(3)]
        body = {"items": items, "provider": "sms_a", "fallback": ["sms_b"]}
        response = await r.client.post(f"{r.url}/v1/messages/bulk", json=body,
                                        headers=bearer(r.key))  # fmt: skip

        assert response.status_code == 201, response.text
        results = response.json()["results"]
        assert [result["status"] for result in results] == ["sent"] * 3
        for result in results:
            record = await r.record(result["job_id"])
            assert (record["status"], record["error"]["code"]) == ("unknown", UNKNOWN)
        assert r.primary.requests == 1  # one batch request, not sent again
        assert r.backup is not None and r.backup.requests == 0
        assert (await r.messenger.workspaces.quota_usage(r.workspace_id)).used == 3


def test_every_live_adapter_is_in_the_matrix() -> None:
    """The matrix above is what keeps each adapter on the one rule (HttpAdapter.unreadable):
    a new adapter must join it."""
    assert {p.code for p in PROVIDERS} == set(LIVE_ADAPTERS)


async def test_the_openapi_document_names_the_code() -> None:
    messenger = Messenger(vault=Vault.generate())
    async with messenger:
        transport = httpx.ASGITransport(app=create_app(messenger, worker=False))
        async with httpx.AsyncClient(transport=transport, base_url="http://um.test") as client:
            document = (await client.get("/v1/openapi.json")).json()

    error = document["components"]["schemas"]["ErrorObject"]["properties"]["code"]
    assert UNKNOWN in error["description"]
