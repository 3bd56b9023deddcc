"""The ``sms_c`` adapter against a local Verimor v2 that speaks the real wire format."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime

import httpx
import pytest
from fakes.verimor import FakeVerimor, serve

from unified_messaging._domain import Connection
from unified_messaging._errors import InvalidCredentials, ProviderUnavailable
from unified_messaging._types import Encoding, IysMode
from unified_messaging.providers.base import InboundCallback, SubmitRequest
from unified_messaging.providers.verimor import SPEC, Credentials, VerimorAdapter

NOW = datetime(2026, 1, 1, tzinfo=UTC)
TO = "+905321234567"


def connection(base_url: str | None = "http://verimor.test") -> Connection:
    return Connection(
        id="conn_c", workspace_id="ws_1", provider="sms_c", created_at=NOW,
        credentials="v1.k.n.c", base_url=base_url,
    )  # fmt: skip


def message(
    to: str = TO,
    text: str = "Merhaba",
    *,
    sender: str | None = "UMTEST",
    encoding: Encoding | None = "gsm7",
    iys_mode: IysMode = "informational",
    job_id: str = "msg_1",
) -> SubmitRequest:
    return SubmitRequest(
        job_id=job_id, to=to, text=text, sender=sender, encoding=encoding, iys_mode=iys_mode
    )


@pytest.fixture
def fake() -> FakeVerimor:
    return FakeVerimor()


@pytest.fixture
async def adapter(fake: FakeVerimor) -> AsyncIterator[VerimorAdapter]:
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=fake.app))
    adapter = VerimorAdapter(connection(), _credentials(fake), client=client)
    yield adapter
    await client.aclose()


def _credentials(fake: FakeVerimor) -> dict[str, str]:
    return {"username": fake.username, "password": fake.password}


# --- sending ------------------------------------------------------------------------------------


async def test_send_is_accepted_with_campaign_id_and_number(
    adapter: VerimorAdapter, fake: FakeVerimor
) -> None:
    outcome = await adapter.submit(message())
    assert outcome.kind == "accepted"
    assert outcome.provider_message_id == "20210:905321234567"
    assert list(fake.campaigns) == [20210]


async def test_wire_body_is_verimors_json(adapter: VerimorAdapter, fake: FakeVerimor) -> None:
    await adapter.submit(message(encoding="gsm7_turkish", text="Şifreniz: 1234"))
    [sent] = fake.sends()
    assert sent.method == "POST"
    assert sent.headers["content-type"] == "application/json; charset=utf-8"
    assert sent.json == {
        "username": "908501234567",
        "password": fake.password,
        "source_addr": "UMTEST",
        "datacoding": "1",
        "is_commercial": False,
        "messages": [{"msg": "Şifreniz: 1234", "dest": "905321234567"}],
    }


@pytest.mark.parametrize(
    ("encoding", "datacoding"),
    [("gsm7", "0"), ("gsm7_turkish", "1"), ("ucs2", "2"), (None, None)],
)
async def test_datacoding_follows_the_encoding(
    adapter: VerimorAdapter, fake: FakeVerimor, encoding: Encoding | None, datacoding: str | None
) -> None:
    await adapter.submit(message(encoding=encoding))
    assert fake.sends()[0].json.get("datacoding") == datacoding


@pytest.mark.parametrize(
    ("iys_mode", "commercial", "recipient_type"),
    [
        ("informational", False, None),
        ("commercial_individual", True, "BIREYSEL"),
        ("commercial_merchant", True, "TACIR"),
    ],
)
async def test_iys_flags_follow_the_connection_mode(
    adapter: VerimorAdapter,
    fake: FakeVerimor,
    iys_mode: IysMode,
    commercial: bool,
    recipient_type: str | None,
) -> None:
    assert (await adapter.submit(message(iys_mode=iys_mode))).kind == "accepted"
    body = fake.sends()[0].json
    assert body["is_commercial"] is commercial
    assert body.get("iys_recipient_type") == recipient_type


async def test_turkish_and_json_special_characters_arrive_intact(
    adapter: VerimorAdapter, fake: FakeVerimor
) -> None:
    text = 'Çağrı "ışık" <b>&amp;</b> \\ şöğüİı €{} \n yeni satır'
    await adapter.submit(message(text=text, encoding="ucs2"))
    assert fake.sends()[0].body.decode("utf-8").count("ı") >= 2  # raw UTF-8, not \\u escapes
    assert fake.campaigns[20210].messages[0]["msg"] == text


REFUSALS = [
    ("INVALID_SOURCE_ADDRESS", "rejected", "SENDER_NOT_APPROVED"),
    ("NUMERIC_SOURCE_ADDRESS_NOT_ALLOWED", "rejected", "SENDER_NOT_APPROVED"),
    ("MISSING_MESSAGE", "rejected", "BODY_REJECTED"),
    ("MESSAGE_TOO_LONG", "rejected", "BODY_TOO_LONG"),
    ("INVALID_PERIOD", "rejected", "PROVIDER_REJECTED"),
    ("INVALID_DELIVERY_TIME", "rejected", "PROVIDER_REJECTED"),
    ("INVALID_DATACODING", "rejected", "PROVIDER_REJECTED"),
    ("INVALID_UTF8", "rejected", "BODY_REJECTED"),
    ("INVALID_JSON", "rejected", "PROVIDER_REJECTED"),
    ("MISSING_DESTINATION_ADDRESS", "rejected", "PROVIDER_REJECTED"),
    ("MESSAGE_COUNT_LIMIT_EXCEEDED", "rejected", "PROVIDER_REJECTED"),
    ("MUKERRER_RAPORLAMA", "rejected", "DUPLICATE_MESSAGE"),
    ("FORBIDDEN_MESSAGE", "rejected", "BODY_REJECTED"),
    ("INSUFFICIENT_CREDITS", "rejected", "INSUFFICIENT_CREDIT"),
    ("MISSING_IYS_BRAND_CODE", "rejected", "IYS_NOT_CONFIGURED"),
    ("AHS_AUTHORIZATION_ERROR", "rejected", "IYS_NOT_CONFIGURED"),
    ("NO_AHS_BRAND_ERROR", "rejected", "IYS_NOT_CONFIGURED"),
    ("COMMERCIAL_SENDING_ERROR_UNDER_150K", "rejected", "IYS_NOT_CONFIGURED"),
    ("INVALID_IYS_RECIPIENT_TYPE", "rejected", "PROVIDER_REJECTED"),
    ("INVALID_DESTINATION_ADDRESS", "recipient_failed", "INVALID_RECIPIENT"),
    ("MISSING_CONSENT", "recipient_failed", "IYS_CONSENT_MISSING"),
    ("SOMETHING_NEW", "rejected", "PROVIDER_REJECTED"),
]


@pytest.mark.parametrize(("answer", "kind", "code"), REFUSALS)
async def test_every_refusal_code_maps_to_an_outcome(
    adapter: VerimorAdapter, fake: FakeVerimor, answer: str, kind: str, code: str
) -> None:
    fake.fail_with(answer)
    outcome = await adapter.submit(message())
    assert (outcome.kind, outcome.error and outcome.error.code) == (kind, code)
    assert outcome.error is not None
    assert answer in outcome.error.message


async def test_the_fakes_own_validation_answers_map_too(
    adapter: VerimorAdapter, fake: FakeVerimor
) -> None:
    outcome = await adapter.submit(message(sender="NOTMINE"))
    assert outcome.error is not None
    assert outcome.error.code == "SENDER_NOT_APPROVED"
    fake.credits = 0
    outcome = await adapter.submit(message())
    assert outcome.error is not None
    assert outcome.error.code == "INSUFFICIENT_CREDIT"


async def test_text_over_seven_parts_is_body_too_long(
    adapter: VerimorAdapter, fake: FakeVerimor
) -> None:
    outcome = await adapter.submit(message(text="a" * 1072))
    assert outcome.error is not None
    assert (outcome.kind, outcome.error.code) == ("rejected", "BODY_TOO_LONG")


async def test_refused_account_is_rejected_naming_no_secret(fake: FakeVerimor) -> None:
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=fake.app))
    wrong = {"username": fake.username, "password": "not-the-password"}
    adapter = VerimorAdapter(connection(), wrong, client=client)
    outcome = await adapter.submit(message())
    await client.aclose()
    assert outcome.error is not None
    assert (outcome.kind, outcome.error.code) == ("rejected", "PROVIDER_AUTH_FAILED")
    assert "not-the-password" not in outcome.error.message


async def test_a_refusal_that_echoes_the_password_is_blanked(
    adapter: VerimorAdapter, fake: FakeVerimor
) -> None:
    fake.answer(400, f"bad request: password={fake.password}")
    outcome = await adapter.submit(message())
    assert outcome.error is not None
    assert outcome.kind == "rejected"
    assert fake.password not in outcome.error.message
    assert "***" in outcome.error.message


# --- answers that are not Verimor speaking ------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "retry_after"),
    # An unreadable value ("²" passes str.isdigit) is as if absent; a huge one is bounded.
    [("30", 30.0), (None, 60.0), ("\u00b2", 60.0), ("99999999999", 86_400.0)],
)
async def test_throttling_is_unavailable_with_retry_after(
    adapter: VerimorAdapter, fake: FakeVerimor, header: str | None, retry_after: float
) -> None:
    fake.throttle(header)
    outcome = await adapter.submit(message())
    assert outcome.kind == "unavailable"
    assert outcome.retry_after == retry_after
    assert len(fake.sends()) == 1


@pytest.mark.parametrize("status", [500, 502, 503, 504])
async def test_server_errors_are_unavailable(
    adapter: VerimorAdapter, fake: FakeVerimor, status: int
) -> None:
    fake.answer(status, "Internal Server Error", headers={"Retry-After": "120"})
    outcome = await adapter.submit(message())
    assert outcome.kind == "unavailable"
    assert outcome.retry_after == 120.0
    assert len(fake.sends()) == 1  # a send that may have arrived is never posted again


@pytest.mark.parametrize("body", ["", "OK", "20210abc", '{"id": 20210}', "202 10", "-1"])
async def test_malformed_success_answer_is_never_accepted(
    adapter: VerimorAdapter, fake: FakeVerimor, body: str
) -> None:
    fake.answer(200, body)
    outcome = await adapter.submit(message())
    assert outcome.kind == "unknown"
    assert outcome.error is not None
    assert "campaign id" in outcome.error.message


@pytest.mark.parametrize("status", [200, 400, 502])
async def test_html_page_is_unknown_after_2xx_else_unavailable(
    adapter: VerimorAdapter, fake: FakeVerimor, status: int
) -> None:
    fake.answer(status, "<html><body>20210</body></html>", "text/html; charset=utf-8")
    outcome = await adapter.submit(message())
    assert outcome.kind == ("unknown" if status == 200 else "unavailable")
    assert outcome.error is not None
    if status < 500:
        assert "text/html" in outcome.error.message


async def test_huge_answer_is_not_read(adapter: VerimorAdapter, fake: FakeVerimor) -> None:
    fake.answer(200, b"1" * (4 * 1024 * 1024))
    outcome = await adapter.submit(message())
    assert outcome.kind == "unknown"
    assert outcome.error is not None
    assert "bytes" in outcome.error.message


async def test_unexpected_status_is_unavailable(adapter: VerimorAdapter, fake: FakeVerimor) -> None:
    fake.answer(404, "Not Found")
    assert (await adapter.submit(message())).kind == "unavailable"


async def test_request_too_large_is_rejected(adapter: VerimorAdapter, fake: FakeVerimor) -> None:
    fake.answer(413, "Request Entity Too Large")
    assert (await adapter.submit(message())).kind == "rejected"


class _CutOff(httpx.AsyncByteStream):
    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield b"202"
        raise httpx.ReadError("connection reset by peer")


async def test_answer_cut_off_mid_body_is_unknown_and_not_resent() -> None:
    calls: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return httpx.Response(200, headers={"content-type": "text/plain"}, stream=_CutOff())

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    adapter = VerimorAdapter(connection(), {"username": "u", "password": "p"}, client=client)
    outcome = await adapter.submit(message())
    await client.aclose()
    assert outcome.kind == "unknown"
    assert len(calls) == 1


async def test_read_time_out_is_unknown_and_not_retried(fake: FakeVerimor) -> None:
    fake.delay = 0.3
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    async with serve(fake.app) as base_url:
        adapter = VerimorAdapter(
            connection(base_url), _credentials(fake),
            timeout=httpx.Timeout(2.0, read=0.05), sleep=sleep,
        )  # fmt: skip
        outcome = await adapter.submit(message())
        await adapter.aclose()
    assert outcome.kind == "unknown"
    assert outcome.error is not None
    assert "read time-out" in outcome.error.message
    assert len(fake.sends()) == 1
    assert sleeps == []


async def test_connection_refused_is_retried_then_unavailable() -> None:
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    adapter = VerimorAdapter(
        connection("http://127.0.0.1:1"), {"username": "u", "password": "p"},
        sleep=sleep, connect_retries=2,
    )  # fmt: skip
    outcome = await adapter.submit(message())
    await adapter.aclose()
    assert outcome.kind == "unavailable"
    assert outcome.error is not None
    assert "could not be reached" in outcome.error.message
    assert len(sleeps) == 2


async def test_sends_over_real_loopback_http(fake: FakeVerimor) -> None:
    async with serve(fake.app) as base_url:
        adapter = VerimorAdapter(connection(base_url), _credentials(fake))
        outcome = await adapter.submit(message(text="Gerçek bağlantı"))
        await adapter.aclose()
    assert outcome.provider_message_id == "20210:905321234567"
    assert fake.campaigns[20210].messages == [{"msg": "Gerçek bağlantı", "dest": "905321234567"}]


# --- batches ------------------------------------------------------------------------------------


def numbers(count: int) -> Iterator[str]:
    return (f"+90532{n:07d}" for n in range(count))


async def test_batch_at_the_limit_is_one_campaign(
    adapter: VerimorAdapter, fake: FakeVerimor
) -> None:
    requests = [message(to, f"Mesaj {n}", job_id=f"m{n}") for n, to in enumerate(numbers(100))]
    outcomes = await adapter.submit_batch(requests)
    assert [o.kind for o in outcomes] == ["accepted"] * 100
    assert len({o.provider_message_id for o in outcomes}) == 100
    [sent] = fake.sends()
    assert [m["msg"] for m in sent.json["messages"]] == [f"Mesaj {n}" for n in range(100)]


async def test_batch_past_the_limit_is_a_caller_bug(
    adapter: VerimorAdapter, fake: FakeVerimor
) -> None:
    with pytest.raises(ValueError, match="at most 100"):
        await adapter.submit_batch([message(to) for to in numbers(101)])
    assert fake.sends() == []


async def test_batch_sends_a_repeated_number_in_a_campaign_of_its_own(
    adapter: VerimorAdapter, fake: FakeVerimor
) -> None:
    outcomes = await adapter.submit_batch([message(TO, "bir"), message(TO, "iki")])
    assert [o.provider_message_id for o in outcomes] == [
        "20210:905321234567",
        "20211:905321234567",
    ]
    assert len(fake.sends()) == 2


async def test_batch_groups_by_header_and_iys_mode(
    adapter: VerimorAdapter, fake: FakeVerimor
) -> None:
    outcomes = await adapter.submit_batch(
        [
            message("+905320000001"),
            message("+905320000002", sender="BASLIGIM"),
            message("+905320000003"),
            message("+905320000004", iys_mode="commercial_individual"),
        ]
    )
    assert [o.provider_message_id for o in outcomes] == [
        "20210:905320000001",
        "20211:905320000002",
        "20210:905320000003",
        "20212:905320000004",
    ]
    assert [s.json["source_addr"] for s in fake.sends()] == ["UMTEST", "BASLIGIM", "UMTEST"]


async def test_batch_refused_for_one_number_is_marked_refused_together(
    adapter: VerimorAdapter, fake: FakeVerimor
) -> None:
    # Routing finds the number by sending again (tests/lifecycle_http/test_batch_refusals_http.py).
    fake.bad_numbers = {"905320000001"}
    outcomes = await adapter.submit_batch([message(to) for to in numbers(3)])
    assert {(o.kind, o.error and o.error.code, o.batch_refusal) for o in outcomes} == {
        ("recipient_failed", "INVALID_RECIPIENT", True)
    }
    assert [len(s.json["messages"]) for s in fake.sends()] == [3]


async def test_one_message_refused_alone_carries_its_own_refusal(
    adapter: VerimorAdapter, fake: FakeVerimor
) -> None:
    fake.bad_numbers = {"905320000001"}
    [outcome] = await adapter.submit_batch([message("+905320000001")])
    assert (outcome.kind, outcome.batch_refusal) == ("recipient_failed", False)


async def test_a_text_over_seven_parts_fails_alone_before_any_campaign(
    adapter: VerimorAdapter, fake: FakeVerimor
) -> None:
    # The shift table's ş is 2 septets (TS 23.038): 1 + 1041 + 1 fills 7 parts of 149 exactly.
    texts = ["a" * 1071, "a" * 1072, "ş" + "a" * 1041, "ş" + "a" * 1042]
    encodings: list[Encoding] = ["gsm7", "gsm7", "gsm7_turkish", "gsm7_turkish"]
    requests = [message(to, t, encoding=e)
                for to, t, e in zip(numbers(4), texts, encodings, strict=True)]  # fmt: skip
    outcomes = await adapter.submit_batch(requests)
    assert [(o.kind, o.error and o.error.code) for o in outcomes] == [
        ("accepted", None), ("rejected", "BODY_TOO_LONG"),
        ("accepted", None), ("rejected", "BODY_TOO_LONG"),
    ]  # fmt: skip
    assert sorted(len(s.json["messages"]) for s in fake.sends()) == [1, 1]  # one per coding


async def test_batch_refused_for_the_account_fails_every_message_once(
    adapter: VerimorAdapter, fake: FakeVerimor
) -> None:
    fake.fail_with("INSUFFICIENT_CREDITS")
    outcomes = await adapter.submit_batch([message(to) for to in numbers(3)])
    assert {(o.kind, o.error and o.error.code) for o in outcomes} == {
        ("rejected", "INSUFFICIENT_CREDIT")
    }
    assert len(fake.sends()) == 1


@pytest.mark.parametrize(
    ("request_", "kind", "code"),
    [
        (message(to="+905321234"), "recipient_failed", "INVALID_RECIPIENT"),
        (message(to="+4915112345678"), "recipient_failed", "INVALID_RECIPIENT"),
        (message(sender=None), "rejected", "PROVIDER_REJECTED"),
        (message(sender="WAY-TOO-LONG-HEADER"), "rejected", "PROVIDER_REJECTED"),
        (message(text=""), "rejected", "BODY_REJECTED"),
        (message(text="bad \ud800 surrogate"), "rejected", "BODY_REJECTED"),
    ],
)
async def test_what_verimor_would_refuse_is_refused_without_a_request(
    adapter: VerimorAdapter, fake: FakeVerimor, request_: SubmitRequest, kind: str, code: str
) -> None:
    outcomes = await adapter.submit_batch([request_, message()])
    assert (outcomes[0].kind, outcomes[0].error and outcomes[0].error.code) == (kind, code)
    assert outcomes[1].kind == "accepted"
    assert len(fake.sends()[0].json["messages"]) == 1


# --- pushed reports -----------------------------------------------------------------------------

REPORTS = [
    ("DELIVERED", "delivered", None),
    ("SENDING", "pending", None),
    ("WAITING", "pending", None),
    ("SENT", "unknown", None),
    ("NOT_DELIVERED", "failed", "RECIPIENT_UNREACHABLE"),
    ("EXPIRED", "expired", None),
    ("INVALID_DESTINATION_ADDRESS", "failed", "INVALID_RECIPIENT"),
    ("REJECTED", "rejected", "PROVIDER_REJECTED"),
    ("DOUBLE_SEND_ERROR", "rejected", "DUPLICATE_MESSAGE"),
    ("BLACKLISTED_DESTINATION_ADDRESS", "failed", "RECIPIENT_BLACKLISTED"),
    ("NOT_ALLOWED_BY_IYS", "failed", "IYS_CONSENT_MISSING"),
    ("MISSING_TARIFF", "rejected", "PROVIDER_REJECTED"),
    ("ROUTE_NOT_AVAILABLE", "rejected", "PROVIDER_REJECTED"),
    ("NETWORK_NOTCOVERED", "rejected", "PROVIDER_REJECTED"),
    ("INTERNATIONAL_DENIED", "rejected", "PROVIDER_REJECTED"),
    ("SEND_ERROR", "failed", "PROVIDER_REJECTED"),
    ("A_STATUS_VERIMOR_ADDS_LATER", "unknown", None),
]


def push(body: bytes) -> InboundCallback:
    return InboundCallback("POST", {"content-type": "application/json"}, {}, body)


@pytest.mark.parametrize(("word", "status", "code"), REPORTS)
async def test_every_report_status_is_read(
    adapter: VerimorAdapter, fake: FakeVerimor, word: str, status: str, code: str | None
) -> None:
    accepted = await adapter.submit(message())
    reports = adapter.parse_reports(push(fake.report_push(20210, {"905321234567": word})))
    [report] = reports
    assert report.provider_message_id == accepted.provider_message_id
    assert (report.status, report.provider_status) == (status, word)
    assert (report.error and report.error.code) == code
    assert report.to == TO
    assert report.occurred_at == datetime(2026, 1, 2, 7, 0, 5, tzinfo=UTC)


async def test_report_of_a_batch_maps_back_to_each_recipient(
    adapter: VerimorAdapter, fake: FakeVerimor
) -> None:
    outcomes = await adapter.submit_batch([message(to) for to in numbers(3)])
    body = fake.report_push(20210, {"905320000001": "NOT_DELIVERED"}, gsm_error="1")
    reports = adapter.parse_reports(push(body))
    assert [r.provider_message_id for r in reports] == [o.provider_message_id for o in outcomes]
    assert [r.status for r in reports] == ["delivered", "failed", "delivered"]
    assert reports[1].error is not None
    assert "gsm_error 1" in reports[1].error.message


async def test_inbound_sms_in_a_push_are_skipped(
    adapter: VerimorAdapter, fake: FakeVerimor
) -> None:
    await adapter.submit(message())
    reports = adapter.parse_reports(push(fake.report_push(20210, with_inbound=True)))
    assert [r.status for r in reports] == ["delivered"]


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"not json",
        b"\xff\xfe",
        b"{}",
        b"[1, 2]",
        json.dumps([{"campaign_id": 1, "status": "DELIVERED"}]).encode(),
        json.dumps([{"campaign_id": "x", "dest": "905321234567", "status": "DELIVERED"}]).encode(),
        json.dumps([{"campaign_id": 1, "dest": "12", "status": "DELIVERED"}]).encode(),
    ],
)
def test_unreadable_pushes_give_no_reports(adapter: VerimorAdapter, body: bytes) -> None:
    assert adapter.parse_reports(push(body)) == []


def test_report_times_with_an_offset_are_kept(adapter: VerimorAdapter) -> None:
    entry = {
        "campaign_id": 7, "dest": "905321234567", "status": "EXPIRED",
        "done_at": "2026-01-02T10:00:00.000+03:00",
    }  # fmt: skip
    [report] = adapter.parse_reports(push(json.dumps([entry]).encode()))
    assert report.occurred_at == datetime(2026, 1, 2, 7, 0, tzinfo=UTC)
    assert report.provider_message_id == "7:905321234567"


async def test_verimor_pushes_nothing_to_poll(adapter: VerimorAdapter) -> None:
    assert await adapter.poll_reports(["20210:905321234567"]) == []


# --- credentials --------------------------------------------------------------------------------


async def test_check_passes_with_good_credentials(
    adapter: VerimorAdapter, fake: FakeVerimor
) -> None:
    await adapter.check()
    [balance] = fake.received
    assert (balance.method, balance.path) == ("GET", "/v2/balance")
    assert balance.query == {"username": fake.username, "password": fake.password}


async def test_check_refuses_bad_credentials_without_naming_them(fake: FakeVerimor) -> None:
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=fake.app))
    adapter = VerimorAdapter(connection(), {"username": "x", "password": "wrong-pw"}, client=client)
    with pytest.raises(InvalidCredentials) as raised:
        await adapter.check()
    await client.aclose()
    assert "wrong-pw" not in str(raised.value)


async def test_check_says_unavailable_when_verimor_cannot_be_reached() -> None:
    async def sleep(seconds: float) -> None:
        return None

    adapter = VerimorAdapter(
        connection("http://127.0.0.1:1"), {"username": "u", "password": "p"}, sleep=sleep
    )
    with pytest.raises(ProviderUnavailable):
        await adapter.check()
    await adapter.aclose()


@pytest.mark.parametrize(
    ("given", "named"),
    [
        ({"username": "908501234567"}, "password is missing"),
        ({"password": "pw"}, "username is missing"),
        ({"username": "u", "password": ""}, "password"),
        ({"username": "u", "password": "pw", "api_key": "k"}, "api_key is not a credential"),
    ],
)
def test_bad_credentials_name_the_field(given: dict[str, str], named: str) -> None:
    with pytest.raises(InvalidCredentials, match=named) as raised:
        VerimorAdapter(connection(), given)
    assert "pw" not in str(raised.value).replace("password", "")


def test_no_secret_in_repr() -> None:
    adapter = VerimorAdapter(connection(), {"username": "u", "password": "hunter2-secret"})
    assert "hunter2" not in repr(adapter)
    assert "hunter2" not in repr(adapter.credentials)
    assert "hunter2" not in str(adapter.credentials)


def test_spec_registers_sms_c() -> None:
    assert (SPEC.code, SPEC.credentials) == ("sms_c", Credentials)
    adapter = SPEC.factory(connection(None), {"username": "u", "password": "p"})
    assert isinstance(adapter, VerimorAdapter)
    assert adapter.base_url == "https://sms.verimor.com.tr"
    assert (adapter.code, adapter.max_batch) == ("sms_c", 100)
