"""``chatbot``: the Telegram Bot API.

Owns ``sendMessage`` for one chat, the reading of the Bot API's answers, and keeping the bot
token (which Telegram puts in the URL path) out of every log line, repr and message.

Wire facts (core.telegram.org/bots/api, "Making requests", ``sendMessage``, ``getMe``):

- ``POST {base}/bot<token>/<method>`` with a JSON body; base ``https://api.telegram.org``.
  ``sendMessage`` takes ``{chat_id, text}``: an integer chat id (negative for groups) or
  ``@channelusername`` (a ``@name`` reaches channels, never users); text 1-4096 characters.
- Every answer is ``{"ok": true, "result": …}`` or ``{"ok": false, "error_code": int,
  "description": str, "parameters": {"retry_after": s, "migrate_to_chat_id": id}}``. Telegram
  warns that ``error_code`` "is subject to change", so we decide on it only where the
  description does not say more.
- Seen descriptions: 400 ``Bad Request: chat not found`` (also for a user's ``@name``),
  ``Bad Request: message is too long``, ``Bad Request: message text is empty``,
  ``Bad Request: group chat was upgraded to a supergroup chat`` (with ``migrate_to_chat_id``);
  403 ``Forbidden: bot was blocked by the user`` / ``bot can't initiate conversation with a
  user`` / ``user is deactivated`` / ``bot was kicked from the group chat`` / ``bot can't send
  messages to bots``; 401 ``Unauthorized`` (revoked token); 404 ``Not Found`` (a token that is
  no token); 429 ``Too Many Requests: retry after N``.
- There are no delivery receipts: an accepted message is final ``delivered`` (D10).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, ClassVar, Final

import httpx
from pydantic import SecretStr, field_validator

from .._domain import Connection
from .._errors import InvalidCredentials, ProviderUnavailable
from .._retry_after import bounded_wait
from .._types import ProviderCode
from ._http import (
    AdapterSpec,
    Answer,
    CredentialsModel,
    HttpAdapter,
    JsonUnreadable,
    decode_json_object,
    redact,
)
from .base import InboundCallback, InboundMessage, SubmitOutcome, SubmitRequest

__all__ = ["SPEC", "Credentials", "TelegramAdapter"]

DEFAULT_BASE_URL: Final = "https://api.telegram.org"
#: Bot API answers to ``sendMessage`` are a few hundred bytes; cap what we read well above.
MAX_ANSWER_BYTES: Final = 64 * 1024

# BotFather tokens are "<bot id>:<secret>"; anything else could bend the URL path.
_TOKEN_SHAPE: Final = re.compile(r"[0-9]{1,20}:[A-Za-z0-9_-]{1,200}")
_CHAT_ID: Final = re.compile(r"-?[0-9]{1,20}")
# Descriptions of a 400 that are about the chat, not the message (lower case).
_CHAT_PROBLEMS: Final = (
    "chat not found",
    "peer_id_invalid",
    "user not found",
    "chat_id is empty",
    "group chat was upgraded",
    "group chat was deactivated",
    "have no rights to send",
    "not enough rights to send",
)
_URL_TOKEN: Final = re.compile(r"/bot[^/\s\"'?#]+")


class _RedactBotTokens(logging.Filter):
    """Rewrite ``/bot<token>`` in log records to ``/bot<redacted>``.

    httpx logs every request's URL at INFO (``HTTP Request: POST https://…/bot<token>/…``), and
    the Bot API has no other place for the token, so the URL is cleaned where it is logged.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "/bot" in message:
            record.msg = _URL_TOKEN.sub("/bot<redacted>", message)
            record.args = ()
        return True


def _install_log_redaction() -> None:
    httpx_logger = logging.getLogger("httpx")
    if not any(isinstance(f, _RedactBotTokens) for f in httpx_logger.filters):
        httpx_logger.addFilter(_RedactBotTokens())


_install_log_redaction()


class Credentials(CredentialsModel):
    """The bot's token from @BotFather."""

    bot_token: SecretStr

    @field_validator("bot_token")
    @classmethod
    def _token_shape(cls, value: SecretStr) -> SecretStr:
        if not _TOKEN_SHAPE.fullmatch(value.get_secret_value()):
            raise ValueError("must be a BotFather token: digits, ':' and letters, digits, _ or -")
        return value


class TelegramAdapter(HttpAdapter[Credentials]):
    """The live ``chatbot`` adapter."""

    PROVIDER_CODE: ClassVar[ProviderCode] = "chatbot"
    credentials_model = Credentials
    default_base_url = DEFAULT_BASE_URL

    async def submit(self, request: SubmitRequest) -> SubmitOutcome:
        chat_id: int | str = int(request.to) if _CHAT_ID.fullmatch(request.to) else request.to
        try:
            answer = await self._call("sendMessage", {"chat_id": chat_id, "text": request.text})
        except httpx.HTTPError as exc:
            # The exception's request holds the URL with the token: only its kind is used.
            return self.transport_outcome(exc)
        except httpx.InvalidURL:
            return SubmitOutcome.unavailable("The connection's base_url is not a valid URL.")
        if answer.truncated:
            return self.unreadable(answer, "the answer was not read to its end")
        return _outcome(answer, request.to, self)

    async def check(self) -> None:
        """``getMe``: Telegram answers 401/404 to a token it does not know."""
        try:
            answer = await self._call("getMe", None)
        except httpx.HTTPError as exc:
            raise self.unreachable(exc, "to check the bot token") from None
        except httpx.InvalidURL:
            raise ProviderUnavailable("The connection's base_url is not a valid URL.") from None
        if answer.truncated:
            raise self.unreachable(answer, "to check the bot token")
        if answer.status in (401, 404):
            raise InvalidCredentials("Telegram refused the bot token.")
        document = _json(answer.body)
        if not (answer.is_success and document and document.get("ok") is True):
            raise ProviderUnavailable(
                f"Telegram answered getMe with HTTP {answer.status}: {self.excerpt(answer)}"
            )

    def parse_inbound(self, callback: InboundCallback) -> list[InboundMessage]:
        """A Bot API ``Update`` pushed to the connection's report URL (``setWebhook``): the
        text of its ``message`` and who wrote it (the chat id), e.g. a ``/stop``."""
        try:
            update = decode_json_object(callback.body)
        except JsonUnreadable:
            return []
        message = update.get("message")
        if not isinstance(message, dict):
            return []
        chat, text, message_id = message.get("chat"), message.get("text"), message.get("message_id")
        chat_id = chat.get("id") if isinstance(chat, dict) else None
        if not isinstance(chat_id, int) or isinstance(chat_id, bool) or not isinstance(text, str):
            return []
        if not isinstance(message_id, int):
            return []
        date = message.get("date")
        when = (
            datetime.fromtimestamp(date, UTC)
            if isinstance(date, int) and 0 < date < 2**33
            else None
        )
        return [InboundMessage(str(chat_id), text, f"{chat_id}:{message_id}", when)]

    async def _call(self, method: str, payload: Mapping[str, object] | None) -> Answer:
        """POST one Bot API method, its answer read no further than the cap."""
        path = f"/bot{self.secret(self.credentials.bot_token)}/{method}"
        return await self.exchange("POST", path, max_body=MAX_ANSWER_BYTES, json=payload)


# --- reading answers ----------------------------------------------------------------------------


def _outcome(answer: Answer, to: str, adapter: TelegramAdapter) -> SubmitOutcome:
    document = _json(answer.body)
    if document is None:
        return adapter.unreadable(answer, "not Bot API JSON")
    if document.get("ok") is True:
        return _accepted(document, to, answer, adapter)
    if answer.is_success and document.get("ok") is not False:
        return adapter.unreadable(answer, 'no "ok" in the Bot API answer')
    return _refusal(answer, document)


def _accepted(
    document: Mapping[str, Any], to: str, answer: Answer, adapter: TelegramAdapter
) -> SubmitOutcome:
    result = document.get("result")
    message_id = result.get("message_id") if isinstance(result, dict) else None
    if not isinstance(message_id, int) or isinstance(message_id, bool):
        return adapter.unreadable(answer, "ok without a message id")
    chat = result.get("chat") if isinstance(result, dict) else None
    chat_id = chat.get("id") if isinstance(chat, dict) else None
    # The numeric id stays valid when a channel's @name changes.
    where = str(chat_id) if isinstance(chat_id, int) and not isinstance(chat_id, bool) else to
    return SubmitOutcome.accepted(f"{where}:{message_id}")


def _refusal(answer: Answer, document: Mapping[str, Any]) -> SubmitOutcome:
    status = answer.status
    error_code = document.get("error_code")
    code = error_code if isinstance(error_code, int) else status
    description = _said(document.get("description"))
    parameters = document.get("parameters")
    parameters = parameters if isinstance(parameters, dict) else {}
    if code == 429 or status == 429:
        return SubmitOutcome.unavailable(
            f"Telegram is throttling the bot: {description}",
            retry_after=_retry_after(parameters, answer),
        )
    if status >= 500 or code >= 500:
        return SubmitOutcome.unavailable(f"Telegram answered HTTP {status}: {description}")
    if code in (401, 404) or status in (401, 404):
        return SubmitOutcome.rejected(
            "PROVIDER_AUTH_FAILED", f"Telegram refused the bot token: {description}"
        )
    if code == 403 or status == 403:
        refusal = SubmitOutcome.recipient_failed("CHAT_UNREACHABLE", description)
        # The user blocked the bot: an opt-out, unlike a chat never started.
        blocked = "blocked by the user" in description.lower()
        return replace(refusal, opted_out=True) if blocked else refusal
    if any(problem in description.lower() for problem in _CHAT_PROBLEMS):
        migrated = parameters.get("migrate_to_chat_id")
        if isinstance(migrated, int):
            description += f" (the group is now chat {migrated})"
        return SubmitOutcome.recipient_failed("CHAT_UNREACHABLE", description)
    return SubmitOutcome.rejected("PROVIDER_REJECTED", description)


def _retry_after(parameters: Mapping[str, Any], answer: Answer) -> float | None:
    seconds = parameters.get("retry_after")
    if isinstance(seconds, int | float) and not isinstance(seconds, bool):
        return bounded_wait(seconds)  # the one bound of every provider's wait
    return answer.retry_after


def _said(description: object) -> str:
    if not isinstance(description, str) or not description.strip():
        return "(no description)"
    # The token is never echoed by Telegram, but a URL in a proxy's words might carry it.
    return redact(_URL_TOKEN.sub("/bot<redacted>", " ".join(description.split())))[:300]


def _json(body: bytes) -> dict[str, Any] | None:
    """The Bot API's ``{"ok": …}`` object, or ``None`` for anything else."""
    try:
        document = decode_json_object(body)
    except JsonUnreadable:
        return None
    return document if "ok" in document else None


def _factory(connection: Connection, credentials: Mapping[str, str]) -> TelegramAdapter:
    return TelegramAdapter(connection, credentials)


SPEC: Final = AdapterSpec("chatbot", Credentials, _factory)
