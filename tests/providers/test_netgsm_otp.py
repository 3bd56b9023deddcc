"""NetGSM's OTP route (``sms_a`` with ``otp`` on) against a local fake speaking its XML:
one-time codes go by ``/sms/send/otp``, everything else (and a code the route cannot take)
by REST v2; 60 and 80 fall back to the normal send; the other codes map to outcomes."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from fakes.netgsm import Canned, NetgsmFake

from unified_messaging._clock import ManualClock
from unified_messaging._domain import Connection
from unified_messaging.providers._netgsm_otp import otp_text
from unified_messaging.providers.base import SubmitRequest
from unified_messaging.providers.netgsm import NetgsmAdapter

CREDENTIALS = {"usercode": "8503334455", "password": "s3cret-pass"}
CODE_TEXT = "Doğrulama kodunuz: 482916. Kimseyle paylaşmayın."


def connection() -> Connection:
    return Connection(
        id="conn_a", workspace_id="ws_1", provider="sms_a",
        created_at=datetime(2026, 1, 1, tzinfo=UTC), credentials="v1.k.n.c",
        base_url="http://netgsm.test",
    )  # fmt: skip


def code(to: str = "+905321234567", text: str = CODE_TEXT, **extra: object) -> SubmitRequest:
    return SubmitRequest(
        job_id="job_1",
        to=to,
        text=text,
        sender="ACME",
        one_time_code=True,
        **extra,  # type: ignore[arg-type]
    )


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(datetime(2026, 3, 2, 9, 0, tzinfo=UTC))


@pytest.fixture
def fake(clock: ManualClock) -> NetgsmFake:
    return NetgsmFake(monotonic=lambda: clock.now().timestamp())


@pytest.fixture
async def client(fake: NetgsmFake) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=fake.app)) as http:
        yield http


@pytest.fixture
def adapter(client: httpx.AsyncClient, clock: ManualClock) -> NetgsmAdapter:
    credentials = {**CREDENTIALS, "otp": "true"}
    return NetgsmAdapter(connection(), credentials, client=client, clock=clock)


def _sent(fake: NetgsmFake) -> ET.Element:
    return ET.fromstring(fake.otp_sends[-1].body)  # noqa: S314 - our own request


async def test_a_code_goes_by_the_otp_route_in_netgsms_xml(
    adapter: NetgsmAdapter, fake: NetgsmFake
) -> None:
    outcome = await adapter.submit(code())

    assert outcome.kind == "accepted"
    assert outcome.provider_message_id == "17000001:+905321234567"
    assert (len(fake.otp_sends), len(fake.sends)) == (1, 0)
    received = fake.otp_sends[-1]
    assert received.headers["content-type"].startswith("text/xml")
    sent = _sent(fake)
    assert sent.tag == "mainbody"
    assert sent.findtext("header/usercode") == "8503334455"
    assert sent.findtext("header/password") == "s3cret-pass"
    assert sent.findtext("header/msgheader") == "ACME"
    assert sent.findtext("body/no") == "5321234567"
    # No Turkish letters on the OTP route: their Latin base letters instead.
    assert sent.findtext("body/msg") == "Dogrulama kodunuz: 482916. Kimseyle paylasmayin."
    assert b"<![CDATA[" in received.body


async def test_an_accepted_code_is_polled_like_any_netgsm_job(
    adapter: NetgsmAdapter, fake: NetgsmFake
) -> None:
    outcome = await adapter.submit(code())
    assert outcome.provider_message_id is not None
    fake.set_status("17000001", "5321234567", 1, delivered_date="02.03.2026 12:00:05")

    [report] = await adapter.poll_reports([outcome.provider_message_id])

    assert (report.status, report.provider_message_id) == ("delivered", "17000001:+905321234567")


async def test_an_ordinary_message_goes_the_normal_way(
    adapter: NetgsmAdapter, fake: NetgsmFake
) -> None:
    plain = SubmitRequest(job_id="job_2", to="+905321234567", text="Merhaba", sender="ACME")

    outcome = await adapter.submit(plain)

    assert outcome.kind == "accepted"
    assert (len(fake.otp_sends), len(fake.sends)) == (0, 1)


async def test_without_the_setting_codes_go_the_normal_way(
    client: httpx.AsyncClient, clock: ManualClock, fake: NetgsmFake
) -> None:
    adapter = NetgsmAdapter(connection(), CREDENTIALS, client=client, clock=clock)

    assert (await adapter.submit(code())).kind == "accepted"
    assert (len(fake.otp_sends), len(fake.sends)) == (0, 1)


async def test_a_code_over_one_part_goes_the_normal_way(
    adapter: NetgsmAdapter, fake: NetgsmFake
) -> None:
    long_text = "Kodunuz 482916. " + "x" * 160

    assert (await adapter.submit(code(text=long_text))).kind == "accepted"
    assert (len(fake.otp_sends), len(fake.sends)) == (0, 1)


async def test_no_otp_package_falls_back_to_the_normal_send_and_rests_the_route(
    adapter: NetgsmAdapter, fake: NetgsmFake, clock: ManualClock
) -> None:
    fake.otp_package = False

    first = await adapter.submit(code())
    second = await adapter.submit(code(to="+905321234568"))

    assert (first.kind, second.kind) == ("accepted", "accepted")
    assert len(fake.otp_sends) == 1  # asked once, then rested
    assert len(fake.sends) == 2
    # The normal route sends the text as it is, Turkish letters and all.
    assert fake.sends[0].json["messages"][0]["msg"] == CODE_TEXT  # type: ignore[index]
    clock.advance(timedelta(hours=1))
    fake.otp_package = True
    await adapter.submit(code(to="+905321234569"))
    assert len(fake.otp_sends) == 2


async def test_over_a_hundred_a_minute_falls_back_to_the_normal_send(
    adapter: NetgsmAdapter, fake: NetgsmFake, clock: ManualClock
) -> None:
    fake.script(Canned(status=200, body=_xml("80", error="Sorgulama sınır aşımı")))

    outcome = await adapter.submit(code())

    assert outcome.kind == "accepted"
    assert (len(fake.otp_sends), len(fake.sends)) == (1, 1)
    clock.advance(timedelta(minutes=1))
    await adapter.submit(code(to="+905321234568"))
    assert len(fake.otp_sends) == 2  # the route is tried again the next minute


def _xml(code: str, *, error: str | None = None, jobid: str | None = None) -> bytes:
    inner = f"<code>{code}</code>"
    inner += f"<jobID>{jobid}</jobID>" if jobid else ""
    inner += f"<error>{error}</error>" if error else ""
    return f'<?xml version="1.0"?><xml><main>{inner}</main></xml>'.encode()


@pytest.mark.parametrize(
    ("answer", "kind", "error_code"),
    [
        ("20", "rejected", "BODY_REJECTED"),
        ("30", "rejected", "PROVIDER_AUTH_FAILED"),
        ("40", "rejected", "SENDER_NOT_APPROVED"),
        ("41", "rejected", "SENDER_NOT_APPROVED"),
        ("50", "recipient_failed", "INVALID_RECIPIENT"),
        ("70", "rejected", "PROVIDER_REJECTED"),
        ("100", "unavailable", "PROVIDER_UNAVAILABLE"),
        ("99", "rejected", "PROVIDER_REJECTED"),
    ],
)
async def test_otp_refusals_map_to_our_outcomes(
    adapter: NetgsmAdapter, fake: NetgsmFake, answer: str, kind: str, error_code: str
) -> None:
    fake.script(Canned(status=200, body=_xml(answer, error="hata")))

    outcome = await adapter.submit(code())

    assert outcome.kind == kind
    assert outcome.error is not None and outcome.error.code == error_code
    assert fake.sends == []  # only 60 and 80 fall back


@pytest.mark.parametrize(
    ("status", "body", "kind"),
    [
        (200, b"<html>proxy</html>", "unknown"),  # a 2xx we cannot read: maybe taken
        (200, _xml("0"), "unknown"),  # accepted without a job id: nothing to follow
        (502, b"bad gateway", "unavailable"),
        (429, b"slow down", "unavailable"),
        (200, b"", "unknown"),
    ],
)
async def test_unreadable_otp_answers_follow_the_one_rule(
    adapter: NetgsmAdapter, fake: NetgsmFake, status: int, body: bytes, kind: str
) -> None:
    fake.script(Canned(status=status, body=body, content_type="text/xml"))

    assert (await adapter.submit(code())).kind == kind


async def test_the_fake_refuses_what_netgsm_refuses(fake: NetgsmFake) -> None:
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=fake.app), base_url="http://netgsm.test"
    ) as http:
        turkish = _body("Doğrulama kodunuz 1234", "5321234567")
        landline = _body("Kodunuz 1234", "2121234567")
        answers = [await http.post("/sms/send/otp", content=b) for b in (turkish, landline)]
    codes = [ET.fromstring(a.content).findtext("main/code") for a in answers]  # noqa: S314
    assert codes == ["20", "50"]


def _body(text: str, number: str) -> bytes:
    from unified_messaging.providers._netgsm_otp import otp_body

    return otp_body("8503334455", "s3cret-pass", "ACME", text, number)


def test_a_cdata_end_in_a_text_cannot_end_the_section() -> None:
    from unified_messaging.providers._netgsm_otp import otp_body

    body = otp_body("u", "p&<", "H", "a]]>b", "5321234567")
    parsed = ET.fromstring(body)  # noqa: S314
    assert parsed.findtext("body/msg") == "a]]>b"
    assert parsed.findtext("header/password") == "p&<"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Şifre: 1234 ğüöçıİ", "Sifre: 1234 guociI"),
        ("Your code is 1234.", "Your code is 1234."),
        ("Kod {1234} €", "Kod {1234} €"),  # GSM-7's extension table is GSM-7
        ("x" * 161, None),
        ("日本 1234", None),
    ],
)
def test_the_otp_text(text: str, expected: str | None) -> None:
    assert otp_text(text) == expected
