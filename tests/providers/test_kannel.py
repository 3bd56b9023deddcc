"""The ``sms_e`` adapter (Kannel ``sendsms``) against a local fake speaking smsbox's format."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from fakes._server import serve
from fakes.kannel import PASSWORD, USERNAME, Canned, KannelFake

from unified_messaging._domain import Connection
from unified_messaging._errors import InvalidCredentials, ProviderUnavailable, RequestInvalid
from unified_messaging.providers.base import InboundCallback, ProviderAdapter, SubmitRequest
from unified_messaging.providers.kannel import (
    MAX_ANSWER_BYTES,
    Credentials,
    KannelAdapter,
)
from unified_messaging.providers.registry import LIVE_ADAPTERS

BASE = "http://kannel.test:13013"
PUBLIC = "https://sms.example.com/messaging"
TOKEN = "dlrTOKEN_abc-123"
CREDENTIALS = {"username": USERNAME, "password": PASSWORD, "dlr_url": PUBLIC}


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
    return SubmitRequest(job_id="job_1", to="+905321234567", text=text, sender=sender, **kw)


async def no_sleep(_: float) -> None:
    return None


@pytest.fixture
def fake() -> KannelFake:
    return KannelFake()


@pytest.fixture
async def client(fake: KannelFake) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=fake.app)) as http:
        yield http


@pytest.fixture
def adapter(client: httpx.AsyncClient) -> KannelAdapter:
    return KannelAdapter(connection(), CREDENTIALS, client=client, sleep=no_sleep)


def mock_adapter(handler: Any, **kw: Any) -> KannelAdapter:
    http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    return KannelAdapter(connection(), CREDENTIALS, client=http, sleep=no_sleep, **kw)


# --- the adapter's identity -----------------------------------------------------------------------


def test_is_a_provider_adapter_for_sms_e_with_no_batches(adapter: KannelAdapter) -> None:
    assert isinstance(adapter, ProviderAdapter)
    assert (adapter.code, adapter.max_batch) == ("sms_e", 1)
    spec = LIVE_ADAPTERS["sms_e"]
    assert (spec.code, spec.credentials) == ("sms_e", Credentials)
    assert isinstance(spec.factory(connection(), CREDENTIALS), KannelAdapter)


# --- sending ------------------------------------------------------------------------------------


async def test_accepted_answer_gives_the_id_we_put_in_the_dlr_url(
    adapter: KannelAdapter, fake: KannelFake
) -> None:
    outcome = await adapter.submit(message())

    assert outcome.kind == "accepted"
    assert outcome.provider_message_id is not None
    # The job and its attempt: known before the call (see minted_id).
    assert outcome.provider_message_id == "job_1.0"
    assert f"id={outcome.provider_message_id}&" in fake.received[0].params["dlr-url"]


async def test_each_attempt_of_a_job_gets_its_own_minted_id(
    adapter: KannelAdapter, fake: KannelFake
) -> None:
    first = await adapter.submit(message())
    again = await adapter.submit(message(attempt=2))

    assert (first.provider_message_id, again.provider_message_id) == ("job_1.0", "job_1.2")


async def test_the_request_is_a_sendsms_get_with_kannel_parameters(
    adapter: KannelAdapter, fake: KannelFake
) -> None:
    outcome = await adapter.submit(message())

    [sent] = fake.received
    assert (sent.method, sent.path) == ("GET", "/cgi-bin/sendsms")
    assert sent.params == {
        "username": USERNAME,
        "password": PASSWORD,
        "to": "+905321234567",
        "from": "ACME",
        "text": "Kodunuz 1234",
        "charset": "UTF-8",
        "coding": "0",
        "dlr-mask": "31",
        "dlr-url": (
            f"{PUBLIC}/v1/dlr/conn_e/{TOKEN}?id={outcome.provider_message_id}"
            "&type=%d&answer=%A&ts=%T&to=%p"
        ),
    }
    # The password's '&', '=' and ' ' are escaped, so it cannot leak into other parameters.
    assert b"password=p%40ss+word%26%3D" in sent.raw_query


async def test_without_a_dlr_url_no_report_is_asked_for(
    client: httpx.AsyncClient, fake: KannelFake
) -> None:
    credentials = {"username": USERNAME, "password": PASSWORD}
    adapter = KannelAdapter(connection(), credentials, client=client)

    assert (await adapter.submit(message())).kind == "accepted"
    assert "dlr-url" not in fake.received[0].params
    assert "dlr-mask" not in fake.received[0].params


async def test_the_smsc_route_is_passed_when_configured(
    client: httpx.AsyncClient, fake: KannelFake
) -> None:
    adapter = KannelAdapter(connection(), {**CREDENTIALS, "smsc": "turkcell"}, client=client)

    await adapter.submit(message())

    assert fake.received[0].params["smsc"] == "turkcell"


async def test_turkish_characters_and_emoji_arrive_intact_as_ucs2(
    adapter: KannelAdapter, fake: KannelFake
) -> None:
    text = "Şişli'de ğüıöç İĞÜ — kargonuz yolda 🚚🎉"

    assert (await adapter.submit(message(text))).kind == "accepted"

    assert fake.received[0].params["text"] == text
    assert fake.received[0].params["coding"] == "2"
    assert b"%F0%9F%9A%9A" in fake.received[0].raw_query


@pytest.mark.parametrize(
    ("encoding", "coding"), [("gsm7", "0"), ("gsm7_turkish", "2"), ("ucs2", "2")]
)
async def test_coding_follows_the_chosen_encoding(
    adapter: KannelAdapter, fake: KannelFake, encoding: Any, coding: str
) -> None:
    # Kannel cannot build the Turkish shift-table UDH, so that text goes as UCS-2.
    await adapter.submit(message("Çay saati", encoding=encoding))

    assert fake.received[0].params["coding"] == coding


async def test_no_sender_leaves_from_out_for_the_gateways_default() -> None:
    fake = KannelFake(global_sender="KANNEL")
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=fake.app)) as http:
        adapter = KannelAdapter(connection(), CREDENTIALS, client=http)
        assert (await adapter.submit(message(sender=None))).kind == "accepted"
    assert "from" not in fake.received[0].params


@pytest.mark.parametrize("mode", ["queued", "sent", "success-id"])
async def test_every_success_answer_style_is_accepted(
    adapter: KannelAdapter, fake: KannelFake, mode: Any
) -> None:
    fake.mode = mode

    outcome = await adapter.submit(message())

    assert outcome.kind == "accepted"
    assert f"id={outcome.provider_message_id}&" in fake.received[0].params["dlr-url"]


# --- refusals -----------------------------------------------------------------------------------


async def test_a_wrong_password_is_rejected_as_an_auth_failure(client: httpx.AsyncClient) -> None:
    adapter = KannelAdapter(connection(), {**CREDENTIALS, "password": "wrong"}, client=client)

    outcome = await adapter.submit(message())

    assert outcome.kind == "rejected"
    assert outcome.error is not None
    assert outcome.error.code == "PROVIDER_AUTH_FAILED"
    assert "Authorization failed for sendsms" in outcome.error.message


async def test_a_missing_sender_without_a_global_one_is_rejected(adapter: KannelAdapter) -> None:
    outcome = await adapter.submit(message(sender=None))

    assert outcome.kind == "rejected"
    assert outcome.error is not None
    assert outcome.error.code == "PROVIDER_REJECTED"
    assert "Sender missing and no global set, rejected" in outcome.error.message


@pytest.mark.parametrize(
    ("canned", "kind", "code"),
    [
        (Canned(403, "Authorization failed for sendsms"), "rejected", "PROVIDER_AUTH_FAILED"),
        (Canned(403, "Not routable. Do not try again."), "rejected", "PROVIDER_REJECTED"),
        (Canned(400, "Missing receiver number, rejected"), "rejected", "PROVIDER_REJECTED"),
        (
            Canned(400, "Number(s) has/have been denied by white- and/or black-lists."),
            "rejected",
            "PROVIDER_REJECTED",
        ),
        (Canned(400, "Charset or body misformed, rejected"), "rejected", "PROVIDER_REJECTED"),
        (Canned(404, "Unknown request."), "rejected", "PROVIDER_REJECTED"),
        (Canned(412, 'Error "No route found"'), "rejected", "PROVIDER_REJECTED"),
        (Canned(503, "Temporal failure, try again later."), "unavailable", "PROVIDER_UNAVAILABLE"),
        (Canned(500, "Sending failed."), "unavailable", "PROVIDER_UNAVAILABLE"),
        (Canned(302, "", headers={"Location": "/login"}), "unavailable", "PROVIDER_UNAVAILABLE"),
    ],
    ids=lambda v: v.body if isinstance(v, Canned) else v,
)
async def test_gateway_answers_map_to_outcomes(
    adapter: KannelAdapter, fake: KannelFake, canned: Canned, kind: str, code: str
) -> None:
    fake.script(canned)

    outcome = await adapter.submit(message())

    assert (outcome.kind, outcome.provider_message_id) == (kind, None)
    assert outcome.error is not None
    assert outcome.error.code == code
    if canned.body:
        assert str(canned.body) in outcome.error.message


async def test_throttling_is_unavailable_with_the_retry_after(
    adapter: KannelAdapter, fake: KannelFake
) -> None:
    fake.script(Canned(429, "Too many requests", headers={"Retry-After": "7"}))

    outcome = await adapter.submit(message())

    assert (outcome.kind, outcome.retry_after) == ("unavailable", 7.0)


@pytest.mark.parametrize(
    "canned",
    [
        Canned(200, "<html><body><h1>Welcome to the hotel Wi-Fi</h1></body></html>"),
        Canned(502, "<html><head><title>502 Bad Gateway</title></head></html>"),
        Canned(200, ""),
        Canned(202, "0: Accep"),
        Canned(200, '{"status": "ok"}', content_type="application/json"),
        Canned(202, b"\xff\xfe\x00garbage"),
    ],
    ids=["html-200", "html-502", "empty", "truncated", "json", "binary"],
)
async def test_an_answer_that_is_no_sendsms_answer_is_never_accepted(
    adapter: KannelAdapter, fake: KannelFake, canned: Canned
) -> None:
    fake.script(canned)

    outcome = await adapter.submit(message())

    # A 2xx may mean the gateway took it (a report to our dlr-url can still settle it).
    assert outcome.kind == ("unknown" if 200 <= canned.status < 300 else "unavailable")
    assert (outcome.provider_message_id is not None) == (outcome.kind == "unknown")


async def test_a_huge_answer_is_unknown(adapter: KannelAdapter, fake: KannelFake) -> None:
    fake.script(Canned(202, b"0: Accepted for delivery" + b" " * (MAX_ANSWER_BYTES + 1)))

    outcome = await adapter.submit(message())

    assert outcome.kind == "unknown"
    assert outcome.error is not None
    assert "over" in outcome.error.message


class Endless(httpx.AsyncByteStream):
    """A chunked answer that never ends (no Content-Length to refuse it by)."""

    def __init__(self) -> None:
        self.sent = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield b"0: Accepted for delivery"
        while True:
            self.sent += 1
            yield b"x" * 1024


async def test_a_huge_answer_without_content_length_is_cut_off() -> None:
    stream = Endless()

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(202, stream=stream)

    outcome = await mock_adapter(handler).submit(message())

    assert outcome.kind == "unknown"
    assert stream.sent <= MAX_ANSWER_BYTES // 1024 + 1


async def test_the_password_never_appears_in_an_outcome(
    adapter: KannelAdapter, fake: KannelFake
) -> None:
    fake.script(Canned(400, f"Bad password {PASSWORD} for {USERNAME}"))

    outcome = await adapter.submit(message())

    assert outcome.error is not None
    assert PASSWORD not in outcome.error.message
    assert PASSWORD not in repr(adapter)
    assert PASSWORD not in repr(adapter.credentials)


# --- transport ----------------------------------------------------------------------------------


async def test_a_read_time_out_is_unknown_and_never_resent() -> None:
    calls: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        raise httpx.ReadTimeout("timed out", request=request)

    outcome = await mock_adapter(handler, connect_retries=3).submit(message())

    assert outcome.kind == "unknown"
    assert outcome.error is not None
    assert "read time-out" in outcome.error.message
    assert len(calls) == 1


async def test_a_slow_gateway_times_out_over_loopback(fake: KannelFake) -> None:
    fake.script(Canned(202, "0: Accepted for delivery", delay=0.5))
    async with serve(fake.app) as base:
        adapter = KannelAdapter(
            connection(base_url=base),
            CREDENTIALS,
            timeout=httpx.Timeout(5.0, read=0.1),
            sleep=no_sleep,
        )
        outcome = await adapter.submit(message())
        await adapter.aclose()

    assert outcome.kind == "unknown"
    assert len(fake.received) == 1


async def test_a_refused_connection_is_retried_then_unavailable() -> None:
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    adapter = KannelAdapter(
        connection(base_url="http://127.0.0.1:1"), CREDENTIALS, sleep=sleep, connect_retries=2
    )
    outcome = await adapter.submit(message())
    await adapter.aclose()

    assert outcome.kind == "unavailable"
    assert outcome.error is not None
    assert "could not be reached" in outcome.error.message
    assert len(sleeps) == 2


async def test_connect_errors_are_retried_connect_retries_times() -> None:
    calls: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        raise httpx.ConnectError("refused", request=request)

    outcome = await mock_adapter(handler, connect_retries=3).submit(message())

    assert outcome.kind == "unavailable"
    assert len(calls) == 4


async def test_a_text_over_the_users_max_messages_is_refused_before_the_call(
    adapter: KannelAdapter, fake: KannelFake
) -> None:
    # A sendsms-user without max-messages sends one part and drops the rest (its default 1).
    outcome = await adapter.submit(message("x" * 161))

    assert outcome.kind == "rejected"
    assert outcome.error is not None
    assert outcome.error.code == "BODY_TOO_LONG"
    assert "2 SMS parts" in outcome.error.message
    assert "max-messages" in outcome.error.message
    assert fake.received == []


async def test_max_parts_lets_longer_texts_through_counted_as_sent(
    client: httpx.AsyncClient, fake: KannelFake
) -> None:
    adapter = KannelAdapter(connection(), {**CREDENTIALS, "max_parts": "3"}, client=client)

    three = await adapter.submit(message("x" * (3 * 153)))
    # Turkish text is UCS-2 through Kannel (67 a part): 3 parts, never the shift's 2.
    turkish = await adapter.submit(message("ş" * (3 * 67)))
    four = await adapter.submit(message("ş" * (3 * 67 + 1)))

    assert (three.kind, turkish.kind, four.kind) == ("accepted", "accepted", "rejected")
    assert len(fake.received) == 2


async def test_sends_over_real_loopback_http(fake: KannelFake) -> None:
    async with serve(fake.app) as base:
        adapter = KannelAdapter(connection(base_url=base), CREDENTIALS)
        outcome = await adapter.submit(message("Merhaba dünya 👋"))
        await adapter.aclose()

    assert outcome.kind == "accepted"
    assert fake.received[0].params["text"] == "Merhaba dünya 👋"


# --- delivery reports ---------------------------------------------------------------------------


def callback(path_and_query: tuple[str, dict[str, str]]) -> InboundCallback:
    return InboundCallback(method="GET", headers={}, query=path_and_query[1])


@pytest.fixture
async def sent(adapter: KannelAdapter, fake: KannelFake) -> str:
    outcome = await adapter.submit(message())
    assert outcome.provider_message_id is not None
    return outcome.provider_message_id


RECEIPT = (
    "id:0A1B2C sub:001 dlvrd:001 submit date:2603020900 done date:2603020901 "
    "stat:{} err:{} text:Kodunuz 1234"
)


@pytest.mark.parametrize(
    ("dlr_type", "answer", "status", "provider_status", "code"),
    [
        (1, RECEIPT.format("DELIVRD", "000"), "delivered", "1:DELIVRD", None),
        (2, RECEIPT.format("UNDELIV", "001"), "failed", "2:UNDELIV", "RECIPIENT_UNREACHABLE"),
        (2, RECEIPT.format("EXPIRED", "000"), "expired", "2:EXPIRED", None),
        (2, RECEIPT.format("REJECTD", "00B"), "rejected", "2:REJECTD", "PROVIDER_REJECTED"),
        (2, RECEIPT.format("UNKNOWN", "000"), "unknown", "2:UNKNOWN", None),
        (2, "", "failed", "2", "RECIPIENT_UNREACHABLE"),
        (4, "", "pending", "4", None),
        (8, "ACK/", "pending", "8", None),
        (16, "NACK/0x0000000b/Invalid Destination Address", "rejected", "16", "PROVIDER_REJECTED"),
        # gw/dlr.h: DLR_EXPIRED is 0x20|DLR_FAIL (34), DLR_UNKNOWN 0x40|DLR_FAIL (66).
        (34, RECEIPT.format("EXPIRED", "000"), "expired", "34:EXPIRED", None),
        (34, "", "expired", "34", None),
        (66, RECEIPT.format("UNKNOWN", "000"), "unknown", "66:UNKNOWN", None),
        (66, "", "unknown", "66", None),
        (2, RECEIPT.format("DELETED", "000"), "failed", "2:DELETED", "RECIPIENT_UNREACHABLE"),
    ],
)
async def test_every_kannel_report_type_is_read(
    adapter: KannelAdapter,
    fake: KannelFake,
    sent: str,
    dlr_type: int,
    answer: str,
    status: str,
    provider_status: str,
    code: str | None,
) -> None:
    path, query = fake.report(fake.received[0], dlr_type, answer=answer, at=1772442060)

    [report] = adapter.parse_reports(InboundCallback("GET", {}, query))

    assert path == f"/messaging/v1/dlr/conn_e/{TOKEN}"
    assert (report.provider_message_id, report.status) == (sent, status)
    assert report.provider_status == provider_status
    assert report.occurred_at == datetime(2026, 3, 2, 9, 1, tzinfo=UTC)
    assert report.to == "+905321234567"
    assert (report.error.code if report.error else None) == code
    if report.error:
        # The receipt's excerpt of the message text stays out of the error.
        assert "Kodunuz" not in report.error.message


async def test_a_nack_report_names_the_smsc_error(
    adapter: KannelAdapter, fake: KannelFake, sent: str
) -> None:
    _, query = fake.report(
        fake.received[0], 16, answer="NACK/0x0000000b/Invalid Destination Address"
    )

    [report] = adapter.parse_reports(InboundCallback("GET", {}, query))

    assert report.error is not None
    assert "0x0000000b" in report.error.message
    assert "Invalid Destination Address" in report.error.message


def test_a_form_posted_report_is_read_too(adapter: KannelAdapter) -> None:
    body = b"id=abc123&type=1&ts=1772442060"
    headers = {"Content-Type": "application/x-www-form-urlencoded"}

    [report] = adapter.parse_reports(InboundCallback("POST", headers, {}, body))

    assert (report.provider_message_id, report.status) == ("abc123", "delivered")


def test_an_empty_callback_carries_no_reports(adapter: KannelAdapter) -> None:
    assert adapter.parse_reports(InboundCallback("GET", {}, {})) == []


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"type": "1"}, "id"),
        ({"id": "abc", "type": "%d"}, "type"),
        ({"id": "abc", "type": "0"}, "type"),
        ({"id": "abc", "type": "64"}, "type"),
        ({"id": "abc", "type": "32"}, "type"),
        ({"id": "abc", "type": "128"}, "type"),
        ({"id": "abc"}, "type"),
    ],
)
def test_a_malformed_report_is_a_clear_400(
    adapter: KannelAdapter, query: dict[str, str], field: str
) -> None:
    with pytest.raises(RequestInvalid) as caught:
        adapter.parse_reports(InboundCallback("GET", {}, query))

    assert caught.value.details[0].field == field


# --- credentials ----------------------------------------------------------------------------------


async def test_check_accepts_a_good_user_without_sending(
    adapter: KannelAdapter, fake: KannelFake
) -> None:
    await adapter.check()

    assert "to" not in fake.received[0].params


async def test_check_refuses_a_bad_password(client: httpx.AsyncClient) -> None:
    adapter = KannelAdapter(connection(), {**CREDENTIALS, "password": "nope"}, client=client)

    with pytest.raises(InvalidCredentials):
        await adapter.check()


async def test_check_on_an_unreachable_gateway_is_provider_unavailable() -> None:
    adapter = KannelAdapter(
        connection(base_url="http://127.0.0.1:1"), CREDENTIALS, sleep=no_sleep, connect_retries=0
    )
    with pytest.raises(ProviderUnavailable):
        await adapter.check()
    await adapter.aclose()


@pytest.mark.parametrize("missing", ["username", "password"])
def test_a_missing_credential_is_named_and_no_secret_is_printed(missing: str) -> None:
    credentials = {k: v for k, v in CREDENTIALS.items() if k != missing}

    with pytest.raises(InvalidCredentials) as caught:
        KannelAdapter(connection(), credentials)

    assert f"{missing} is missing" in caught.value.message
    assert PASSWORD not in caught.value.message


def test_a_connection_without_base_url_is_refused_clearly() -> None:
    with pytest.raises(InvalidCredentials) as caught:
        KannelAdapter(connection(base_url=None), CREDENTIALS)

    assert "base_url" in caught.value.message


@pytest.mark.parametrize(
    "dlr_url", ["ftp://x.example", "https://x.example/a?b=1", "https://x.example/%41", "x.example"]
)
def test_a_dlr_url_kannel_could_not_use_is_refused(dlr_url: str) -> None:
    with pytest.raises(InvalidCredentials) as caught:
        KannelAdapter(connection(), {**CREDENTIALS, "dlr_url": dlr_url})

    assert "dlr_url" in caught.value.message


def test_an_unknown_credential_is_named() -> None:
    with pytest.raises(InvalidCredentials) as caught:
        KannelAdapter(connection(), {**CREDENTIALS, "api_key": "x"})

    assert "api_key is not a credential" in caught.value.message
