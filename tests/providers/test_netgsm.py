"""The ``sms_a`` adapter (NetGSM REST v2) against a local fake speaking NetGSM's format."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from fakes._server import serve
from fakes.netgsm import Canned, NetgsmFake, ReportRow

from unified_messaging._clock import ManualClock
from unified_messaging._domain import Connection
from unified_messaging._errors import InvalidCredentials, ProviderUnavailable
from unified_messaging._types import IysMode
from unified_messaging.providers.base import PROFILES, ProviderAdapter, SubmitRequest
from unified_messaging.providers.netgsm import (
    MAX_ANSWER_BYTES,
    SPEC,
    Credentials,
    NetgsmAdapter,
)

CREDENTIALS = {"usercode": "8503334455", "password": "s3cret-pass"}
BASE = "http://netgsm.test"


def connection(**changes: Any) -> Connection:
    values: dict[str, Any] = {
        "id": "conn_a",
        "workspace_id": "ws_1",
        "provider": "sms_a",
        "created_at": datetime(2026, 1, 1, tzinfo=UTC),
        "credentials": "v1.k.n.c",
        "base_url": BASE,
    }
    values.update(changes)
    return Connection(**values)


def message(
    to: str = "+905321234567",
    text: str = "Siparişiniz yola çıktı",
    *,
    sender: str | None = "ACME",
    iys_mode: IysMode = "informational",
    job_id: str = "job_1",
) -> SubmitRequest:
    return SubmitRequest(job_id=job_id, to=to, text=text, sender=sender, iys_mode=iys_mode)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(datetime(2026, 3, 2, 9, 0, tzinfo=UTC))


@pytest.fixture
def fake(clock: ManualClock) -> NetgsmFake:
    # The fake counts its 10 report calls a minute on the same clock as the adapter.
    return NetgsmFake(monotonic=lambda: clock.now().timestamp())


@pytest.fixture
async def client(fake: NetgsmFake) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=fake.app)) as http:
        yield http


@pytest.fixture
def adapter(client: httpx.AsyncClient, clock: ManualClock) -> NetgsmAdapter:
    return NetgsmAdapter(connection(), CREDENTIALS, client=client, clock=clock)


# --- acceptance and the wire body ------------------------------------------------------------


async def test_an_accepted_message_carries_the_job_id_and_number(
    adapter: NetgsmAdapter, fake: NetgsmFake
) -> None:
    outcome = await adapter.submit(message())

    assert outcome.kind == "accepted"
    assert outcome.provider_message_id == "17000001:+905321234567"


async def test_the_wire_body_is_netgsms_rest_v2_format(
    adapter: NetgsmAdapter, fake: NetgsmFake
) -> None:
    await adapter.submit(message(iys_mode="commercial_individual"))

    [sent] = fake.sends
    assert sent.method == "POST"
    assert sent.path == "/sms/rest/v2/send"
    assert sent.headers["content-type"] == "application/json"
    token = base64.b64encode(b"8503334455:s3cret-pass").decode()
    assert sent.headers["authorization"] == f"Basic {token}"
    assert sent.json == {
        "msgheader": "ACME",
        "messages": [{"msg": "Siparişiniz yola çıktı", "no": "5321234567"}],
        "iysfilter": "11",
        "encoding": "TR",
    }


@pytest.mark.parametrize(
    ("mode", "flag"),
    [("informational", "0"), ("commercial_individual", "11"), ("commercial_merchant", "12")],
)
async def test_the_iys_mode_becomes_netgsms_iysfilter(
    adapter: NetgsmAdapter, fake: NetgsmFake, mode: IysMode, flag: str
) -> None:
    await adapter.submit(message(iys_mode=mode))

    assert fake.sends[0].json["iysfilter"] == flag  # type: ignore[index]


async def test_plain_gsm_text_is_sent_without_an_encoding_flag(
    adapter: NetgsmAdapter, fake: NetgsmFake
) -> None:
    await adapter.submit(message(text="Kodunuz: 123456"))

    assert "encoding" not in fake.sends[0].json  # type: ignore[operator]


async def test_turkish_characters_arrive_intact(adapter: NetgsmAdapter, fake: NetgsmFake) -> None:
    text = "Şu ığdır İÇİN ş ğ ı İ ç Ğ Ş ü ö"

    await adapter.submit(message(text=text))

    assert fake.sends[0].json["messages"][0]["msg"] == text  # type: ignore[index]
    assert text.encode() in fake.sends[0].body


async def test_the_appname_credential_is_sent_along(
    client: httpx.AsyncClient, fake: NetgsmFake
) -> None:
    adapter = NetgsmAdapter(connection(), {**CREDENTIALS, "appname": "um"}, client=client)

    await adapter.submit(message())

    assert fake.sends[0].json["appname"] == "um"  # type: ignore[index]


async def test_the_connections_default_sender_stands_in_for_a_missing_one(
    client: httpx.AsyncClient, fake: NetgsmFake
) -> None:
    adapter = NetgsmAdapter(connection(default_sender="ACME BILGI"), CREDENTIALS, client=client)

    outcome = await adapter.submit(message(sender=None))

    assert outcome.kind == "accepted"
    assert fake.sends[0].json["msgheader"] == "ACME BILGI"  # type: ignore[index]


# --- refusals decided before any call ---------------------------------------------------------


@pytest.mark.parametrize(
    ("request_", "kind", "code"),
    [
        (message(to="+12025550123"), "recipient_failed", "INVALID_RECIPIENT"),
        (message(to="+902121234567"), "recipient_failed", "INVALID_RECIPIENT"),
        (message(sender=None), "rejected", "SENDER_REQUIRED"),
        (message(sender="WAY-TOO-LONG-HEADER"), "rejected", "SENDER_NOT_APPROVED"),
        (message(text="x" * 1601), "rejected", "BODY_TOO_LONG"),
    ],
)
async def test_what_netgsm_would_refuse_is_refused_without_a_call(
    adapter: NetgsmAdapter, fake: NetgsmFake, request_: SubmitRequest, kind: str, code: str
) -> None:
    outcome = await adapter.submit(request_)

    assert (outcome.kind, outcome.error and outcome.error.code) == (kind, code)
    assert fake.received == []


# --- every refusal code ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "kind", "our_code"),
    [
        ("20", "rejected", "BODY_REJECTED"),
        ("30", "rejected", "PROVIDER_AUTH_FAILED"),
        ("40", "rejected", "SENDER_NOT_APPROVED"),
        ("50", "rejected", "IYS_NOT_CONFIGURED"),
        ("51", "rejected", "IYS_NOT_CONFIGURED"),
        ("70", "rejected", "PROVIDER_REJECTED"),
        ("80", "unavailable", "PROVIDER_UNAVAILABLE"),
        ("85", "unavailable", "PROVIDER_RECIPIENT_THROTTLED"),
        ("100", "unavailable", "PROVIDER_UNAVAILABLE"),
        ("101", "unavailable", "PROVIDER_UNAVAILABLE"),
        ("99", "rejected", "PROVIDER_REJECTED"),
    ],
)
async def test_each_netgsm_code_maps_to_its_outcome(
    adapter: NetgsmAdapter, fake: NetgsmFake, code: str, kind: str, our_code: str
) -> None:
    fake.script(Canned(code=code))

    outcome = await adapter.submit(message())

    assert outcome.kind == kind
    assert outcome.error is not None and outcome.error.code == our_code
    assert outcome.provider_message_id is None


async def test_the_real_auth_and_header_checks_answer_30_and_40(
    client: httpx.AsyncClient, fake: NetgsmFake
) -> None:
    wrong = NetgsmAdapter(connection(), {**CREDENTIALS, "password": "nope"}, client=client)
    right = NetgsmAdapter(connection(), CREDENTIALS, client=client)

    bad_auth = await wrong.submit(message())
    bad_header = await right.submit(message(sender="OTHER"))

    assert bad_auth.error is not None and bad_auth.error.code == "PROVIDER_AUTH_FAILED"
    assert bad_header.error is not None and bad_header.error.code == "SENDER_NOT_APPROVED"


async def test_a_00_without_a_job_id_is_not_taken_for_acceptance(
    adapter: NetgsmAdapter, fake: NetgsmFake
) -> None:
    fake.script(Canned(status=200, body=b'{"code": "00", "description": "ok"}'))

    outcome = await adapter.submit(message())

    assert outcome.kind == "unknown"


# --- answers that cannot be read ---------------------------------------------------------------


@pytest.mark.parametrize("status", [500, 502, 503, 504])
async def test_a_5xx_is_unavailable(adapter: NetgsmAdapter, fake: NetgsmFake, status: int) -> None:
    fake.script(Canned(status=status, body=b'{"code": "00", "jobid": "1"}'))

    outcome = await adapter.submit(message())

    assert outcome.kind == "unavailable"
    assert outcome.error is not None and outcome.error.code == "PROVIDER_UNAVAILABLE"


@pytest.mark.parametrize(
    ("code", "headers", "retry_after"),
    [("80", {}, 60.0), ("80", {"Retry-After": "15"}, 15.0), ("85", {}, None), ("100", {}, None)],
)
async def test_code_80_pauses_the_connection_a_minute_unless_told_otherwise(
    adapter: NetgsmAdapter,
    fake: NetgsmFake,
    code: str,
    headers: dict[str, str],
    retry_after: float | None,
) -> None:
    fake.script(Canned(code=code, headers=headers))

    outcome = await adapter.submit(message())

    assert (outcome.kind, outcome.retry_after) == ("unavailable", retry_after)


async def test_a_429_is_unavailable_with_its_retry_after(
    adapter: NetgsmAdapter, fake: NetgsmFake
) -> None:
    fake.script(Canned(status=429, body=b"{}", headers={"Retry-After": "30"}))

    outcome = await adapter.submit(message())

    assert outcome.kind == "unavailable"
    assert outcome.retry_after == 30.0


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b'{"code": "00", "jobid": "17', "application/json"),  # truncated
        (b"code=00&jobid=1", "application/json"),  # malformed
        (b"", "application/json"),  # empty
        (b'["00", "17000001"]', "application/json"),  # not an object
        (b"[" * 100_000, "application/json"),  # nested past the parser's depth
        (b"<html><body>502 Bad Gateway</body></html>", "text/html"),
        (b'<?xml version="1.0"?><code>00</code>', "application/xml"),
    ],
)
async def test_an_unreadable_answer_is_unknown(
    adapter: NetgsmAdapter, fake: NetgsmFake, body: bytes, content_type: str
) -> None:
    fake.script(Canned(status=200, body=body, content_type=content_type))

    outcome = await adapter.submit(message())

    assert outcome.kind == "unknown"
    assert outcome.error is not None and "NetGSM" in outcome.error.message


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
async def test_a_huge_answer_is_cut_off_and_unknown(
    adapter: NetgsmAdapter, fake: NetgsmFake, chunked: bool
) -> None:
    huge = b'{"code": "00", "jobid": "1", "pad": "' + b"x" * (8 * 1024 * 1024) + b'"}'
    fake.script(Canned(status=200, body=huge, chunked=chunked))

    outcome = await adapter.submit(message())

    assert outcome.kind == "unknown"
    assert outcome.error is not None and "over" in outcome.error.message
    assert len(huge) > MAX_ANSWER_BYTES


# --- batches -----------------------------------------------------------------------------------


async def test_a_full_batch_goes_in_one_request_with_each_text(
    adapter: NetgsmAdapter, fake: NetgsmFake
) -> None:
    size = PROFILES["sms_a"].max_batch
    requests = [message(to=f"+90532{i:07d}", text=f"Merhaba {i}") for i in range(size)]

    outcomes = await adapter.submit_batch(requests)

    [sent] = fake.sends
    assert [m["msg"] for m in sent.json["messages"]] == [r.text for r in requests]  # type: ignore[index]
    assert [o.provider_message_id for o in outcomes] == [f"17000001:{r.to}" for r in requests]


async def test_a_batch_past_the_limit_is_split(adapter: NetgsmAdapter, fake: NetgsmFake) -> None:
    size = adapter.max_batch
    requests = [message(to=f"+90532{i:07d}") for i in range(size + 1)]

    outcomes = await adapter.submit_batch(requests)

    assert [len(s.json["messages"]) for s in fake.sends] == [size, 1]  # type: ignore[index]
    assert all(o.kind == "accepted" for o in outcomes)
    assert outcomes[-1].provider_message_id == f"17000002:{requests[-1].to}"


async def test_one_number_twice_in_a_batch_gets_two_requests_and_two_ids(
    adapter: NetgsmAdapter, fake: NetgsmFake
) -> None:
    outcomes = await adapter.submit_batch([message(text="a"), message(text="b")])

    assert len(fake.sends) == 2
    assert outcomes[0].provider_message_id != outcomes[1].provider_message_id


async def test_a_batch_is_grouped_by_header_and_keeps_its_order(
    adapter: NetgsmAdapter, fake: NetgsmFake
) -> None:
    requests = [
        message(to="+905320000001", sender="ACME"),
        message(to="+12025550123"),
        message(to="+905320000002", sender="ACME BILGI"),
        message(to="+905320000003", sender="ACME"),
    ]

    outcomes = await adapter.submit_batch(requests)

    assert [o.kind for o in outcomes] == ["accepted", "recipient_failed", "accepted", "accepted"]
    assert sorted(s.json["msgheader"] for s in fake.sends) == ["ACME", "ACME BILGI"]  # type: ignore[index]
    assert outcomes[3].provider_message_id == "17000001:+905320000003"


async def test_a_refused_batch_refuses_every_message_in_it(
    adapter: NetgsmAdapter, fake: NetgsmFake
) -> None:
    fake.script(Canned(code="40"))

    outcomes = await adapter.submit_batch([message(to="+905320000001"), message()])

    assert [o.kind for o in outcomes] == ["rejected", "rejected"]


# --- reports -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "ours", "error_code"),
    [
        (0, "pending", None),
        (1, "delivered", None),
        (2, "expired", None),
        (3, "failed", "INVALID_RECIPIENT"),
        (4, "rejected", "PROVIDER_REJECTED"),
        (11, "rejected", "PROVIDER_REJECTED"),
        (12, "failed", "RECIPIENT_UNREACHABLE"),
        (13, "rejected", "DUPLICATE_MESSAGE"),
        (14, "rejected", "INSUFFICIENT_CREDIT"),
        (15, "rejected", "RECIPIENT_BLACKLISTED"),
        (16, "rejected", "IYS_CONSENT_MISSING"),
        (17, "failed", "IYS_CHECK_FAILED"),
        (42, "unknown", None),
    ],
)
async def test_each_report_status_is_read(
    adapter: NetgsmAdapter, fake: NetgsmFake, status: int, ours: str, error_code: str | None
) -> None:
    accepted = await adapter.submit(message())
    fake.set_status("17000001", "5321234567", status, delivered_date="02.03.2026 12:30:05")

    [report] = await adapter.poll_reports([accepted.provider_message_id or ""])

    assert report.provider_message_id == accepted.provider_message_id
    assert (report.status, report.provider_status) == (ours, str(status))
    assert (report.error and report.error.code) == error_code
    assert report.to == "+905321234567"
    assert report.occurred_at == datetime(2026, 3, 2, 9, 30, 5, tzinfo=UTC)


async def test_the_report_request_names_the_jobs_and_a_date_window(
    adapter: NetgsmAdapter, fake: NetgsmFake
) -> None:
    accepted = await adapter.submit(message())

    await adapter.poll_reports([accepted.provider_message_id or ""])

    [call] = fake.report_calls
    assert call.json == {
        "jobids": ["17000001"],
        "startdate": "28.02.2026 12:00:00",
        "stopdate": "02.03.2026 12:00:00",
        "pagenumber": 0,
        "pagesize": 100,
    }


async def test_rows_of_the_job_not_asked_for_are_left_out(
    adapter: NetgsmAdapter, fake: NetgsmFake
) -> None:
    outcomes = await adapter.submit_batch([message(to="+905320000001"), message()])

    reports = await adapter.poll_reports([outcomes[1].provider_message_id or ""])

    assert [r.to for r in reports] == ["+905321234567"]


async def test_a_row_with_a_message_level_jobid_is_matched_by_its_number(
    adapter: NetgsmAdapter, fake: NetgsmFake
) -> None:
    fake.rows = [
        ReportRow("17000001", "5320000001", 1),
        ReportRow("17000001", "5320000002", 1, shown_jobid="88000002"),
        ReportRow("17000001", "5320000003", 1, shown_jobid="88000003"),  # not asked about
    ]

    reports = await adapter.poll_reports(["17000001:+905320000001", "17000001:+905320000002"])

    assert [r.provider_message_id for r in reports] == [
        "17000001:+905320000001",
        "17000001:+905320000002",
    ]


async def test_no_records_yet_is_no_reports(adapter: NetgsmAdapter, fake: NetgsmFake) -> None:
    assert await adapter.poll_reports(["17000009:+905321234567"]) == []
    assert len(fake.report_calls) == 1


async def test_many_ids_are_polled_in_as_few_calls_as_the_api_allows(
    adapter: NetgsmAdapter, fake: NetgsmFake
) -> None:
    fake.rows = [ReportRow(str(9000 + i), "5320000001", 1) for i in range(150)]

    reports = await adapter.poll_reports([f"{9000 + i}:+905320000001" for i in range(150)])

    assert len(reports) == 150
    # 100 job ids (a full page answering every one), then the other 50: no empty page asked.
    assert [len(c.json["jobids"]) for c in fake.report_calls] == [100, 50]  # type: ignore[index]
    assert [c.json["pagenumber"] for c in fake.report_calls] == [0, 0]  # type: ignore[index]


async def test_a_full_page_that_answers_everything_asked_is_the_last_call(
    adapter: NetgsmAdapter, fake: NetgsmFake
) -> None:
    # One job of exactly 100 rows used to cost a second call for an empty page.
    fake.rows = [ReportRow("9000", f"53200{n:05d}", 1) for n in range(100)]

    reports = await adapter.poll_reports([f"9000:+9053200{n:05d}" for n in range(100)])

    assert len(reports) == 100
    assert [c.json["pagenumber"] for c in fake.report_calls] == [0]  # type: ignore[index]


async def test_a_full_page_that_misses_some_asked_numbers_asks_the_next_page(
    adapter: NetgsmAdapter, fake: NetgsmFake
) -> None:
    # Two jobs of 100 rows; half of each is asked about: one call, two pages of rows.
    fake.rows = [ReportRow(job, f"53200{n:05d}", 1) for job in ("9000", "9001") for n in range(100)]
    asked = [f"{job}:+9053200{n:05d}" for job in ("9000", "9001") for n in range(0, 100, 2)]

    reports = await adapter.poll_reports(asked)

    assert sorted(r.provider_message_id for r in reports) == sorted(asked)
    assert [(c.json["jobids"], c.json["pagenumber"]) for c in fake.report_calls] == [  # type: ignore[index]
        (["9000", "9001"], 0),
        (["9000", "9001"], 1),
    ]


async def test_polling_stays_within_ten_calls_a_minute(
    adapter: NetgsmAdapter, fake: NetgsmFake, clock: ManualClock
) -> None:
    fake.rows = [ReportRow(str(9000 + i), "5320000001", 1) for i in range(1200)]
    ids = [f"{9000 + i}:+905320000001" for i in range(1200)]

    first = await adapter.poll_reports(ids)
    again = await adapter.poll_reports(ids)
    clock.advance(timedelta(minutes=1))
    later = await adapter.poll_reports(ids[len(first) :])

    assert len(fake.report_calls) == 12  # ten calls of 100 reports, then two more
    assert (len(first), len(again), len(later)) == (1000, 0, 200)


async def test_netgsms_own_limit_answer_stops_polling_for_a_minute(
    adapter: NetgsmAdapter, fake: NetgsmFake, clock: ManualClock
) -> None:
    accepted = await adapter.submit(message())
    fake.set_status("17000001", "5321234567", 1)
    fake.script(Canned(code="80"))

    assert await adapter.poll_reports([accepted.provider_message_id or ""]) == []
    assert await adapter.poll_reports([accepted.provider_message_id or ""]) == []
    clock.advance(timedelta(minutes=1))
    [report] = await adapter.poll_reports([accepted.provider_message_id or ""])

    assert report.status == "delivered"
    assert len(fake.report_calls) == 2


async def test_netgsm_pushes_nothing_to_parse(adapter: NetgsmAdapter) -> None:
    from unified_messaging.providers.base import InboundCallback

    assert adapter.parse_reports(InboundCallback("POST", {}, {}, b"{}")) == []


# --- credentials -------------------------------------------------------------------------------


def test_a_missing_credential_is_named() -> None:
    with pytest.raises(InvalidCredentials, match="password is missing"):
        NetgsmAdapter(connection(), {"usercode": "8503334455"})


def test_credential_errors_and_reprs_never_show_the_secret() -> None:
    with pytest.raises(InvalidCredentials) as raised:
        NetgsmAdapter(connection(), {**CREDENTIALS, "api_token": "s3cret-pass"})
    adapter = NetgsmAdapter(connection(), CREDENTIALS)

    assert "api_token is not a credential" in str(raised.value)
    for text in (str(raised.value), repr(raised.value), repr(adapter), repr(adapter.credentials)):
        assert "s3cret-pass" not in text


def test_the_spec_registers_the_adapter() -> None:
    adapter = SPEC.factory(connection(), CREDENTIALS)

    assert (SPEC.code, SPEC.credentials) == ("sms_a", Credentials)
    assert isinstance(adapter, ProviderAdapter)
    assert adapter.code == "sms_a"
    assert adapter.max_batch == PROFILES["sms_a"].max_batch


async def test_the_credentials_check_passes_with_good_credentials(
    adapter: NetgsmAdapter, fake: NetgsmFake
) -> None:
    await adapter.check()

    assert fake.received[0].path == "/sms/rest/v2/msgheader"


async def test_the_credentials_check_names_a_refusal(
    client: httpx.AsyncClient, fake: NetgsmFake
) -> None:
    adapter = NetgsmAdapter(connection(), {**CREDENTIALS, "password": "nope"}, client=client)

    with pytest.raises(InvalidCredentials) as raised:
        await adapter.check()

    assert "nope" not in str(raised.value)


async def test_the_credentials_check_cannot_decide_when_netgsm_is_down(
    adapter: NetgsmAdapter, fake: NetgsmFake
) -> None:
    fake.script_sends_only = False  # the check reads the header list: this script is for it
    fake.script(Canned(status=503, body=b"down", content_type="text/plain"))

    with pytest.raises(ProviderUnavailable):
        await adapter.check()


# --- over real loopback HTTP -------------------------------------------------------------------


async def test_a_send_over_loopback_http_is_accepted(fake: NetgsmFake) -> None:
    async with serve(fake.app) as base:
        adapter = NetgsmAdapter(connection(base_url=base), CREDENTIALS)
        try:
            outcome = await adapter.submit(message())
        finally:
            await adapter.aclose()

    assert outcome.kind == "accepted"
    assert fake.sends[0].json["messages"][0]["msg"] == "Siparişiniz yola çıktı"  # type: ignore[index]


async def test_a_read_time_out_is_unknown_and_never_re_posted(fake: NetgsmFake) -> None:
    sleeps: list[float] = []

    async def no_sleep(seconds: float) -> None:
        sleeps.append(seconds)

    fake.script(Canned(status=200, body=b'{"code":"00","jobid":"1"}', delay=0.3))
    timeout = httpx.Timeout(connect=2.0, read=0.05, write=2.0, pool=2.0)
    async with serve(fake.app) as base:
        adapter = NetgsmAdapter(connection(base_url=base), CREDENTIALS, timeout=timeout,
                                sleep=no_sleep)  # fmt: skip
        try:
            outcome = await adapter.submit(message())
        finally:
            await adapter.aclose()

    assert outcome.kind == "unknown"
    assert outcome.error is not None and "read time-out" in outcome.error.message
    assert (len(fake.sends), sleeps) == (1, [])


async def test_a_refused_connection_is_retried_then_unavailable() -> None:
    sleeps: list[float] = []

    async def no_sleep(seconds: float) -> None:
        sleeps.append(seconds)

    adapter = NetgsmAdapter(
        connection(base_url="http://127.0.0.1:1"), CREDENTIALS, sleep=no_sleep, connect_retries=3
    )
    try:
        outcome = await adapter.submit(message())
    finally:
        await adapter.aclose()

    assert outcome.kind == "unavailable"
    assert outcome.error is not None and "reached" in outcome.error.message
    assert len(sleeps) == 3
