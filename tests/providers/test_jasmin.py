"""The ``sms_e`` adapter for ``gateway=jasmin`` against a local fake speaking Jasmin's HTTP API."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
from fakes._server import serve
from fakes.jasmin import PASSWORD, USERNAME, Canned, JasminFake, Sent

from unified_messaging._domain import Connection
from unified_messaging._errors import InvalidCredentials, ProviderUnavailable, RequestInvalid
from unified_messaging.providers.base import (
    InboundCallback,
    ProviderAdapter,
    RepliesToReports,
    SubmitRequest,
)
from unified_messaging.providers.jasmin import REPORT_ACK, JasminAdapter
from unified_messaging.providers.kannel import KannelAdapter
from unified_messaging.providers.registry import LIVE_ADAPTERS, SMS_GATEWAY

BASE = "http://jasmin.test:1401"
PUBLIC = "https://sms.example.com/messaging"
TOKEN = "dlrTOKEN_abc-123"
CREDENTIALS = {"username": USERNAME, "password": PASSWORD, "dlr_url": PUBLIC, "gateway": "jasmin"}
TO = "+905321234567"


def connection(**changes: Any) -> Connection:
    values: dict[str, Any] = {
        "id": "conn_e",
        "workspace_id": "ws_1",
        "provider": "sms_e",
        "created_at": datetime(2026, 1, 1, tzinfo=UTC),
        "credentials": "v1.k.n.c",
        "base_url": BASE,
        "dlr_token": TOKEN,
    }
    values.update(changes)
    return Connection(**values)


def message(text: str = "Kodunuz 1234", *, sender: str | None = "ACME", **kw: Any) -> SubmitRequest:
    return SubmitRequest(job_id="job_1", to=TO, text=text, sender=sender, **kw)


async def no_sleep(_: float) -> None:
    return None


@pytest.fixture
def fake() -> JasminFake:
    return JasminFake()


@pytest.fixture
async def client(fake: JasminFake) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=fake.app)) as http:
        yield http


def jasmin(client: httpx.AsyncClient, **credentials: str) -> JasminAdapter:
    return JasminAdapter(
        connection(), {**CREDENTIALS, **credentials}, client=client, sleep=no_sleep
    )


@pytest.fixture
def adapter(client: httpx.AsyncClient) -> JasminAdapter:
    return jasmin(client)


# --- the choice of gateway ------------------------------------------------------------------------


def test_gateway_jasmin_picks_the_jasmin_adapter_and_kannel_stays_the_default() -> None:
    assert LIVE_ADAPTERS["sms_e"] is SMS_GATEWAY
    chosen = SMS_GATEWAY.factory(connection(), CREDENTIALS)
    default = SMS_GATEWAY.factory(connection(), {"username": "u", "password": "p"})
    kannel = SMS_GATEWAY.factory(
        connection(), {"username": "u", "password": "p", "gateway": "kannel"}
    )

    assert isinstance(chosen, JasminAdapter)
    assert isinstance(chosen, ProviderAdapter)
    assert (chosen.code, chosen.max_batch) == ("sms_e", 1)
    assert isinstance(default, KannelAdapter)
    assert isinstance(kannel, KannelAdapter)


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"gateway": "smpp"}, "gateway"),
        ({"smsc": "route1"}, "smsc is a Kannel setting"),
        ({"max_parts": "0"}, "max_parts"),
    ],
)
def test_settings_of_the_other_gateway_are_refused_by_name(
    changes: dict[str, str], named: str
) -> None:
    with pytest.raises(InvalidCredentials) as caught:
        SMS_GATEWAY.factory(connection(), {**CREDENTIALS, **changes})

    assert named in caught.value.message
    assert PASSWORD not in caught.value.message


def test_a_connection_without_base_url_is_refused_clearly() -> None:
    with pytest.raises(InvalidCredentials) as caught:
        JasminAdapter(connection(base_url=None), CREDENTIALS)

    assert "base_url" in caught.value.message


def test_each_adapter_refuses_the_other_gateways_credentials() -> None:
    with pytest.raises(InvalidCredentials):
        KannelAdapter(connection(), CREDENTIALS)
    with pytest.raises(InvalidCredentials):
        JasminAdapter(connection(), {**CREDENTIALS, "gateway": "kannel"})


# --- sending ------------------------------------------------------------------------------------


async def test_the_request_is_a_send_form_post_with_jasmins_fields(
    adapter: JasminAdapter, fake: JasminFake
) -> None:
    outcome = await adapter.submit(message())

    [received] = fake.received
    assert (received.method, received.path) == ("POST", "/send")
    assert received.content_type == "application/x-www-form-urlencoded"
    assert received.args == {
        "username": USERNAME,
        "password": PASSWORD,
        "to": "905321234567",
        "from": "ACME",
        "coding": "0",
        "content": "Kodunuz 1234",
        "dlr": "yes",
        "dlr-url": f"{PUBLIC}/v1/dlr/conn_e/{TOKEN}",
        "dlr-level": "3",
    }
    [sent] = fake.sent
    assert (outcome.kind, outcome.provider_message_id) == ("accepted", sent.id)


async def test_to_is_the_international_number_without_its_plus(
    adapter: JasminAdapter, fake: JasminFake
) -> None:
    # Jasmin's HTTP API (/send, "to": e.g. 20203050) passes ``to`` on to the SMSC as the
    # destination_addr: a '+' there, with TON 1 (international), is no number.
    await adapter.submit(message())

    assert fake.sent[0].to == "905321234567"


async def test_turkish_text_goes_as_ucs2_hex_content_and_arrives_intact(
    adapter: JasminAdapter, fake: JasminFake
) -> None:
    text = "Şifreniz: 1234. İyi günler 👋"

    outcome = await adapter.submit(message(text))

    assert outcome.kind == "accepted"
    args = fake.received[0].args
    assert (args["coding"], "content" in args) == ("8", False)
    assert fake.sent[0].text == text


async def test_without_a_dlr_url_or_a_sender_neither_is_sent(
    client: httpx.AsyncClient, fake: JasminFake
) -> None:
    adapter = JasminAdapter(
        connection(), {"username": USERNAME, "password": PASSWORD, "gateway": "jasmin"},
        client=client,
    )  # fmt: skip

    outcome = await adapter.submit(message(sender=None))

    assert outcome.kind == "accepted"
    assert set(fake.received[0].args) == {"username", "password", "to", "coding", "content"}
    assert fake.sent[0].dlr_url is None


async def test_a_text_jasmin_would_cut_is_refused_before_sending(
    adapter: JasminAdapter, fake: JasminFake
) -> None:
    long_text = "x" * (5 * 153 + 1)  # six parts; Jasmin sends five and drops the rest

    outcome = await adapter.submit(message(long_text))

    assert outcome.kind == "rejected"
    assert outcome.error is not None
    assert outcome.error.code == "BODY_TOO_LONG"
    assert fake.received == []


async def test_max_parts_follows_the_gateways_setting(
    client: httpx.AsyncClient, fake: JasminFake
) -> None:
    fake.max_parts = 6
    long_text = "x" * (5 * 153 + 1)

    outcome = await jasmin(client, max_parts="6").submit(message(long_text))

    assert outcome.kind == "accepted"
    assert (fake.sent[0].parts, fake.sent[0].text) == (6, long_text)


AUTH = "PROVIDER_AUTH_FAILED"
REJECTED = "PROVIDER_REJECTED"


@pytest.mark.parametrize(
    ("arrange", "kind", "code"),
    [
        (lambda f: setattr(f, "password", "other"), "rejected", AUTH),
        (lambda f: f.denied.add("set_dlr_level"), "rejected", AUTH),
        (lambda f: setattr(f, "routes", False), "rejected", REJECTED),
        (lambda f: setattr(f, "balance", 0.0), "rejected", "INSUFFICIENT_CREDIT"),
        (lambda f: setattr(f, "source_filter", re.compile("^BANK$")), "rejected",
         "SENDER_NOT_APPROVED"),
        (lambda f: f.script(Canned(400, 'Error "Argument [foo] is unknown."')), "rejected",
         REJECTED),
        (lambda f: f.script(Canned(500, 'Error "Cannot send submit_sm, check log"')),
         "unavailable", "PROVIDER_UNAVAILABLE"),
        (lambda f: f.script(Canned(503, 'Error "InterceptorPB not connected !"')),
         "unavailable", "PROVIDER_UNAVAILABLE"),
        # A 2xx that is not Jasmin's answer may still mean it was taken.
        (lambda f: f.script(Canned(200, "<html>portal login</html>", "text/html")),
         "unknown", "PROVIDER_OUTCOME_UNKNOWN"),
        (lambda f: f.script(Canned(200, 'Error "quoted but 200"')),
         "unknown", "PROVIDER_OUTCOME_UNKNOWN"),
        (lambda f: f.script(Canned(404, "No Such Resource", "text/html")), "rejected", REJECTED),
    ],
    ids=["auth", "authorization", "no-route", "charging", "source-filter", "unknown-arg",
         "500", "503", "html-200", "error-200", "404"],
)  # fmt: skip
async def test_gateway_answers_map_to_outcomes(
    adapter: JasminAdapter, fake: JasminFake, arrange: Any, kind: str, code: str
) -> None:
    arrange(fake)

    outcome = await adapter.submit(message())

    assert (outcome.kind, outcome.provider_message_id) == (kind, None)
    assert outcome.error is not None
    assert outcome.error.code == code
    assert PASSWORD not in outcome.error.message
    assert fake.sent == []


async def test_throughput_exceeded_pauses_the_connection_for_a_second(
    adapter: JasminAdapter, fake: JasminFake
) -> None:
    fake.throughput_exceeded = True

    outcome = await adapter.submit(message())

    assert (outcome.kind, outcome.retry_after) == ("unavailable", 1.0)
    assert "throughput" in outcome.error.message  # type: ignore[union-attr]


async def test_a_429_keeps_its_retry_after(adapter: JasminAdapter, fake: JasminFake) -> None:
    fake.script(Canned(429, "slow down", headers={"Retry-After": "7"}))

    outcome = await adapter.submit(message())

    assert (outcome.kind, outcome.retry_after) == ("unavailable", 7.0)


async def test_a_read_time_out_is_unknown_and_never_resent() -> None:
    # The request was sent: the gateway may have it (docs/decisions.md).
    calls = 0

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        raise httpx.ReadTimeout("slow", request=request)

    http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    adapter = JasminAdapter(connection(), CREDENTIALS, client=http, sleep=no_sleep)

    outcome = await adapter.submit(message())

    assert (outcome.kind, calls) == ("unknown", 1)


async def test_sends_over_real_loopback_http(fake: JasminFake) -> None:
    async with serve(fake.app) as base:
        adapter = JasminAdapter(connection(base_url=base), CREDENTIALS)
        outcome = await adapter.submit(message("Merhaba dünya"))
        await adapter.aclose()

    assert outcome.kind == "accepted"
    assert fake.sent[0].text == "Merhaba dünya"


# --- delivery reports ---------------------------------------------------------------------------


def thrown(fake: JasminFake, message_status: str, **options: Any) -> InboundCallback:
    """The form POST Jasmin's DLR thrower makes for the last message sent."""
    form = fake.report_form(fake.sent[-1], message_status, **options)
    body = urlencode(form).encode()
    return InboundCallback("POST", {"content-type": "application/x-www-form-urlencoded"}, {}, body)


@pytest.mark.parametrize(
    ("level", "message_status", "status", "code"),
    [
        (1, "ESME_ROK", "pending", None),
        (1, "ESME_RINVDSTADR", "rejected", "INVALID_RECIPIENT"),
        (1, "ESME_RTHROTTLED", "rejected", REJECTED),
        (2, "DELIVRD", "delivered", None),
        (2, "ACCEPTD", "pending", None),
        (2, "EXPIRED", "expired", None),
        (2, "REJECTD", "rejected", REJECTED),
        (2, "UNDELIV", "failed", "RECIPIENT_UNREACHABLE"),
        (2, "DELETED", "failed", "RECIPIENT_UNREACHABLE"),
        (2, "UNKNOWN", "unknown", None),
    ],
)
async def test_every_jasmin_report_status_is_read(
    adapter: JasminAdapter,
    fake: JasminFake,
    level: int,
    message_status: str,
    status: str,
    code: str | None,
) -> None:
    outcome = await adapter.submit(message())

    [report] = adapter.parse_reports(thrown(fake, message_status, level=level, err="011"))

    assert (report.provider_message_id, report.status) == (outcome.provider_message_id, status)
    assert report.provider_status == f"{level}:{message_status}"
    assert (report.error.code if report.error else None) == code
    if report.error:
        assert message_status in report.error.message
        assert "Kodunuz" not in report.error.message  # the receipt's text excerpt stays out


async def test_a_report_thrown_with_get_is_read_too(
    adapter: JasminAdapter, fake: JasminFake
) -> None:
    await adapter.submit(message())
    form = fake.report_form(fake.sent[-1], "DELIVRD")

    [report] = adapter.parse_reports(InboundCallback("GET", {}, form))

    assert report.status == "delivered"


@pytest.mark.parametrize(
    "body",
    [b"", b"id=abc", b"message_status=DELIVRD", b"id=abc&message_status=SOMETHING"],
)
def test_a_body_that_is_no_jasmin_report_is_a_clear_400(
    adapter: JasminAdapter, body: bytes
) -> None:
    callback = InboundCallback("POST", {}, {}, body)

    with pytest.raises(RequestInvalid):
        adapter.parse_reports(callback)


def test_the_report_answer_is_jasmins_acknowledgement(adapter: JasminAdapter) -> None:
    assert isinstance(adapter, RepliesToReports)
    assert adapter.report_reply == REPORT_ACK == "ACK/Jasmin"


def test_the_fakes_report_form_is_what_the_thrower_posts(fake: JasminFake) -> None:
    # The fields of jasmin/routing/throwers.py: four always, seven more at terminal level.
    sent = Sent("id-1", TO, "ACME", 0, "Kodunuz 1234", 1, PUBLIC, 3, "POST")

    assert set(fake.report_form(sent, "ESME_ROK", level=1)) == {
        "id", "level", "message_status", "connector",
    }  # fmt: skip
    assert set(fake.report_form(sent, "DELIVRD")) == {
        "id", "level", "message_status", "connector", "id_smsc", "sub", "dlvrd", "subdate",
        "donedate", "err", "text",
    }  # fmt: skip


# --- credentials check ----------------------------------------------------------------------------


async def test_check_accepts_a_good_user_without_sending(
    adapter: JasminAdapter, fake: JasminFake
) -> None:
    await adapter.check()

    assert [r.path for r in fake.received] == ["/balance"]
    assert fake.sent == []


async def test_check_refuses_a_bad_password(client: httpx.AsyncClient) -> None:
    with pytest.raises(InvalidCredentials):
        await jasmin(client, password="wrong").check()


async def test_check_on_an_unreachable_gateway_is_provider_unavailable() -> None:
    adapter = JasminAdapter(connection(base_url="http://127.0.0.1:1"), CREDENTIALS, sleep=no_sleep)
    with pytest.raises(ProviderUnavailable):
        await adapter.check()
    await adapter.aclose()
