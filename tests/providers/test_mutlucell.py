"""The ``sms_d`` adapter against a local Mutlucell gateway that speaks the real wire format."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime

import httpx
import pytest
from fakes.mutlucell import FakeMutlucell, serve

from unified_messaging._domain import Connection
from unified_messaging._errors import InvalidCredentials, ProviderUnavailable
from unified_messaging._types import Encoding, IysMode
from unified_messaging.providers.base import InboundCallback, ReportCalls, SubmitRequest
from unified_messaging.providers.mutlucell import SPEC, Credentials, MutlucellAdapter

NOW = datetime(2026, 1, 1, tzinfo=UTC)
TO = "+905321234567"
PACK = 88096496


def connection(base_url: str | None = "http://mutlucell.test") -> Connection:
    return Connection(
        id="conn_d", workspace_id="ws_1", provider="sms_d", created_at=NOW,
        credentials="v1.k.n.c", base_url=base_url,
    )  # fmt: skip


def message(
    to: str = TO,
    text: str = "Merhaba",
    *,
    sender: str | None = "UMTEST",
    encoding: Encoding | None = "gsm7",
    iys_mode: IysMode = "informational",
) -> SubmitRequest:
    return SubmitRequest(
        job_id="msg_1", to=to, text=text, sender=sender, encoding=encoding, iys_mode=iys_mode
    )


@pytest.fixture
def fake() -> FakeMutlucell:
    return FakeMutlucell()


@pytest.fixture
async def adapter(fake: FakeMutlucell) -> AsyncIterator[MutlucellAdapter]:
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=fake.app))
    adapter = MutlucellAdapter(connection(), _credentials(fake), client=client)
    yield adapter
    await client.aclose()


def _credentials(fake: FakeMutlucell) -> dict[str, str]:
    return {"username": fake.username, "password": fake.password}


async def no_sleep(seconds: float) -> None:
    return None


# --- sending ------------------------------------------------------------------------------------


async def test_send_is_accepted_with_pack_id_and_number(
    adapter: MutlucellAdapter, fake: FakeMutlucell
) -> None:
    outcome = await adapter.submit(message())
    assert outcome.kind == "accepted"
    assert outcome.provider_message_id == f"{PACK}:905321234567"
    assert fake.packs[PACK] == [("905321234567", "Merhaba")]


async def test_wire_body_is_mutlucells_xml(adapter: MutlucellAdapter, fake: FakeMutlucell) -> None:
    await adapter.submit(message(encoding="gsm7_turkish", text="Şifre 1"))
    [sent] = fake.sends()
    assert sent.headers["content-type"] == "text/xml; charset=UTF-8"
    assert sent.body.startswith(b'<?xml version="1.0" encoding="UTF-8"?><smspack ')
    root = sent.xml
    assert root.attrib == {
        "ka": "umuser", "pwd": fake.password, "org": "UMTEST", "charset": "turkish",
    }  # fmt: skip
    [mesaj] = root.findall("mesaj")
    assert (mesaj.findtext("metin"), mesaj.findtext("nums")) == ("Şifre 1", "905321234567")


@pytest.mark.parametrize(
    ("encoding", "charset"),
    [("gsm7", "default"), ("gsm7_turkish", "turkish"), ("ucs2", "unicode"), (None, None)],
)
async def test_charset_follows_the_encoding(
    adapter: MutlucellAdapter, fake: FakeMutlucell, encoding: Encoding | None, charset: str | None
) -> None:
    await adapter.submit(message(encoding=encoding))
    assert fake.sends()[0].xml.get("charset") == charset


async def test_an_informational_pack_carries_only_documented_attributes(
    adapter: MutlucellAdapter, fake: FakeMutlucell
) -> None:
    assert (await adapter.submit(message(encoding="gsm7_turkish"))).kind == "accepted"
    assert set(fake.sends()[0].xml.attrib) == {"ka", "pwd", "org", "charset"}


@pytest.mark.parametrize("iys_mode", ["commercial_individual", "commercial_merchant"])
async def test_a_commercial_message_is_refused_before_sending(
    adapter: MutlucellAdapter, fake: FakeMutlucell, iys_mode: IysMode
) -> None:
    # Mutlucell documents no IYS attribute: a commercial message is never sent unmarked.
    outcome = await adapter.submit(message(iys_mode=iys_mode))
    assert outcome.kind == "rejected"
    assert outcome.error is not None
    assert outcome.error.code == "IYS_NOT_CONFIGURED"
    assert fake.sends() == []


@pytest.mark.parametrize(
    "attributes", [{"iys": "1", "iysList": "BIREYSEL"}, {"iys": "0"}, {"priority": "high"}]
)
async def test_the_fake_refuses_attributes_mutlucell_does_not_document(
    fake: FakeMutlucell, attributes: dict[str, str]
) -> None:
    pack = ET.Element("smspack", {"ka": fake.username, "pwd": fake.password, "org": "UMTEST",
                                  **attributes})  # fmt: skip
    mesaj = ET.SubElement(pack, "mesaj")
    ET.SubElement(mesaj, "metin").text = "Merhaba"
    ET.SubElement(mesaj, "nums").text = "905321234567"
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=fake.app)) as client:
        answer = await client.post(
            "http://mutlucell.test/smsgw-ws/sndblkex", content=ET.tostring(pack)
        )
    assert (answer.status_code, answer.text) == (200, "20")
    assert fake.packs == {}


async def test_turkish_and_xml_special_characters_arrive_intact(
    adapter: MutlucellAdapter, fake: FakeMutlucell
) -> None:
    text = "Çağrı <b>&amp;</b> \"ışık\" 'şöğüİı' ]]> €{} \n yeni satır"
    outcome = await adapter.submit(message(text=text, encoding="ucs2"))
    assert outcome.kind == "accepted"
    # The password holds & " < > ' too: the fake authenticated it, so it arrived intact.
    assert fake.packs[PACK] == [("905321234567", text)]


async def test_text_xml_cannot_carry_is_refused_before_sending(
    adapter: MutlucellAdapter, fake: FakeMutlucell
) -> None:
    outcome = await adapter.submit(message(text="form\x0cfeed"))
    assert outcome.kind == "rejected"
    assert fake.sends() == []


SEND_ERRORS = [
    ("20", "rejected", "PROVIDER_REJECTED", None),
    ("21", "rejected", "SENDER_NOT_APPROVED", None),
    ("22", "rejected", "INSUFFICIENT_CREDIT", None),
    ("23", "rejected", "PROVIDER_AUTH_FAILED", None),
    ("24", "unavailable", "PROVIDER_UNAVAILABLE", 30.0),
    ("25", "unavailable", "PROVIDER_UNAVAILABLE", 90.0),
    ("30", "rejected", "PROVIDER_AUTH_FAILED", None),
    ("99", "rejected", "PROVIDER_REJECTED", None),
]


@pytest.mark.parametrize(("answer", "kind", "code", "retry_after"), SEND_ERRORS)
async def test_every_error_number_maps_to_an_outcome(
    adapter: MutlucellAdapter,
    fake: FakeMutlucell,
    answer: str,
    kind: str,
    code: str,
    retry_after: float | None,
) -> None:
    fake.fail_with(answer)
    outcome = await adapter.submit(message())
    assert outcome.error is not None
    assert (outcome.kind, outcome.error.code, outcome.retry_after) == (kind, code, retry_after)
    assert f"({answer})" in outcome.error.message
    assert len(fake.sends()) == 1


async def test_the_fakes_own_validation_answers_map_too(
    adapter: MutlucellAdapter, fake: FakeMutlucell
) -> None:
    outcome = await adapter.submit(message(sender="NOTMINE"))
    assert outcome.error is not None
    assert outcome.error.code == "SENDER_NOT_APPROVED"
    fake.credit = 0
    outcome = await adapter.submit(message())
    assert outcome.error is not None
    assert outcome.error.code == "INSUFFICIENT_CREDIT"


async def test_refused_account_is_rejected_naming_no_secret(fake: FakeMutlucell) -> None:
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=fake.app))
    wrong = {"username": fake.username, "password": "not-the-password"}
    adapter = MutlucellAdapter(connection(), wrong, client=client)
    outcome = await adapter.submit(message())
    await client.aclose()
    assert outcome.error is not None
    assert (outcome.kind, outcome.error.code) == ("rejected", "PROVIDER_AUTH_FAILED")
    assert "not-the-password" not in outcome.error.message


# --- answers that are not Mutlucell speaking ----------------------------------------------------


@pytest.mark.parametrize(("header", "retry_after"), [("30", 30.0), (None, None)])
async def test_throttling_is_unavailable_with_retry_after(
    adapter: MutlucellAdapter, fake: FakeMutlucell, header: str | None, retry_after: float | None
) -> None:
    fake.throttle(header)
    outcome = await adapter.submit(message())
    assert (outcome.kind, outcome.retry_after) == ("unavailable", retry_after)


@pytest.mark.parametrize("status", [500, 502, 503, 404])
async def test_http_errors_are_unavailable_and_not_resent(
    adapter: MutlucellAdapter, fake: FakeMutlucell, status: int
) -> None:
    fake.answer(status, f"${PACK}#1.0")
    assert (await adapter.submit(message())).kind == "unavailable"
    assert len(fake.sends()) == 1


@pytest.mark.parametrize(
    "body",
    ["", "$", f"${PACK}", f"${PACK}#", f"${PACK}#1.", "$abc#1.0", "OK", "20 21", "-1", "$-5#1.0"],
)
async def test_malformed_or_truncated_answer_is_never_accepted(
    adapter: MutlucellAdapter, fake: FakeMutlucell, body: str
) -> None:
    fake.answer(200, body)
    outcome = await adapter.submit(message())
    assert outcome.kind == "unknown"
    assert outcome.error is not None
    assert "pack id" in outcome.error.message


async def test_html_error_page_is_unknown(adapter: MutlucellAdapter, fake: FakeMutlucell) -> None:
    fake.answer(200, "<html><body>Service Unavailable</body></html>", "text/html")
    outcome = await adapter.submit(message())
    assert outcome.kind == "unknown"
    assert outcome.error is not None
    assert "HTML" in outcome.error.message


async def test_pack_id_is_read_whatever_content_type_mutlucell_declares(
    adapter: MutlucellAdapter, fake: FakeMutlucell
) -> None:
    # Mutlucell does not document its answer's content type; the answer's shape decides.
    fake.answer(200, f"${PACK}#1.0\r\n", "text/html;charset=UTF-8")
    assert (await adapter.submit(message())).provider_message_id == f"{PACK}:905321234567"


async def test_a_pack_that_used_no_credit_is_rejected_as_sent_nothing(
    adapter: MutlucellAdapter, fake: FakeMutlucell
) -> None:
    fake.answer(200, f"${PACK}#0.0")
    outcome = await adapter.submit(message())
    assert outcome.kind == "rejected"
    assert outcome.error is not None
    assert outcome.error.code == "PROVIDER_REJECTED"
    assert outcome.provider_message_id is None


async def test_huge_answer_is_not_read(adapter: MutlucellAdapter, fake: FakeMutlucell) -> None:
    fake.answer(200, b"$" + b"1" * (4 * 1024 * 1024) + b"#1.0")
    outcome = await adapter.submit(message())
    assert outcome.kind == "unknown"
    assert outcome.error is not None
    assert "bytes" in outcome.error.message


class _CutOff(httpx.AsyncByteStream):
    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield b"$8809"
        raise httpx.ReadError("connection reset by peer")


async def test_answer_cut_off_mid_body_is_unknown_and_not_resent() -> None:
    calls: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return httpx.Response(200, stream=_CutOff())

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    adapter = MutlucellAdapter(connection(), {"username": "u", "password": "p"}, client=client)
    outcome = await adapter.submit(message())
    await client.aclose()
    assert outcome.kind == "unknown"
    assert len(calls) == 1


async def test_read_time_out_is_unknown_and_not_retried(fake: FakeMutlucell) -> None:
    fake.delay = 0.3
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    async with serve(fake.app) as base_url:
        adapter = MutlucellAdapter(
            connection(base_url), _credentials(fake),
            timeout=httpx.Timeout(2.0, read=0.05), sleep=sleep,
        )  # fmt: skip
        outcome = await adapter.submit(message())
        await adapter.aclose()
    assert outcome.kind == "unknown"
    assert outcome.error is not None
    assert "read time-out" in outcome.error.message
    assert (len(fake.sends()), sleeps) == (1, [])


async def test_connection_refused_is_retried_then_unavailable() -> None:
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    adapter = MutlucellAdapter(
        connection("http://127.0.0.1:1"), {"username": "u", "password": "p"},
        sleep=sleep, connect_retries=3,
    )  # fmt: skip
    outcome = await adapter.submit(message())
    await adapter.aclose()
    assert outcome.kind == "unavailable"
    assert outcome.error is not None
    assert "could not be reached" in outcome.error.message
    assert len(sleeps) == 3


async def test_sends_and_polls_over_real_loopback_http(fake: FakeMutlucell) -> None:
    fake.default_status = "3"
    async with serve(fake.app) as base_url:
        adapter = MutlucellAdapter(connection(base_url), _credentials(fake))
        outcome = await adapter.submit(message(text="Gerçek <bağlantı> & test"))
        assert outcome.provider_message_id is not None
        reports = await adapter.poll_reports([outcome.provider_message_id])
        await adapter.aclose()
    assert fake.packs[PACK] == [("905321234567", "Gerçek <bağlantı> & test")]
    assert [(r.provider_message_id, r.status) for r in reports] == [
        (outcome.provider_message_id, "delivered")
    ]


# --- batches ------------------------------------------------------------------------------------


def numbers(count: int) -> Iterator[str]:
    return (f"+90532{n:07d}" for n in range(count))


async def test_batch_at_the_limit_is_one_pack(
    adapter: MutlucellAdapter, fake: FakeMutlucell
) -> None:
    requests = [message(to, f"Mesaj {n} <{n}>") for n, to in enumerate(numbers(100))]
    outcomes = await adapter.submit_batch(requests)
    assert [o.kind for o in outcomes] == ["accepted"] * 100
    assert len({o.provider_message_id for o in outcomes}) == 100
    [sent] = fake.sends()
    assert [m.findtext("metin") for m in sent.xml.findall("mesaj")] == [
        f"Mesaj {n} <{n}>" for n in range(100)
    ]


async def test_batch_past_the_limit_is_a_caller_bug(
    adapter: MutlucellAdapter, fake: FakeMutlucell
) -> None:
    with pytest.raises(ValueError, match="at most 100"):
        await adapter.submit_batch([message(to) for to in numbers(101)])
    assert fake.sends() == []


async def test_batch_sends_a_repeated_number_in_a_pack_of_its_own(
    adapter: MutlucellAdapter, fake: FakeMutlucell
) -> None:
    outcomes = await adapter.submit_batch([message(TO, "bir"), message(TO, "iki")])
    assert [o.provider_message_id for o in outcomes] == [
        f"{PACK}:905321234567",
        f"{PACK + 1}:905321234567",
    ]


async def test_batch_groups_by_header_and_charset(
    adapter: MutlucellAdapter, fake: FakeMutlucell
) -> None:
    outcomes = await adapter.submit_batch(
        [
            message("+905320000001"),
            message("+905320000002", sender="MUTLUCELL"),
            message("+905320000003", encoding="ucs2"),
            message("+905320000004"),
        ]
    )
    assert [o.provider_message_id for o in outcomes] == [
        f"{PACK}:905320000001",
        f"{PACK + 1}:905320000002",
        f"{PACK + 2}:905320000003",
        f"{PACK}:905320000004",
    ]


async def test_batch_refused_fails_every_message_once(
    adapter: MutlucellAdapter, fake: FakeMutlucell
) -> None:
    fake.fail_with("22")
    outcomes = await adapter.submit_batch([message(to) for to in numbers(3)])
    assert {(o.kind, o.error and o.error.code) for o in outcomes} == {
        ("rejected", "INSUFFICIENT_CREDIT")
    }
    assert len(fake.sends()) == 1


@pytest.mark.parametrize(
    ("request_", "kind", "code"),
    [
        (message(to="+905321234"), "recipient_failed", "INVALID_RECIPIENT"),
        (message(sender=None), "rejected", "PROVIDER_REJECTED"),
        (message(text=""), "rejected", "BODY_REJECTED"),
        (message(text="nul \x00 byte"), "rejected", "BODY_REJECTED"),
    ],
)
async def test_what_mutlucell_would_refuse_is_refused_without_a_request(
    adapter: MutlucellAdapter, fake: FakeMutlucell, request_: SubmitRequest, kind: str, code: str
) -> None:
    outcomes = await adapter.submit_batch([request_, message()])
    assert (outcomes[0].kind, outcomes[0].error and outcomes[0].error.code) == (kind, code)
    assert outcomes[1].kind == "accepted"
    assert len(fake.sends()[0].xml.findall("mesaj")) == 1


# --- polled reports -----------------------------------------------------------------------------

REPORTS = [
    ("0", "failed", "PROVIDER_REJECTED"),
    ("1", "pending", None),
    ("2", "pending", None),
    ("3", "delivered", None),
    ("4", "pending", None),
    ("5", "expired", None),
    ("6", "failed", "RECIPIENT_UNREACHABLE"),
    ("7", "rejected", "PROVIDER_REJECTED"),
    ("11", "unknown", None),
    ("12", "failed", "RECIPIENT_UNREACHABLE"),
    ("13", "failed", "PROVIDER_REJECTED"),
    ("15", "failed", "INVALID_RECIPIENT"),
    ("16", "failed", "RECIPIENT_UNREACHABLE"),
    ("17", "failed", "RECIPIENT_UNREACHABLE"),
    ("18", "failed", "RECIPIENT_UNREACHABLE"),
    ("19", "failed", "RECIPIENT_UNREACHABLE"),
    ("20", "failed", "RECIPIENT_UNREACHABLE"),
    ("42", "unknown", None),
]


@pytest.mark.parametrize(("number", "status", "code"), REPORTS)
async def test_every_report_status_is_read(
    adapter: MutlucellAdapter, fake: FakeMutlucell, number: str, status: str, code: str | None
) -> None:
    accepted = await adapter.submit(message())
    assert accepted.provider_message_id is not None
    fake.statuses[(PACK, "905321234567")] = number
    [report] = await adapter.poll_reports([accepted.provider_message_id])
    assert report.provider_message_id == accepted.provider_message_id
    assert (report.status, report.provider_status) == (status, number)
    assert (report.error and report.error.code) == code
    assert report.to == TO


async def test_poll_asks_once_per_pack_and_reports_only_what_was_asked(
    adapter: MutlucellAdapter, fake: FakeMutlucell
) -> None:
    first = await adapter.submit_batch([message(to) for to in numbers(3)])
    second = await adapter.submit(message(TO))
    fake.statuses[(PACK, "905320000001")] = "6"
    asked = [first[0].provider_message_id, first[1].provider_message_id]
    asked += [second.provider_message_id, "garbage", "12:"]
    reports = await adapter.poll_reports([i for i in asked if i is not None])
    assert {(r.provider_message_id, r.status) for r in reports} == {
        (f"{PACK}:905320000000", "pending"),
        (f"{PACK}:905320000001", "failed"),
        (f"{PACK + 1}:905321234567", "pending"),
    }
    polls = [r for r in fake.received if r.path == "/smsgw-ws/gtblkrprtex"]
    assert sorted(p.xml.get("id", "") for p in polls) == [str(PACK), str(PACK + 1)]
    assert polls[0].xml.attrib == {"ka": "umuser", "pwd": fake.password, "id": str(PACK)}


async def test_a_poll_call_covers_its_whole_pack_and_stops_at_the_rounds_cap(
    adapter: MutlucellAdapter, fake: FakeMutlucell
) -> None:
    first = await adapter.submit_batch([message(to) for to in numbers(3)])
    second = await adapter.submit(message(TO))
    calls = ReportCalls(1)
    asked = ["x1:90532", first[0].provider_message_id or "", second.provider_message_id or ""]

    reports = await adapter.poll_reports_within(asked, calls)

    assert [r.provider_message_id for r in reports] == [first[0].provider_message_id]
    # One call: the first pack, every number its answer names (asked or not); the second
    # pack waits for the next round; an id that is no pack of ours is never asked.
    assert calls.cut_short
    assert calls.covered == {o.provider_message_id for o in first} | {"x1:90532"}
    assert len([r for r in fake.received if r.path == "/smsgw-ws/gtblkrprtex"]) == 1


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        ("5321234567 3\n", "delivered"),  # national form
        ("+905321234567\t3\r\n", "delivered"),
        ("05321234567 3 2026-01-02 10:00\n", "delivered"),  # extra columns are ignored
        ("905321234567\n", None),
        ("905321234567 x\n", None),
        ("", None),
    ],
)
async def test_report_lines_are_read_defensively(
    adapter: MutlucellAdapter, lines: str, expected: str | None
) -> None:
    client = httpx.AsyncClient(
        transport=httpx.MockTransport(lambda _: httpx.Response(200, text=lines))
    )
    poller = MutlucellAdapter(connection(), {"username": "u", "password": "p"}, client=client)
    reports = await poller.poll_reports([f"{PACK}:905321234567"])
    await client.aclose()
    assert [r.status for r in reports] == ([] if expected is None else [expected])


@pytest.mark.parametrize("error", ["20", "23", "30"])
async def test_a_refused_poll_gives_no_reports(
    adapter: MutlucellAdapter, fake: FakeMutlucell, error: str
) -> None:
    accepted = await adapter.submit(message())
    assert accepted.provider_message_id is not None
    fake.report_error = error
    assert await adapter.poll_reports([accepted.provider_message_id]) == []


async def test_an_unreachable_report_endpoint_gives_no_reports() -> None:
    adapter = MutlucellAdapter(
        connection("http://127.0.0.1:1"), {"username": "u", "password": "p"}, sleep=no_sleep
    )
    assert await adapter.poll_reports([f"{PACK}:905321234567"]) == []
    await adapter.aclose()


def test_mutlucell_pushes_no_reports(adapter: MutlucellAdapter) -> None:
    assert adapter.parse_reports(InboundCallback("POST", {}, {}, b"905321234567 3")) == []


# --- credentials --------------------------------------------------------------------------------


async def test_check_passes_with_good_credentials(
    adapter: MutlucellAdapter, fake: FakeMutlucell
) -> None:
    await adapter.check()
    [credit] = fake.received
    assert (credit.path, credit.xml.tag) == ("/smsgw-ws/gtcrdtex", "smskredi")


async def test_check_refuses_bad_credentials_without_naming_them(fake: FakeMutlucell) -> None:
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=fake.app))
    adapter = MutlucellAdapter(
        connection(), {"username": "x", "password": "wrong-pw"}, client=client
    )
    with pytest.raises(InvalidCredentials) as raised:
        await adapter.check()
    await client.aclose()
    assert "wrong-pw" not in str(raised.value)


async def test_check_says_unavailable_when_mutlucell_cannot_be_reached() -> None:
    adapter = MutlucellAdapter(
        connection("http://127.0.0.1:1"), {"username": "u", "password": "p"}, sleep=no_sleep
    )
    with pytest.raises(ProviderUnavailable):
        await adapter.check()
    await adapter.aclose()


@pytest.mark.parametrize(
    ("given", "named"),
    [
        ({"username": "umuser"}, "password is missing"),
        ({"password": "pw"}, "username is missing"),
        ({"username": "", "password": "pw"}, "username"),
        ({"username": "u", "password": "pw", "ka": "u"}, "ka is not a credential"),
    ],
)
def test_bad_credentials_name_the_field(given: dict[str, str], named: str) -> None:
    with pytest.raises(InvalidCredentials, match=named) as raised:
        MutlucellAdapter(connection(), given)
    assert "pw" not in str(raised.value).replace("password", "")


def test_no_secret_in_repr() -> None:
    adapter = MutlucellAdapter(connection(), {"username": "u", "password": "hunter2-secret"})
    assert "hunter2" not in repr(adapter)
    assert "hunter2" not in repr(adapter.credentials)


def test_spec_registers_sms_d() -> None:
    assert (SPEC.code, SPEC.credentials) == ("sms_d", Credentials)
    adapter = SPEC.factory(connection(None), {"username": "u", "password": "p"})
    assert isinstance(adapter, MutlucellAdapter)
    assert adapter.base_url == "https://smsgw.mutlucell.com"
    assert (adapter.code, adapter.max_batch) == ("sms_d", 100)
