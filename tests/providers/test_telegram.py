"""The ``chatbot`` adapter (Telegram Bot API) against a local fake speaking the Bot API."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from fakes._server import serve
from fakes.telegram import TOKEN, Canned, TelegramFake, error_body

from unified_messaging._domain import Connection
from unified_messaging._errors import InvalidCredentials, ProviderUnavailable
from unified_messaging.providers.base import ProviderAdapter, SubmitRequest
from unified_messaging.providers.telegram import (
    MAX_ANSWER_BYTES,
    SPEC,
    Credentials,
    TelegramAdapter,
)

BASE = "http://telegram.test"
CREDENTIALS = {"bot_token": TOKEN}
# The part of the token that is secret; the bot id before ':' is public.
SECRET = TOKEN.split(":")[1]


def connection(**changes: Any) -> Connection:
    values: dict[str, Any] = {
        "id": "conn_bot",
        "workspace_id": "ws_1",
        "provider": "chatbot",
        "created_at": datetime(2026, 1, 1, tzinfo=UTC),
        "credentials": "v1.k.n.c",
        "base_url": BASE,
    }
    values.update(changes)
    return Connection(**values)


def message(to: str = "4242", text: str = "Siparişiniz hazır") -> SubmitRequest:
    return SubmitRequest(job_id="job_1", to=to, text=text)


async def no_sleep(_: float) -> None:
    return None


@pytest.fixture
def fake() -> TelegramFake:
    return TelegramFake()


@pytest.fixture
async def client(fake: TelegramFake) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=fake.app)) as http:
        yield http


@pytest.fixture
def adapter(client: httpx.AsyncClient) -> TelegramAdapter:
    return TelegramAdapter(connection(), CREDENTIALS, client=client, sleep=no_sleep)


def mock_adapter(handler: Any, **kw: Any) -> TelegramAdapter:
    http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    return TelegramAdapter(connection(), CREDENTIALS, client=http, sleep=no_sleep, **kw)


def test_is_a_provider_adapter_for_chatbot_with_no_batches(adapter: TelegramAdapter) -> None:
    assert isinstance(adapter, ProviderAdapter)
    assert (adapter.code, adapter.max_batch) == ("chatbot", 1)
    assert (SPEC.code, SPEC.credentials) == ("chatbot", Credentials)
    assert isinstance(SPEC.factory(connection(), CREDENTIALS), TelegramAdapter)


def test_the_default_base_url_is_the_bot_api() -> None:
    adapter = TelegramAdapter(connection(base_url=None), CREDENTIALS)

    assert adapter.base_url == "https://api.telegram.org"


# --- sending ------------------------------------------------------------------------------------


async def test_an_accepted_message_id_is_chat_and_message_id(adapter: TelegramAdapter) -> None:
    outcome = await adapter.submit(message())

    assert (outcome.kind, outcome.provider_message_id) == ("accepted", "4242:101")


async def test_the_request_is_send_message_with_chat_id_and_text(
    adapter: TelegramAdapter, fake: TelegramFake
) -> None:
    await adapter.submit(message())

    [sent] = fake.received
    assert (sent.method, sent.path) == ("POST", f"/bot{TOKEN}/sendMessage")
    assert sent.headers["content-type"] == "application/json"
    assert sent.json == {"chat_id": 4242, "text": "Siparişiniz hazır"}


async def test_a_group_id_is_sent_as_a_negative_integer(
    adapter: TelegramAdapter, fake: TelegramFake
) -> None:
    outcome = await adapter.submit(message("-1001234567890"))

    assert fake.received[0].json == {"chat_id": -1001234567890, "text": "Siparişiniz hazır"}
    assert outcome.provider_message_id == "-1001234567890:101"


async def test_a_channel_name_is_sent_as_is_and_the_id_uses_the_numeric_chat(
    adapter: TelegramAdapter, fake: TelegramFake
) -> None:
    outcome = await adapter.submit(message("@umchannel"))

    assert fake.received[0].json == {"chat_id": "@umchannel", "text": "Siparişiniz hazır"}
    assert outcome.provider_message_id == "-1009876543210:101"


async def test_turkish_characters_and_emoji_arrive_intact(
    adapter: TelegramAdapter, fake: TelegramFake
) -> None:
    text = "Şişli'de ğüıöç İĞÜ 🚚🎉 — 👨‍👩‍👧"

    assert (await adapter.submit(message(text=text))).kind == "accepted"

    assert fake.received[0].json == {"chat_id": 4242, "text": text}


# --- refusals -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("to", "description"),
    [
        ("99999", "Bad Request: chat not found"),
        ("@some_user", "Bad Request: chat not found"),
        ("777", "Forbidden: bot was blocked by the user"),
        ("888", "Forbidden: bot can't initiate conversation with a user"),
    ],
)
async def test_an_unreachable_chat_is_a_recipient_failure(
    adapter: TelegramAdapter, to: str, description: str
) -> None:
    outcome = await adapter.submit(message(to))

    assert outcome.kind == "recipient_failed"
    assert outcome.error is not None
    assert (outcome.error.code, outcome.error.message) == ("CHAT_UNREACHABLE", description)


@pytest.mark.parametrize(
    "canned",
    [
        Canned(403, error_body(403, "Forbidden: user is deactivated")),
        Canned(403, error_body(403, "Forbidden: bot was kicked from the group chat")),
        Canned(403, error_body(403, "Forbidden: bot can't send messages to bots")),
        Canned(400, error_body(400, "Bad Request: PEER_ID_INVALID")),
        Canned(400, error_body(400, "Bad Request: group chat was deactivated")),
    ],
    ids=lambda c: json.loads(c.body)["description"],
)
async def test_other_chat_refusals_are_recipient_failures(
    adapter: TelegramAdapter, fake: TelegramFake, canned: Canned
) -> None:
    fake.script(canned)

    outcome = await adapter.submit(message())

    assert outcome.kind == "recipient_failed"
    assert outcome.error is not None
    assert outcome.error.code == "CHAT_UNREACHABLE"


async def test_a_migrated_group_names_its_new_chat(
    adapter: TelegramAdapter, fake: TelegramFake
) -> None:
    body = error_body(
        400,
        "Bad Request: group chat was upgraded to a supergroup chat",
        migrate_to_chat_id=-1001111111111,
    )
    fake.script(Canned(400, body))

    outcome = await adapter.submit(message("-4242"))

    assert outcome.kind == "recipient_failed"
    assert outcome.error is not None
    assert "-1001111111111" in outcome.error.message


async def test_a_too_long_message_is_rejected(adapter: TelegramAdapter) -> None:
    outcome = await adapter.submit(message(text="x" * 4097))

    assert outcome.kind == "rejected"
    assert outcome.error is not None
    assert outcome.error.code == "PROVIDER_REJECTED"
    assert outcome.error.message == "Bad Request: message is too long"


async def test_a_revoked_token_is_rejected_as_an_auth_failure(client: httpx.AsyncClient) -> None:
    adapter = TelegramAdapter(connection(), {"bot_token": "123456:revoked"}, client=client)

    outcome = await adapter.submit(message())

    assert outcome.kind == "rejected"
    assert outcome.error is not None
    assert outcome.error.code == "PROVIDER_AUTH_FAILED"
    assert "Unauthorized" in outcome.error.message


async def test_a_not_found_token_is_rejected_as_an_auth_failure(
    adapter: TelegramAdapter, fake: TelegramFake
) -> None:
    fake.script(Canned(404, error_body(404, "Not Found")))

    outcome = await adapter.submit(message())

    assert (outcome.kind, outcome.error.code if outcome.error else None) == (
        "rejected",
        "PROVIDER_AUTH_FAILED",
    )


async def test_flood_control_is_unavailable_with_retry_after(
    adapter: TelegramAdapter, fake: TelegramFake
) -> None:
    body = error_body(429, "Too Many Requests: retry after 13", retry_after=13)
    fake.script(Canned(429, body, headers={"Retry-After": "13"}))

    outcome = await adapter.submit(message())

    assert (outcome.kind, outcome.retry_after) == ("unavailable", 13.0)


@pytest.mark.parametrize(
    "canned",
    [
        Canned(502, "<html><head><title>502 Bad Gateway</title></head></html>", "text/html"),
        Canned(500, error_body(500, "Internal Server Error")),
        Canned(200, "<html><body>captive portal</body></html>", "text/html"),
        Canned(200, b'{"ok":true,"result":{"message_id":10'),
        Canned(200, b"not json at all", "text/plain"),
        Canned(200, b'{"ok":true,"result":{"chat":{"id":4242}}}'),
        Canned(200, b'{"ok":true,"result":{"message_id":"10"}}'),
        Canned(200, b'{"result":{"message_id":10}}'),
        Canned(200, b"[1, 2, 3]"),
        Canned(200, b""),
    ],
    ids=[
        "html-502",
        "json-500",
        "html-200",
        "truncated",
        "plain-text",
        "no-message-id",
        "string-message-id",
        "no-ok",
        "json-list",
        "empty",
    ],
)
async def test_an_answer_without_a_readable_message_id_is_never_accepted(
    adapter: TelegramAdapter, fake: TelegramFake, canned: Canned
) -> None:
    fake.script(canned)

    outcome = await adapter.submit(message())

    # A 2xx may mean the message went out; any other status proves it did not.
    assert outcome.kind == ("unknown" if 200 <= canned.status < 300 else "unavailable")
    assert outcome.provider_message_id is None


async def test_a_huge_answer_is_unknown(adapter: TelegramAdapter, fake: TelegramFake) -> None:
    filler = "x" * (MAX_ANSWER_BYTES + 1)
    fake.script(Canned(200, json.dumps({"ok": True, "result": {"message_id": 1, "t": filler}})))

    outcome = await adapter.submit(message())

    assert outcome.kind == "unknown"
    assert outcome.error is not None
    assert "over" in outcome.error.message


# --- transport ----------------------------------------------------------------------------------


async def test_a_read_time_out_is_unknown_and_never_resent() -> None:
    calls: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        raise httpx.ReadTimeout("timed out", request=request)

    outcome = await mock_adapter(handler, connect_retries=3).submit(message())

    assert outcome.kind == "unknown"
    assert len(calls) == 1


async def test_a_slow_api_times_out_over_loopback(fake: TelegramFake) -> None:
    fake.script(Canned(200, error_body(500, "late"), delay=0.5))
    async with serve(fake.app) as base:
        adapter = TelegramAdapter(
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

    adapter = TelegramAdapter(
        connection(base_url="http://127.0.0.1:1"), CREDENTIALS, sleep=sleep, connect_retries=2
    )
    outcome = await adapter.submit(message())
    await adapter.aclose()

    assert outcome.kind == "unavailable"
    assert len(sleeps) == 2


async def test_sends_over_real_loopback_http(fake: TelegramFake) -> None:
    async with serve(fake.app) as base:
        adapter = TelegramAdapter(connection(base_url=base), CREDENTIALS)
        outcome = await adapter.submit(message(text="Merhaba 👋"))
        await adapter.aclose()

    assert outcome.kind == "accepted"
    assert fake.received[0].json == {"chat_id": 4242, "text": "Merhaba 👋"}


# --- the token stays secret ----------------------------------------------------------------------


def test_the_token_is_not_in_the_adapters_repr(adapter: TelegramAdapter) -> None:
    assert SECRET not in repr(adapter)
    assert SECRET not in repr(adapter.credentials)
    assert SECRET not in str(adapter.credentials)


async def test_the_token_never_reaches_logs_over_loopback(
    fake: TelegramFake, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with serve(fake.app) as base:
        adapter = TelegramAdapter(connection(base_url=base), CREDENTIALS)
        await adapter.submit(message())
        await adapter.submit(message("777"))
        await adapter.aclose()

    assert "HTTP Request: POST" in caplog.text  # httpx did log the request line
    assert "/bot<redacted>/sendMessage" in caplog.text
    assert SECRET not in caplog.text


@pytest.mark.parametrize(
    "exception",
    [httpx.ConnectError, httpx.ReadTimeout, httpx.RemoteProtocolError, httpx.ReadError],
)
async def test_the_token_is_not_in_outcomes_when_httpx_raises_with_the_url(
    exception: type[httpx.TransportError], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)

    def handler(request: httpx.Request) -> httpx.Response:
        raise exception(f"failed talking to {request.url}", request=request)

    outcome = await mock_adapter(handler).submit(message())

    # A connect error proves nothing left; after the request was sent, it may have been taken.
    assert outcome.kind == ("unavailable" if exception is httpx.ConnectError else "unknown")
    assert outcome.error is not None
    assert SECRET not in outcome.error.message
    assert SECRET not in caplog.text


async def test_the_token_is_not_in_check_errors(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)

    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError(f"cannot connect to {request.url}", request=request)

    with pytest.raises(ProviderUnavailable) as caught:
        await mock_adapter(handler).check()

    assert SECRET not in str(caught.value)
    assert caught.value.__cause__ is None
    assert caught.value.__suppress_context__
    assert SECRET not in caplog.text


async def test_a_proxy_echoing_the_url_does_not_leak_the_token(
    adapter: TelegramAdapter, fake: TelegramFake
) -> None:
    fake.script(Canned(400, error_body(400, f"Bad Request: cannot route {BASE}/bot{TOKEN}/x")))

    outcome = await adapter.submit(message())

    assert outcome.error is not None
    assert SECRET not in outcome.error.message


# --- credentials ----------------------------------------------------------------------------------


async def test_check_accepts_a_known_token(adapter: TelegramAdapter, fake: TelegramFake) -> None:
    await adapter.check()

    assert fake.received[0].path == f"/bot{TOKEN}/getMe"


async def test_check_refuses_an_unknown_token(client: httpx.AsyncClient) -> None:
    adapter = TelegramAdapter(connection(), {"bot_token": "1:unknown"}, client=client)

    with pytest.raises(InvalidCredentials):
        await adapter.check()


def test_a_missing_token_is_named() -> None:
    with pytest.raises(InvalidCredentials) as caught:
        TelegramAdapter(connection(), {})

    assert "bot_token is missing" in caught.value.message


@pytest.mark.parametrize(
    "token", ["no-colon-here", "123:abc/../../admin", "123:abc?x=1", "abc:def", "123:"]
)
def test_a_token_that_could_bend_the_url_is_refused_without_echoing_it(token: str) -> None:
    with pytest.raises(InvalidCredentials) as caught:
        TelegramAdapter(connection(), {"bot_token": token})

    assert "bot_token" in caught.value.message
    assert token not in caught.value.message
