"""Why a provider failed, through the REST app against real loopback sockets:
the cause (refused, TLS, the provider's status and words) is in the 502's message, in
``attempts[].error.message`` and in the routing log line, and never a credential."""

from __future__ import annotations

import logging
import socket
from urllib.parse import quote

import httpx
import pytest
from _support import bearer, serving
from fakes._server import serve
from fakes.faults import Faults
from fakes.iletimerkezi import IletimerkeziFake
from fakes.kannel import PASSWORD as KANNEL_PASSWORD
from fakes.kannel import KannelFake
from fakes.netgsm import NetgsmFake
from fakes.telegram import TOKEN, TelegramFake

from unified_messaging import ManualClock, Messenger, Vault
from unified_messaging.asgi import create_app

#: The longest excerpt of a provider's answer an error message may quote.
EXCERPT_CHARS = 200


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_a_send_no_provider_took_says_why_each_failed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="unified_messaging.routing")
    netgsm, iletimerkezi = NetgsmFake(), IletimerkeziFake()
    port = closed_port()
    messenger = Messenger(clock=ManualClock(), vault=Vault.generate())
    async with (
        serve(iletimerkezi.app) as plain_http,
        messenger,
        serving(create_app(messenger, worker=False), lifespan=False) as url,
        httpx.AsyncClient(timeout=20) as client,
    ):
        workspace = await messenger.workspaces.create("causes", recipient_limit=None)
        await messenger.connections.add(
            workspace.id, "sms_a", base_url=f"http://127.0.0.1:{port}", default_sender="ACME",
            credentials={"usercode": netgsm.usercode, "password": netgsm.password},
        )  # fmt: skip
        await messenger.connections.add(  # TLS spoken to a plain-HTTP server
            workspace.id, "sms_b", base_url=plain_http.replace("http:", "https:"),
            default_sender="ACME",
            credentials={"api_key": iletimerkezi.key, "api_hash": iletimerkezi.hash},
        )  # fmt: skip
        key = await messenger.keys.create(workspace.id, livemode=True)
        headers = bearer(key.secret)
        body = {"to": "+905551234567", "body": "Kodunuz 4821", "fallback": ["sms_b"]}
        response = await client.post(f"{url}/v1/messages", json=body, headers=headers)
        error = response.json()["error"]
        record = (await client.get(f"{url}/v1/messages/{error['job_id']}", headers=headers)).json()

    assert (response.status_code, error["code"]) == (502, "PROVIDER_UNAVAILABLE")
    refused = f"127.0.0.1:{port} refused the connection"
    tls = "the TLS handshake with 127.0.0.1:"
    assert refused in error["message"] and tls in error["message"]
    causes = [attempt["error"]["message"] for attempt in record["attempts"]]
    assert refused in causes[0]
    assert tls in causes[1]
    assert record["error"]["message"] == error["message"].removeprefix("The message was not sent. ")
    logged = [r.getMessage() for r in caplog.records if r.name == "unified_messaging.routing"]
    assert any(refused in line and error["job_id"] in line for line in logged)
    assert any(tls in line for line in logged)
    for text in [error["message"], *causes, *logged]:
        assert netgsm.password not in text
        assert iletimerkezi.key not in text and iletimerkezi.hash not in text


@pytest.mark.parametrize("provider", ["sms_e", "chatbot"])
async def test_an_answer_is_quoted_short_and_without_credentials(
    provider: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A proxy's error page may echo the request: Kannel's password is in its query string,
    Telegram's token in its path. The excerpt masks both, and stops at its cap."""
    caplog.set_level(logging.INFO, logger="unified_messaging.routing")
    kannel, telegram = KannelFake(), TelegramFake()
    if provider == "sms_e":
        fake_app, secret = kannel.app, KANNEL_PASSWORD
        credentials = {"username": kannel.username, "password": kannel.password}
        echoed = f"/cgi-bin/sendsms?username=tester&password={quote(KANNEL_PASSWORD)}&to=90555"
        to = "+905551234567"
    else:
        fake_app, secret = telegram.app, TOKEN
        credentials = {"bot_token": TOKEN}
        echoed = f"/bot{TOKEN}/sendMessage"
        to = "4242"
    faults = Faults(fake_app)
    faults.garble(status=503, body=f"Upstream error for {echoed} {'x' * 2000}".encode(),
                  content_type="text/plain")  # fmt: skip
    messenger = Messenger(clock=ManualClock(), vault=Vault.generate())
    async with (
        serve(faults) as base_url,
        messenger,
        serving(create_app(messenger, worker=False), lifespan=False) as url,
        httpx.AsyncClient(timeout=20) as client,
    ):
        workspace = await messenger.workspaces.create("quotes", recipient_limit=None)
        await messenger.connections.add(
            workspace.id, provider, base_url=base_url, credentials=credentials,
            default_sender="ACME" if provider == "sms_e" else None,
        )  # fmt: skip
        key = await messenger.keys.create(workspace.id, livemode=True)
        headers = bearer(key.secret)
        body = {"to": to, "body": "Kodunuz 4821"}
        response = await client.post(f"{url}/v1/messages", json=body, headers=headers)
        error = response.json()["error"]
        record = (await client.get(f"{url}/v1/messages/{error['job_id']}", headers=headers)).json()

    assert response.status_code == 502
    cause = record["attempts"][0]["error"]["message"]
    assert "HTTP 503" in cause and "Upstream error for" in cause
    assert len(cause) < EXCERPT_CHARS + 150  # the excerpt is capped, not the whole page
    logged = [r.getMessage() for r in caplog.records if r.name == "unified_messaging.routing"]
    assert any("HTTP 503" in line for line in logged)
    for text in [error["message"], cause, *logged]:
        assert secret not in text
        assert quote(secret) not in text
        assert secret.split(":")[-1] not in text
