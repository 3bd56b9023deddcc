"""The ``sms_b`` adapter (İletimerkezi JSON v1) against a local fake speaking its format."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from fakes._server import serve
from fakes.iletimerkezi import Canned, IletimerkeziFake

from unified_messaging._domain import Connection
from unified_messaging._errors import InvalidCredentials, ProviderUnavailable
from unified_messaging._types import IysMode
from unified_messaging.providers.base import (
    PROFILES,
    InboundCallback,
    ProviderAdapter,
    SubmitRequest,
)
from unified_messaging.providers.iletimerkezi import (
    MAX_ANSWER_BYTES,
    SPEC,
    Credentials,
    IletimerkeziAdapter,
)

CREDENTIALS = {"api_key": "a1b2c3d4e5f6", "api_hash": "0f9e8d7c6b5a4f3e2d1c"}
BASE = "http://iletimerkezi.test"


def connection(**changes: Any) -> Connection:
    values: dict[str, Any] = {
        "id": "conn_b",
        "workspace_id": "ws_1",
        "provider": "sms_b",
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
) -> SubmitRequest:
    return SubmitRequest(job_id="job_1", to=to, text=text, sender=sender, iys_mode=iys_mode)


def order_of(received: Any) -> dict[str, Any]:
    order: dict[str, Any] = received.json["request"]["order"]
    return order


@pytest.fixture
def fake() -> IletimerkeziFake:
    return IletimerkeziFake()


@pytest.fixture
async def client(fake: IletimerkeziFake) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=fake.app)) as http:
        yield http


@pytest.fixture
def adapter(client: httpx.AsyncClient) -> IletimerkeziAdapter:
    return IletimerkeziAdapter(connection(), CREDENTIALS, client=client)


# --- acceptance and the wire body ------------------------------------------------------------


async def test_an_accepted_message_carries_the_order_id_and_number(
    adapter: IletimerkeziAdapter,
) -> None:
    outcome = await adapter.submit(message())

    assert outcome.kind == "accepted"
    assert outcome.provider_message_id == "40000001:+905321234567"


async def test_the_wire_body_is_iletimerkezis_json_v1_format(
    adapter: IletimerkeziAdapter, fake: IletimerkeziFake
) -> None:
    await adapter.submit(message(iys_mode="commercial_individual"))

    [sent] = fake.orders
    assert sent.headers["content-type"] == "application/json"
    assert sent.json == {
        "request": {
            "authentication": {"key": "a1b2c3d4e5f6", "hash": "0f9e8d7c6b5a4f3e2d1c"},
            "order": {
                "sender": "ACME",
                "sendDateTime": [],
                "iys": "1",
                "iysList": "BIREYSEL",
                "message": {
                    "text": "Siparişiniz yola çıktı",
                    "receipents": {"number": ["5321234567"]},
                },
            },
        }
    }


@pytest.mark.parametrize(
    ("mode", "iys", "iys_list"),
    [
        ("informational", "0", None),
        ("commercial_individual", "1", "BIREYSEL"),
        ("commercial_merchant", "1", "TACIR"),
    ],
)
async def test_the_iys_mode_becomes_iys_and_iyslist(
    adapter: IletimerkeziAdapter,
    fake: IletimerkeziFake,
    mode: IysMode,
    iys: str,
    iys_list: str | None,
) -> None:
    await adapter.submit(message(iys_mode=mode))

    order = order_of(fake.orders[0])
    assert (order["iys"], order.get("iysList")) == (iys, iys_list)


async def test_turkish_characters_arrive_intact(
    adapter: IletimerkeziAdapter, fake: IletimerkeziFake
) -> None:
    text = "Şu ığdır İÇİN ş ğ ı İ ç Ğ Ş ü ö"

    await adapter.submit(message(text=text))

    assert order_of(fake.orders[0])["message"]["text"] == text
    assert text.encode() in fake.orders[0].body


async def test_the_connections_default_sender_stands_in_for_a_missing_one(
    client: httpx.AsyncClient, fake: IletimerkeziFake
) -> None:
    adapter = IletimerkeziAdapter(connection(default_sender="ACMEBILGI"), CREDENTIALS,
                                  client=client)  # fmt: skip

    outcome = await adapter.submit(message(sender=None))

    assert outcome.kind == "accepted"
    assert order_of(fake.orders[0])["sender"] == "ACMEBILGI"


# --- refusals decided before any call ---------------------------------------------------------


@pytest.mark.parametrize(
    ("request_", "kind", "code"),
    [
        (message(to="+4915112345678"), "recipient_failed", "INVALID_RECIPIENT"),
        (message(to="+903121234567"), "recipient_failed", "INVALID_RECIPIENT"),
        (message(sender=None), "rejected", "SENDER_REQUIRED"),
        (message(sender="HEADER-TOO-LONG"), "rejected", "SENDER_NOT_APPROVED"),
        (message(text=""), "rejected", "BODY_REJECTED"),
        (message(text="x" * (7 * 153 + 1)), "rejected", "BODY_TOO_LONG"),
    ],
)
async def test_what_iletimerkezi_would_refuse_is_refused_without_a_call(
    adapter: IletimerkeziAdapter,
    fake: IletimerkeziFake,
    request_: SubmitRequest,
    kind: str,
    code: str,
) -> None:
    outcome = await adapter.submit(request_)

    assert (outcome.kind, outcome.error and outcome.error.code) == (kind, code)
    assert fake.received == []


# --- every status code -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "kind", "our_code"),
    [
        (400, "rejected", "PROVIDER_REJECTED"),
        (401, "rejected", "PROVIDER_AUTH_FAILED"),
        (402, "rejected", "INSUFFICIENT_CREDIT"),
        (404, "rejected", "PROVIDER_REJECTED"),
        (422, "rejected", "PROVIDER_REJECTED"),
        (450, "rejected", "SENDER_NOT_APPROVED"),
        (451, "rejected", "DUPLICATE_MESSAGE"),
        (452, "recipient_failed", "INVALID_RECIPIENT"),
        (453, "rejected", "BODY_TOO_LONG"),
        (454, "rejected", "BODY_REJECTED"),
        (457, "rejected", "PROVIDER_REJECTED"),
        (459, "rejected", "SENDER_REQUIRED"),
        (460, "rejected", "SENDER_NOT_APPROVED"),
        (468, "rejected", "PROVIDER_REJECTED"),
        (469, "rejected", "PROVIDER_REJECTED"),
        (470, "rejected", "IYS_NOT_CONFIGURED"),
        (499, "rejected", "PROVIDER_REJECTED"),
        (503, "unavailable", "PROVIDER_UNAVAILABLE"),
    ],
)
async def test_each_iletimerkezi_code_maps_to_its_outcome(
    adapter: IletimerkeziAdapter, fake: IletimerkeziFake, code: int, kind: str, our_code: str
) -> None:
    fake.script(Canned(code=code))

    outcome = await adapter.submit(message())

    assert outcome.kind == kind
    assert outcome.error is not None and outcome.error.code == our_code
    assert outcome.provider_message_id is None


async def test_the_code_in_the_body_wins_over_the_http_status(
    adapter: IletimerkeziAdapter, fake: IletimerkeziFake
) -> None:
    fake.script(Canned(code=450, status=200))

    outcome = await adapter.submit(message())

    assert outcome.error is not None and outcome.error.code == "SENDER_NOT_APPROVED"


async def test_the_real_checks_answer_with_their_codes(
    client: httpx.AsyncClient, fake: IletimerkeziFake
) -> None:
    wrong = IletimerkeziAdapter(connection(), {**CREDENTIALS, "api_hash": "nope"}, client=client)
    right = IletimerkeziAdapter(connection(), CREDENTIALS, client=client)
    fake.blocked.add("5320000009")

    outcomes = [
        await wrong.submit(message()),
        await right.submit(message(sender="OTHER")),
        await right.submit(message(to="+905320000009")),
        await right.submit(message(text="Aynı metin")),
        await right.submit(message(text="Aynı metin")),
    ]

    assert [o.error and o.error.code for o in outcomes] == [
        "PROVIDER_AUTH_FAILED",
        "SENDER_NOT_APPROVED",
        "INVALID_RECIPIENT",
        None,
        "DUPLICATE_MESSAGE",
    ]


async def test_a_200_without_an_order_id_is_not_taken_for_acceptance(
    adapter: IletimerkeziAdapter, fake: IletimerkeziFake
) -> None:
    fake.script(Canned(body=json.dumps({"response": {"status": {"code": 200}}}).encode()))

    outcome = await adapter.submit(message())

    assert outcome.kind == "unknown"


# --- answers that cannot be read ---------------------------------------------------------------


@pytest.mark.parametrize("status", [500, 502, 503, 504])
async def test_a_5xx_is_unavailable(
    adapter: IletimerkeziAdapter, fake: IletimerkeziFake, status: int
) -> None:
    ok = b'{"response": {"status": {"code": 200}, "order": {"id": "1"}}}'
    fake.script(Canned(status=status, body=ok))

    outcome = await adapter.submit(message())

    assert outcome.kind == "unavailable"
    assert outcome.error is not None and outcome.error.code == "PROVIDER_UNAVAILABLE"


async def test_a_429_is_unavailable_with_its_retry_after(
    adapter: IletimerkeziAdapter, fake: IletimerkeziFake
) -> None:
    fake.script(Canned(status=429, body=b"{}", headers={"Retry-After": "12"}))

    outcome = await adapter.submit(message())

    assert outcome.kind == "unavailable"
    assert outcome.retry_after == 12.0


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b'{"response": {"status": {"code": 200}, "order": {"id": "4', "application/json"),
        (b"status=200&order=1", "application/json"),
        (b"", "application/json"),
        (b"[200]", "application/json"),
        (b'{"status": {"code": 200}, "order": {"id": "1"}}', "application/json"),
        (b"[" * 100_000, "application/json"),
        (b"<html><body>Service Unavailable</body></html>", "text/html"),
        (b"<response><status><code>200</code></status></response>", "application/xml"),
    ],
)
async def test_an_unreadable_answer_is_unknown(
    adapter: IletimerkeziAdapter, fake: IletimerkeziFake, body: bytes, content_type: str
) -> None:
    fake.script(Canned(status=200, body=body, content_type=content_type))

    outcome = await adapter.submit(message())

    assert outcome.kind == "unknown"
    assert outcome.error is not None and "İletimerkezi" in outcome.error.message


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
async def test_a_huge_answer_is_cut_off_and_unknown(
    adapter: IletimerkeziAdapter, fake: IletimerkeziFake, chunked: bool
) -> None:
    pad = b"x" * (8 * 1024 * 1024)
    huge = b'{"response": {"status": {"code": 200}, "order": {"id": "1"}, "p": "' + pad + b'"}}'
    fake.script(Canned(status=200, body=huge, chunked=chunked))

    outcome = await adapter.submit(message())

    assert outcome.kind == "unknown"
    assert outcome.error is not None and "over" in outcome.error.message
    assert len(huge) > MAX_ANSWER_BYTES


# --- batches -----------------------------------------------------------------------------------


async def test_one_text_to_a_full_batch_is_one_order(
    adapter: IletimerkeziAdapter, fake: IletimerkeziFake
) -> None:
    size = PROFILES["sms_b"].max_batch
    requests = [message(to=f"+90532{i:07d}", text="Kampanya") for i in range(size)]

    outcomes = await adapter.submit_batch(requests)

    [sent] = fake.orders
    assert order_of(sent)["message"]["receipents"]["number"] == [r.to[3:] for r in requests]
    assert [o.provider_message_id for o in outcomes] == [f"40000001:{r.to}" for r in requests]


async def test_different_texts_go_as_repeated_message_entries(
    adapter: IletimerkeziAdapter, fake: IletimerkeziFake
) -> None:
    requests = [
        message(to="+905320000001", text="Merhaba Ayşe"),
        message(to="+905320000002", text="Merhaba Işıl"),
        message(to="+905320000003", text="Merhaba Ayşe"),
    ]

    outcomes = await adapter.submit_batch(requests)

    assert order_of(fake.orders[0])["message"] == [
        {"text": "Merhaba Ayşe", "receipents": {"number": ["5320000001", "5320000003"]}},
        {"text": "Merhaba Işıl", "receipents": {"number": ["5320000002"]}},
    ]
    assert all(o.kind == "accepted" for o in outcomes)


async def test_a_batch_past_the_limit_is_split(
    adapter: IletimerkeziAdapter, fake: IletimerkeziFake
) -> None:
    size = adapter.max_batch
    requests = [message(to=f"+90532{i:07d}") for i in range(size + 1)]

    outcomes = await adapter.submit_batch(requests)

    counts = [len(order_of(o)["message"]["receipents"]["number"]) for o in fake.orders]
    assert counts == [size, 1]
    assert outcomes[-1].provider_message_id == f"40000002:{requests[-1].to}"


async def test_one_number_twice_in_a_batch_gets_two_orders_and_two_ids(
    adapter: IletimerkeziAdapter, fake: IletimerkeziFake
) -> None:
    outcomes = await adapter.submit_batch([message(text="a"), message(text="b")])

    assert len(fake.orders) == 2
    assert outcomes[0].provider_message_id != outcomes[1].provider_message_id


async def test_a_batch_is_grouped_by_sender_and_iys_and_keeps_its_order(
    adapter: IletimerkeziAdapter, fake: IletimerkeziFake
) -> None:
    requests = [
        message(to="+905320000001"),
        message(to="+905320000002", iys_mode="commercial_merchant"),
        message(to="bogus"),
        message(to="+905320000003", sender="ACMEBILGI"),
        message(to="+905320000004"),
    ]

    outcomes = await adapter.submit_batch(requests)

    assert [o.kind for o in outcomes] == [
        "accepted", "accepted", "recipient_failed", "accepted", "accepted",
    ]  # fmt: skip
    assert len(fake.orders) == 3
    assert outcomes[4].provider_message_id == "40000001:+905320000004"


async def test_a_bad_number_refuses_its_order_marked_refused_together(
    adapter: IletimerkeziAdapter, fake: IletimerkeziFake
) -> None:
    # Routing finds the number by sending again (tests/lifecycle_http/test_batch_refusals_http.py).
    fake.blocked.add("5320000002")
    requests = [message(to=f"+90532000000{i}", text="Duyuru") for i in (1, 2, 3)]

    outcomes = await adapter.submit_batch(requests)

    assert {(o.kind, o.batch_refusal) for o in outcomes} == {("recipient_failed", True)}
    assert len(fake.orders) == 1


# --- pushed reports ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("word", "status", "error_code"),
    [
        ("accepted", "pending", None),
        ("delivered", "delivered", None),
        ("undelivered", "failed", "RECIPIENT_UNREACHABLE"),
        (111, "delivered", None),
        (112, "failed", "RECIPIENT_UNREACHABLE"),
        ("something-new", "unknown", None),
    ],
)
async def test_each_pushed_status_is_read(
    adapter: IletimerkeziAdapter,
    fake: IletimerkeziFake,
    word: str | int,
    status: str,
    error_code: str | None,
) -> None:
    accepted = await adapter.submit(message())
    callback = fake.webhook("40000001", "5321234567", "x")
    body = json.loads(callback.body)
    body["report"]["status"] = word

    [report] = adapter.parse_reports(
        InboundCallback("POST", callback.headers, {}, json.dumps(body).encode())
    )

    assert report.provider_message_id == accepted.provider_message_id
    assert (report.status, report.provider_status) == (status, str(word))
    assert (report.error and report.error.code) == error_code
    assert report.to == "+905321234567"


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"{}",
        b'{"report": null}',
        b'{"report": {"packet_id": 1, "status": "delivered", "to": "12345"}}',
        b'{"report": {"status": "delivered", "to": "+905321234567"}}',
        b'{"report": {"packet_id": true, "status": "delivered", "to": "+905321234567"}}',
        b"[" * 100_000,
        b'{"report": {"packet_id": 1, "body": "' + b"x" * (MAX_ANSWER_BYTES + 1) + b'"}}',
    ],
)
def test_a_push_that_is_not_a_report_gives_none(adapter: IletimerkeziAdapter, body: bytes) -> None:
    assert adapter.parse_reports(InboundCallback("POST", {}, {}, body)) == []


# --- polled reports ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "status", "error_code"),
    [
        (110, "pending", None),
        (111, "delivered", None),
        (112, "failed", "RECIPIENT_UNREACHABLE"),
        (119, "unknown", None),
    ],
)
async def test_each_polled_status_is_read(
    adapter: IletimerkeziAdapter,
    fake: IletimerkeziFake,
    code: int,
    status: str,
    error_code: str | None,
) -> None:
    accepted = await adapter.submit(message())
    fake.set_status("40000001", "5321234567", code)

    [report] = await adapter.poll_reports([accepted.provider_message_id or ""])

    assert report.provider_message_id == accepted.provider_message_id
    assert (report.status, report.provider_status) == (status, str(code))
    assert (report.error and report.error.code) == error_code


async def test_the_report_request_names_the_order(
    adapter: IletimerkeziAdapter, fake: IletimerkeziFake
) -> None:
    await adapter.poll_reports(["40000007:+905321234567"])

    assert fake.received[0].path == "/v1/get-report/json"
    assert fake.received[0].json["request"]["order"] == {  # type: ignore[index]
        "id": "40000007",
        "page": 1,
        "rowCount": 1000,
    }


async def test_one_call_an_order_and_only_the_numbers_asked_for(
    adapter: IletimerkeziAdapter, fake: IletimerkeziFake
) -> None:
    first = await adapter.submit_batch([message(to="+905320000001"), message()])
    second = await adapter.submit(message(to="+905320000003"))

    reports = await adapter.poll_reports(
        [first[1].provider_message_id or "", second.provider_message_id or ""]
    )

    assert sorted(r.to or "" for r in reports) == ["+905320000003", "+905321234567"]
    assert len([r for r in fake.received if r.path == "/v1/get-report/json"]) == 2


async def test_an_unknown_order_gives_no_reports(adapter: IletimerkeziAdapter) -> None:
    assert await adapter.poll_reports(["40009999:+905321234567"]) == []


async def test_a_failed_order_rejects_every_number_asked_for(
    adapter: IletimerkeziAdapter, fake: IletimerkeziFake
) -> None:
    accepted = await adapter.submit(message())
    fake.order_status["40000001"] = 115
    fake.rows.clear()

    [report] = await adapter.poll_reports([accepted.provider_message_id or ""])

    assert (report.status, report.provider_status) == ("rejected", "115")
    assert report.error is not None and report.error.code == "PROVIDER_REJECTED"


@pytest.mark.parametrize(
    "canned",
    [Canned(code=503), Canned(status=200, body=b"<html/>", content_type="text/html")],
)
async def test_a_failed_poll_gives_no_reports(
    adapter: IletimerkeziAdapter, fake: IletimerkeziFake, canned: Canned
) -> None:
    fake.script(canned)

    assert await adapter.poll_reports(["40000001:+905321234567"]) == []


# --- credentials -------------------------------------------------------------------------------


def test_a_missing_credential_is_named() -> None:
    with pytest.raises(InvalidCredentials, match="api_hash is missing"):
        IletimerkeziAdapter(connection(), {"api_key": "a1b2c3d4e5f6"})


def test_credential_errors_and_reprs_never_show_the_secret() -> None:
    with pytest.raises(InvalidCredentials) as raised:
        IletimerkeziAdapter(connection(), {**CREDENTIALS, "secret": "0f9e8d7c6b5a4f3e2d1c"})
    adapter = IletimerkeziAdapter(connection(), CREDENTIALS)

    assert "secret is not a credential" in str(raised.value)
    for text in (str(raised.value), repr(raised.value), repr(adapter), repr(adapter.credentials)):
        assert "0f9e8d7c6b5a4f3e2d1c" not in text
        assert "a1b2c3d4e5f6" not in text


def test_the_spec_registers_the_adapter() -> None:
    adapter = SPEC.factory(connection(), CREDENTIALS)

    assert (SPEC.code, SPEC.credentials) == ("sms_b", Credentials)
    assert isinstance(adapter, ProviderAdapter)
    assert adapter.code == "sms_b"
    assert adapter.max_batch == PROFILES["sms_b"].max_batch


async def test_the_credentials_check_passes_with_good_credentials(
    adapter: IletimerkeziAdapter, fake: IletimerkeziFake
) -> None:
    await adapter.check()

    assert fake.received[0].path == "/v1/get-balance/json"


async def test_the_credentials_check_names_a_refusal(
    client: httpx.AsyncClient, fake: IletimerkeziFake
) -> None:
    adapter = IletimerkeziAdapter(connection(), {**CREDENTIALS, "api_hash": "nope"},
                                  client=client)  # fmt: skip

    with pytest.raises(InvalidCredentials) as raised:
        await adapter.check()

    assert "nope" not in str(raised.value)


async def test_the_credentials_check_cannot_decide_when_iletimerkezi_is_down(
    adapter: IletimerkeziAdapter, fake: IletimerkeziFake
) -> None:
    fake.script(Canned(code=503))

    with pytest.raises(ProviderUnavailable):
        await adapter.check()


# --- over real loopback HTTP -------------------------------------------------------------------


async def test_a_send_over_loopback_http_is_accepted(fake: IletimerkeziFake) -> None:
    async with serve(fake.app) as base:
        adapter = IletimerkeziAdapter(connection(base_url=base), CREDENTIALS)
        try:
            outcome = await adapter.submit(message())
        finally:
            await adapter.aclose()

    assert outcome.provider_message_id == "40000001:+905321234567"
    assert order_of(fake.orders[0])["message"]["text"] == "Siparişiniz yola çıktı"


async def test_a_read_time_out_is_unknown_and_never_re_posted(
    fake: IletimerkeziFake,
) -> None:
    sleeps: list[float] = []

    async def no_sleep(seconds: float) -> None:
        sleeps.append(seconds)

    fake.script(Canned(code=200, body=b"{}", delay=0.3))
    timeout = httpx.Timeout(connect=2.0, read=0.05, write=2.0, pool=2.0)
    async with serve(fake.app) as base:
        adapter = IletimerkeziAdapter(
            connection(base_url=base), CREDENTIALS, timeout=timeout, sleep=no_sleep
        )
        try:
            outcome = await adapter.submit(message())
        finally:
            await adapter.aclose()

    assert outcome.kind == "unknown"
    assert outcome.error is not None and "read time-out" in outcome.error.message
    assert (len(fake.orders), sleeps) == (1, [])


async def test_a_refused_connection_is_retried_then_unavailable() -> None:
    sleeps: list[float] = []

    async def no_sleep(seconds: float) -> None:
        sleeps.append(seconds)

    adapter = IletimerkeziAdapter(
        connection(base_url="http://127.0.0.1:1"), CREDENTIALS, sleep=no_sleep
    )
    try:
        outcome = await adapter.submit(message())
    finally:
        await adapter.aclose()

    assert outcome.kind == "unavailable"
    assert outcome.error is not None and "reached" in outcome.error.message
    assert len(sleeps) == 2  # connect_retries defaults to 2
