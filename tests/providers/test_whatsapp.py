"""The ``bizchat`` adapter (WhatsApp Cloud API) against a local fake speaking the Graph API."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from fakes._server import serve
from fakes.whatsapp import (
    ACCESS_TOKEN,
    APP_SECRET,
    PHONE_NUMBER_ID,
    Canned,
    WhatsAppFake,
    graph_error,
    status,
)

from unified_messaging._domain import Connection
from unified_messaging._errors import (
    InvalidCredentials,
    ProviderUnavailable,
    RequestInvalid,
    Unauthorized,
)
from unified_messaging.providers._whatsapp_codes import GRAPH_CODES
from unified_messaging.providers.base import (
    InboundCallback,
    ProviderAdapter,
    ProviderTemplate,
    SubmitRequest,
)
from unified_messaging.providers.whatsapp import (
    MAX_ANSWER_BYTES,
    SPEC,
    Credentials,
    WhatsAppAdapter,
    signature_header,
    verify_challenge,
)

BASE = "http://graph.test"
VERIFY_TOKEN = "verify-me-please"
CREDENTIALS = {
    "access_token": ACCESS_TOKEN,
    "phone_number_id": PHONE_NUMBER_ID,
    "app_secret": APP_SECRET,
    "verify_token": VERIFY_TOKEN,
}
IN_WINDOW = "+905551112233"
OUT_OF_WINDOW = "+905559998877"
MESSAGES_PATH = f"/v21.0/{PHONE_NUMBER_ID}/messages"


def connection(**changes: Any) -> Connection:
    values: dict[str, Any] = {
        "id": "conn_wa",
        "workspace_id": "ws_1",
        "provider": "bizchat",
        "created_at": datetime(2026, 1, 1, tzinfo=UTC),
        "credentials": "v1.k.n.c",
        "base_url": BASE,
        "dlr_token": "tok",
    }
    values.update(changes)
    return Connection(**values)


def message(
    to: str = IN_WINDOW, text: str = "Siparişiniz hazır", template: ProviderTemplate | None = None
) -> SubmitRequest:
    return SubmitRequest(job_id="job_1", to=to, text=text, template=template)


async def no_sleep(_: float) -> None:
    return None


@pytest.fixture
def fake() -> WhatsAppFake:
    return WhatsAppFake()


@pytest.fixture
async def client(fake: WhatsAppFake) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=fake.app)) as http:
        yield http


@pytest.fixture
def adapter(client: httpx.AsyncClient) -> WhatsAppAdapter:
    return WhatsAppAdapter(connection(), CREDENTIALS, client=client, sleep=no_sleep)


def mock_adapter(handler: Any, **kw: Any) -> WhatsAppAdapter:
    http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    return WhatsAppAdapter(connection(), CREDENTIALS, client=http, sleep=no_sleep, **kw)


def test_is_a_provider_adapter_for_bizchat_with_no_batches(adapter: WhatsAppAdapter) -> None:
    assert isinstance(adapter, ProviderAdapter)
    assert (adapter.code, adapter.max_batch) == ("bizchat", 1)
    assert (SPEC.code, SPEC.credentials) == ("bizchat", Credentials)
    assert isinstance(SPEC.factory(connection(), CREDENTIALS), WhatsAppAdapter)


def test_the_default_base_url_is_the_graph_api() -> None:
    assert WhatsAppAdapter(connection(base_url=None), CREDENTIALS).base_url == (
        "https://graph.facebook.com"
    )


# --- sending ------------------------------------------------------------------------------------


async def test_an_accepted_text_message_carries_the_wamid(adapter: WhatsAppAdapter) -> None:
    outcome = await adapter.submit(message())

    assert outcome.kind == "accepted"
    assert outcome.provider_message_id is not None
    assert outcome.provider_message_id.startswith("wamid.")


async def test_the_text_request_is_cloud_api_json_with_bearer_auth(
    adapter: WhatsAppAdapter, fake: WhatsAppFake
) -> None:
    await adapter.submit(message())

    [sent] = fake.received
    assert (sent.method, sent.path) == ("POST", MESSAGES_PATH)
    assert sent.headers["authorization"] == f"Bearer {ACCESS_TOKEN}"
    assert sent.headers["content-type"] == "application/json"
    assert sent.json == {
        "messaging_product": "whatsapp",
        "recipient_type": "individual",
        "to": "905551112233",
        "type": "text",
        "text": {"body": "Siparişiniz hazır", "preview_url": False},
    }


async def test_a_template_request_carries_name_language_and_body_parameters(
    adapter: WhatsAppAdapter, fake: WhatsAppFake
) -> None:
    template = ProviderTemplate("order_ready", "tr", ("Ayşe", "#1234 🎁"))

    outcome = await adapter.submit(message(OUT_OF_WINDOW, template=template))

    assert outcome.kind == "accepted"
    assert fake.received[0].json == {
        "messaging_product": "whatsapp",
        "recipient_type": "individual",
        "to": "905559998877",
        "type": "template",
        "template": {
            "name": "order_ready",
            "language": {"code": "tr"},
            "components": [
                {
                    "type": "body",
                    "parameters": [
                        {"type": "text", "text": "Ayşe"},
                        {"type": "text", "text": "#1234 🎁"},
                    ],
                }
            ],
        },
    }


async def test_a_template_without_parameters_has_no_components(
    adapter: WhatsAppAdapter, fake: WhatsAppFake
) -> None:
    fake.templates[("hello_world", "en_US")] = 0

    outcome = await adapter.submit(message(template=ProviderTemplate("hello_world", "en_US")))

    assert outcome.kind == "accepted"
    assert fake.received[0].json["template"] == {  # type: ignore[index]
        "name": "hello_world",
        "language": {"code": "en_US"},
    }


async def test_turkish_characters_and_emoji_arrive_intact(
    adapter: WhatsAppAdapter, fake: WhatsAppFake
) -> None:
    text = "Şişli'de ğüıöç İĞÜ 🚚🎉 — 👨‍👩‍👧"

    assert (await adapter.submit(message(text=text))).kind == "accepted"

    assert fake.received[0].json["text"]["body"] == text  # type: ignore[index]


async def test_the_api_version_is_configurable(
    client: httpx.AsyncClient, fake: WhatsAppFake
) -> None:
    adapter = WhatsAppAdapter(connection(), {**CREDENTIALS, "api_version": "v23.0"}, client=client)

    await adapter.submit(message())

    assert fake.received[0].path == f"/v23.0/{PHONE_NUMBER_ID}/messages"


# --- refusals -----------------------------------------------------------------------------------


async def test_free_text_outside_the_24_hour_window_is_a_recipient_failure(
    adapter: WhatsAppAdapter,
) -> None:
    outcome = await adapter.submit(message(OUT_OF_WINDOW))

    assert outcome.kind == "recipient_failed"
    assert outcome.error is not None
    assert outcome.error.code == "OUTSIDE_CUSTOMER_SERVICE_WINDOW"
    assert "131047" in outcome.error.message
    assert "24 hours" in outcome.error.message


@pytest.mark.parametrize(
    ("template", "code"),
    [
        (ProviderTemplate("no_such_template", "tr", ("a",)), "132001"),
        (ProviderTemplate("order_ready", "tr", ("only one",)), "132000"),
    ],
)
async def test_template_problems_are_rejected(
    adapter: WhatsAppAdapter, template: ProviderTemplate, code: str
) -> None:
    outcome = await adapter.submit(message(template=template))

    assert outcome.kind == "rejected"
    assert outcome.error is not None
    assert outcome.error.code == "TEMPLATE_REJECTED"
    assert code in outcome.error.message


async def test_a_bad_access_token_is_rejected_as_an_auth_failure(
    client: httpx.AsyncClient,
) -> None:
    adapter = WhatsAppAdapter(
        connection(), {**CREDENTIALS, "access_token": "EAAG-wrong"}, client=client
    )

    outcome = await adapter.submit(message())

    assert outcome.kind == "rejected"
    assert outcome.error is not None
    assert outcome.error.code == "PROVIDER_AUTH_FAILED"
    assert "190" in outcome.error.message


RECIPIENT = "recipient_failed"
UNREACHABLE = "RECIPIENT_UNREACHABLE"
AUTH = "PROVIDER_AUTH_FAILED"
REJECTED = "PROVIDER_REJECTED"
BUSY = "PROVIDER_UNAVAILABLE"
NOT_HEALTHY = "This message was not delivered to maintain healthy ecosystem engagement."


@pytest.mark.parametrize(
    ("canned", "kind", "code"),
    [
        (graph_error(400, 131026, "Message undeliverable"), RECIPIENT, UNREACHABLE),
        (graph_error(400, 131049, NOT_HEALTHY), RECIPIENT, UNREACHABLE),
        (graph_error(400, 131021, "Recipient cannot be sender."), RECIPIENT, "INVALID_RECIPIENT"),
        (graph_error(401, 0, "AuthException"), "rejected", AUTH),
        (graph_error(403, 10, "Permission Denied"), "rejected", AUTH),
        (graph_error(403, 200, "Permissions error"), "rejected", AUTH),
        (graph_error(400, 100, "Invalid parameter"), "rejected", REJECTED),
        (graph_error(400, 131008, "Required parameter is missing"), "rejected", REJECTED),
        (graph_error(400, 131051, "Unsupported message type"), "rejected", REJECTED),
        (
            graph_error(403, 368, "Temporarily blocked for policies violations"),
            "rejected",
            REJECTED,
        ),
        (graph_error(400, 131042, "Business eligibility payment issue"), "rejected", REJECTED),
        (graph_error(400, 133010, "Phone number Not Registered"), "rejected", REJECTED),
        (graph_error(400, 135000, "Generic user error"), "rejected", REJECTED),
        (graph_error(400, 131037, "Display name not approved"), "rejected", REJECTED),
        (graph_error(400, 132015, "Template is Paused"), "rejected", "TEMPLATE_REJECTED"),
        (
            graph_error(400, 132008, "Template parameter value invalid"),
            "rejected",
            "TEMPLATE_REJECTED",
        ),
        (
            graph_error(400, 131050, "Unable to deliver message: user stopped marketing"),
            RECIPIENT,
            "RECIPIENT_OPTED_OUT",
        ),
        (graph_error(400, 137000, "Identity key mismatch"), RECIPIENT, UNREACHABLE),
        (graph_error(400, 130429, "Rate limit hit"), "unavailable", BUSY),
        (graph_error(400, 131048, "Spam rate limit hit"), "unavailable", BUSY),
        (
            graph_error(400, 131056, "Pair rate limit hit"),
            "unavailable",
            "PROVIDER_RECIPIENT_THROTTLED",
        ),
        (graph_error(400, 80007, "Rate limit issues"), "unavailable", BUSY),
        (graph_error(400, 4, "Too many API calls"), "unavailable", BUSY),
        (graph_error(400, 133016, "Register/deregister rate limit"), "unavailable", BUSY),
        (graph_error(400, 131064, "Messaging limit reached"), "unavailable", BUSY),
        (
            graph_error(400, 613, "Calls to this api have exceeded the rate limit"),
            "unavailable",
            BUSY,
        ),
        (graph_error(400, 133004, "Server temporarily unavailable"), "unavailable", BUSY),
        (graph_error(500, 131000, "Something went wrong"), "unavailable", BUSY),
        (graph_error(503, 2, "Service temporarily unavailable"), "unavailable", BUSY),
        (graph_error(503, 131016, "Service unavailable"), "unavailable", BUSY),
        (graph_error(400, 999999, "A code nobody has seen yet"), "rejected", REJECTED),
        (graph_error(502, 999999, "A code nobody has seen yet"), "unavailable", BUSY),
        (graph_error(401, 999999, "A code nobody has seen yet"), "rejected", AUTH),
    ],
    ids=lambda v: (
        f"{v.status}-{json.loads(v.body)['error']['code']}" if isinstance(v, Canned) else v
    ),
)
async def test_graph_error_codes_map_to_outcomes(
    adapter: WhatsAppAdapter, fake: WhatsAppFake, canned: Canned, kind: str, code: str
) -> None:
    fake.script(canned)

    outcome = await adapter.submit(message())

    assert (outcome.kind, outcome.provider_message_id) == (kind, None)
    assert outcome.error is not None
    assert outcome.error.code == code
    assert json.loads(canned.body)["error"]["message"] in outcome.error.message


@pytest.mark.parametrize(
    ("code", "retry_after"),
    [
        (4, 60.0),  # the app's call limit: rolling windows of minutes
        (80007, 60.0),
        (613, 60.0),
        (133016, 60.0),
        (130429, 5.0),  # throughput: a second's worth of messages too many
        (131048, 3600.0),  # spam and messaging limits follow the number's quality
        (131064, 3600.0),
        (131056, None),  # one recipient's pair rate: no pause of the connection
        (2, None),  # an outage, not throttling: the breaker counts it
    ],
)
async def test_throttling_codes_pause_the_connection_without_a_retry_after(
    adapter: WhatsAppAdapter, fake: WhatsAppFake, code: int, retry_after: float | None
) -> None:
    fake.script(graph_error(400, code, "Rate limit hit"))

    outcome = await adapter.submit(message())

    assert (outcome.kind, outcome.retry_after) == ("unavailable", retry_after)


async def test_rate_limits_keep_a_retry_after(adapter: WhatsAppAdapter, fake: WhatsAppFake) -> None:
    fake.script(graph_error(429, 130429, "Rate limit hit", headers={"Retry-After": "30"}))

    outcome = await adapter.submit(message())

    assert (outcome.kind, outcome.retry_after) == ("unavailable", 30.0)


@pytest.mark.parametrize(
    "canned",
    [
        Canned(502, "<html><head><title>502 Bad Gateway</title></head></html>", "text/html"),
        Canned(200, "<html><body>proxy login</body></html>", "text/html"),
        Canned(200, b'{"messaging_product":"whatsapp","messages":[{"id":"wamid.'),
        Canned(200, b'{"messaging_product":"whatsapp","contacts":[]}'),
        Canned(200, b'{"messages":[{"id":""}]}'),
        Canned(200, b'{"messages":[]}'),
        Canned(200, b'{"messages":"wamid.x"}'),
        Canned(200, b"[]"),
        Canned(200, b""),
        Canned(429, "slow down", "text/plain"),
    ],
    ids=[
        "html-502",
        "html-200",
        "truncated",
        "no-messages",
        "empty-id",
        "empty-list",
        "not-a-list",
        "json-list",
        "empty",
        "plain-429",
    ],
)
async def test_an_answer_without_a_readable_message_id_is_never_accepted(
    adapter: WhatsAppAdapter, fake: WhatsAppFake, canned: Canned
) -> None:
    fake.script(canned)

    outcome = await adapter.submit(message())

    # A 2xx may mean the message went out; any other status proves it did not.
    assert outcome.kind == ("unknown" if 200 <= canned.status < 300 else "unavailable")
    assert outcome.provider_message_id is None


async def test_a_non_json_client_error_is_rejected(
    adapter: WhatsAppAdapter, fake: WhatsAppFake
) -> None:
    fake.script(Canned(400, "<html>Bad Request</html>", "text/html"))

    outcome = await adapter.submit(message())

    assert outcome.kind == "rejected"


async def test_a_huge_answer_is_unknown(adapter: WhatsAppAdapter, fake: WhatsAppFake) -> None:
    filler = "x" * (MAX_ANSWER_BYTES + 1)
    fake.script(Canned(200, json.dumps({"messages": [{"id": "wamid.X"}], "pad": filler})))

    outcome = await adapter.submit(message())

    assert outcome.kind == "unknown"
    assert outcome.error is not None
    assert "over" in outcome.error.message


async def test_the_access_token_never_appears_in_an_outcome(
    adapter: WhatsAppAdapter, fake: WhatsAppFake
) -> None:
    fake.script(graph_error(400, 100, f"Invalid parameter near {ACCESS_TOKEN}"))

    outcome = await adapter.submit(message())

    assert outcome.error is not None
    assert ACCESS_TOKEN not in outcome.error.message
    assert ACCESS_TOKEN not in repr(adapter)
    assert APP_SECRET not in repr(adapter.credentials)


# --- transport ----------------------------------------------------------------------------------


async def test_a_read_time_out_is_unknown_and_never_resent() -> None:
    calls: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        raise httpx.ReadTimeout("timed out", request=request)

    outcome = await mock_adapter(handler, connect_retries=3).submit(message())

    assert outcome.kind == "unknown"
    assert len(calls) == 1


async def test_a_slow_api_times_out_over_loopback(fake: WhatsAppFake) -> None:
    fake.script(Canned(200, b'{"messages":[{"id":"wamid.late"}]}', delay=0.5))
    async with serve(fake.app) as base:
        adapter = WhatsAppAdapter(
            connection(base_url=base), CREDENTIALS, timeout=httpx.Timeout(5.0, read=0.1)
        )
        outcome = await adapter.submit(message())
        await adapter.aclose()

    assert outcome.kind == "unknown"
    assert len(fake.received) == 1


async def test_a_refused_connection_is_retried_then_unavailable() -> None:
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    adapter = WhatsAppAdapter(
        connection(base_url="http://127.0.0.1:1"), CREDENTIALS, sleep=sleep, connect_retries=2
    )
    outcome = await adapter.submit(message())
    await adapter.aclose()

    assert outcome.kind == "unavailable"
    assert len(sleeps) == 2


async def test_sends_over_real_loopback_http(fake: WhatsAppFake) -> None:
    async with serve(fake.app) as base:
        adapter = WhatsAppAdapter(connection(base_url=base), CREDENTIALS)
        outcome = await adapter.submit(message(text="Merhaba 👋"))
        await adapter.aclose()

    assert outcome.kind == "accepted"
    assert fake.received[0].json["text"]["body"] == "Merhaba 👋"  # type: ignore[index]


# --- status webhooks ------------------------------------------------------------------------------


def pushed(body: bytes, headers: dict[str, str]) -> InboundCallback:
    return InboundCallback(method="POST", headers=headers, query={}, body=body)


@pytest.mark.parametrize(
    ("word", "report_status"),
    [("sent", "pending"), ("delivered", "delivered"), ("read", "delivered")],
)
def test_each_status_is_read(
    adapter: WhatsAppAdapter, fake: WhatsAppFake, word: str, report_status: str
) -> None:
    body, headers = fake.status_webhook([status("wamid.A1", word)])

    [report] = adapter.parse_reports(pushed(body, headers))

    assert (report.provider_message_id, report.status) == ("wamid.A1", report_status)
    assert (report.provider_status, report.error) == (word, None)
    assert report.to == "+905551112233"
    assert report.occurred_at is not None


@pytest.mark.parametrize(
    ("code", "title", "our_code"),
    [
        (131026, "Message undeliverable", "RECIPIENT_UNREACHABLE"),
        (131047, "Re-engagement message", "OUTSIDE_CUSTOMER_SERVICE_WINDOW"),
        (131049, NOT_HEALTHY, "RECIPIENT_UNREACHABLE"),
        (132001, "Template does not exist", "TEMPLATE_REJECTED"),
        (131000, "Something went wrong", "PROVIDER_UNAVAILABLE"),
        (131050, "User stopped marketing messages", "RECIPIENT_OPTED_OUT"),
        (131048, "Spam rate limit hit", "PROVIDER_UNAVAILABLE"),
        (135000, "Generic user error", "PROVIDER_REJECTED"),
        (999999, "A code nobody has seen yet", "RECIPIENT_UNREACHABLE"),
    ],
)
def test_a_failed_status_carries_the_mapped_error(
    adapter: WhatsAppAdapter, fake: WhatsAppFake, code: int, title: str, our_code: str
) -> None:
    errors: list[dict[str, object]] = [
        {
            "code": code,
            "title": title,
            "message": title,
            "error_data": {"details": "Details from Meta."},
        }
    ]
    body, headers = fake.status_webhook([status("wamid.F1", "failed", errors=errors)])

    [report] = adapter.parse_reports(pushed(body, headers))

    assert (report.status, report.provider_status) == ("failed", "failed")
    assert report.error is not None
    assert report.error.code == our_code
    assert f"(#{code}) {title}: Details from Meta." == report.error.message


# Every code but the 200-299 block's inner ones (one row stands for the range).
TABLE_CODES = sorted(c for c in GRAPH_CODES if not 200 < c < 299)


@pytest.mark.parametrize("code", TABLE_CODES)
async def test_a_code_means_the_same_in_a_send_answer_and_in_a_failed_status(
    adapter: WhatsAppAdapter, fake: WhatsAppFake, code: int
) -> None:
    fake.script(graph_error(400, code, GRAPH_CODES[code].title))
    outcome = await adapter.submit(message())
    errors: list[dict[str, object]] = [{"code": code, "title": GRAPH_CODES[code].title}]
    body, headers = fake.status_webhook([status("wamid.T", "failed", errors=errors)])

    [report] = adapter.parse_reports(pushed(body, headers))

    assert outcome.error is not None
    assert report.error is not None
    assert report.error.code == outcome.error.code
    assert outcome.kind == ("unavailable" if GRAPH_CODES[code].effect == "throttled"
                            else GRAPH_CODES[code].effect)  # fmt: skip


def test_a_failed_status_without_errors_is_still_failed(
    adapter: WhatsAppAdapter, fake: WhatsAppFake
) -> None:
    body, headers = fake.status_webhook([status("wamid.F2", "failed")])

    [report] = adapter.parse_reports(pushed(body, headers))

    assert report.status == "failed"
    assert report.error is not None


def test_many_statuses_in_one_webhook_are_all_read_in_order(
    adapter: WhatsAppAdapter, fake: WhatsAppFake
) -> None:
    words = ["sent", "delivered", "read"]
    body, headers = fake.status_webhook([status(f"wamid.{w}", w) for w in words])

    reports = adapter.parse_reports(pushed(body, headers))

    assert [r.provider_message_id for r in reports] == [f"wamid.{w}" for w in words]


def test_statuses_of_another_phone_number_are_skipped(
    adapter: WhatsAppAdapter, fake: WhatsAppFake
) -> None:
    body, headers = fake.status_webhook([status("wamid.X", "delivered")], phone_number_id="999")

    assert adapter.parse_reports(pushed(body, headers)) == []


def test_unknown_status_words_and_inbound_messages_carry_no_reports(
    adapter: WhatsAppAdapter, fake: WhatsAppFake
) -> None:
    body, headers = fake.status_webhook([status("wamid.D", "deleted"), {"bogus": True}])

    assert adapter.parse_reports(pushed(body, headers)) == []


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"x-hub-signature-256": "sha256=" + "0" * 64},
        {"x-hub-signature-256": "sha1=abc"},
        {"x-hub-signature-256": ""},
    ],
    ids=["missing", "wrong", "other-algorithm", "empty"],
)
def test_a_webhook_with_a_bad_signature_is_unauthorized(
    adapter: WhatsAppAdapter, fake: WhatsAppFake, headers: dict[str, str]
) -> None:
    body, _ = fake.status_webhook([status("wamid.A1", "delivered")])

    with pytest.raises(Unauthorized) as caught:
        adapter.parse_reports(pushed(body, headers))

    assert "X-Hub-Signature-256" in caught.value.message
    assert APP_SECRET not in caught.value.message


def test_a_webhook_signed_with_another_secret_is_unauthorized(
    adapter: WhatsAppAdapter, fake: WhatsAppFake
) -> None:
    body, headers = fake.status_webhook([status("wamid.A1", "delivered")], secret="other")

    with pytest.raises(Unauthorized):
        adapter.parse_reports(pushed(body, headers))


def test_a_body_changed_after_signing_is_unauthorized(
    adapter: WhatsAppAdapter, fake: WhatsAppFake
) -> None:
    body, headers = fake.status_webhook([status("wamid.A1", "failed")])

    with pytest.raises(Unauthorized):
        adapter.parse_reports(pushed(body.replace(b"failed", b"read"), headers))


def test_the_signature_header_is_found_in_any_case(
    adapter: WhatsAppAdapter, fake: WhatsAppFake
) -> None:
    body, headers = fake.status_webhook([status("wamid.A1", "delivered")])

    headers = {"X-Hub-Signature-256": headers["x-hub-signature-256"]}

    assert len(adapter.parse_reports(pushed(body, headers))) == 1


def test_a_signed_body_that_is_not_json_is_a_clear_400(adapter: WhatsAppAdapter) -> None:
    body = b"not json"
    headers = {"x-hub-signature-256": signature_header(body, APP_SECRET)}

    with pytest.raises(RequestInvalid):
        adapter.parse_reports(pushed(body, headers))


def test_a_signed_payload_of_another_object_carries_no_reports(adapter: WhatsAppAdapter) -> None:
    body = json.dumps({"object": "page", "entry": []}).encode()
    headers = {"x-hub-signature-256": signature_header(body, APP_SECRET)}

    assert adapter.parse_reports(pushed(body, headers)) == []


def test_the_get_handshake_carries_no_reports(adapter: WhatsAppAdapter) -> None:
    query = {
        "hub.mode": "subscribe",
        "hub.verify_token": VERIFY_TOKEN,
        "hub.challenge": "11582",
    }

    assert adapter.parse_reports(InboundCallback("GET", {}, query)) == []


# --- the subscription handshake -------------------------------------------------------------------


def test_the_challenge_is_echoed_for_the_right_verify_token(adapter: WhatsAppAdapter) -> None:
    query = {
        "hub.mode": "subscribe",
        "hub.verify_token": VERIFY_TOKEN,
        "hub.challenge": "11582",
    }

    assert adapter.challenge(query) == "11582"
    assert verify_challenge(query, VERIFY_TOKEN) == "11582"


@pytest.mark.parametrize(
    "query",
    [
        {"hub.mode": "subscribe", "hub.verify_token": "wrong", "hub.challenge": "1"},
        {"hub.mode": "unsubscribe", "hub.verify_token": VERIFY_TOKEN, "hub.challenge": "1"},
        {"hub.verify_token": VERIFY_TOKEN, "hub.challenge": "1"},
        {"hub.mode": "subscribe", "hub.challenge": "1"},
        {},
    ],
    ids=["wrong-token", "wrong-mode", "no-mode", "no-token", "empty"],
)
def test_the_challenge_is_refused_otherwise(query: dict[str, str]) -> None:
    assert verify_challenge(query, VERIFY_TOKEN) is None


def test_an_empty_verify_token_never_matches() -> None:
    assert (
        verify_challenge(
            {"hub.mode": "subscribe", "hub.verify_token": "", "hub.challenge": "1"}, ""
        )
        is None
    )


# --- credentials ----------------------------------------------------------------------------------


async def test_check_accepts_a_working_number(adapter: WhatsAppAdapter, fake: WhatsAppFake) -> None:
    await adapter.check()

    assert (fake.received[0].method, fake.received[0].path) == ("GET", f"/v21.0/{PHONE_NUMBER_ID}")


async def test_check_refuses_a_bad_token(client: httpx.AsyncClient) -> None:
    adapter = WhatsAppAdapter(connection(), {**CREDENTIALS, "access_token": "bad"}, client=client)

    with pytest.raises(InvalidCredentials):
        await adapter.check()


async def test_check_refuses_an_unknown_phone_number_id(client: httpx.AsyncClient) -> None:
    adapter = WhatsAppAdapter(connection(), {**CREDENTIALS, "phone_number_id": "1"}, client=client)

    with pytest.raises(InvalidCredentials) as caught:
        await adapter.check()

    assert "phone_number_id" in caught.value.message


async def test_check_on_an_outage_is_provider_unavailable(
    adapter: WhatsAppAdapter, fake: WhatsAppFake
) -> None:
    fake.script(graph_error(503, 2, "Service temporarily unavailable"))

    with pytest.raises(ProviderUnavailable):
        await adapter.check()


@pytest.mark.parametrize(
    "missing", ["access_token", "phone_number_id", "app_secret", "verify_token"]
)
def test_a_missing_credential_is_named_and_no_secret_is_printed(missing: str) -> None:
    credentials = {k: v for k, v in CREDENTIALS.items() if k != missing}

    with pytest.raises(InvalidCredentials) as caught:
        WhatsAppAdapter(connection(), credentials)

    assert f"{missing} is missing" in caught.value.message
    for secret in (ACCESS_TOKEN, APP_SECRET, VERIFY_TOKEN):
        assert secret not in caught.value.message


@pytest.mark.parametrize(
    ("field", "value"),
    [("phone_number_id", "106/../../me"), ("api_version", "21"), ("api_version", "v21.0/x")],
)
def test_values_that_could_bend_the_url_are_refused(field: str, value: str) -> None:
    with pytest.raises(InvalidCredentials) as caught:
        WhatsAppAdapter(connection(), {**CREDENTIALS, field: value})

    assert field in caught.value.message
