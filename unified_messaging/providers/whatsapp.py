"""``bizchat``: the WhatsApp Cloud API (Meta Graph API).

Owns sending one text or template message, the reading of Graph API answers and error codes,
the signed status webhooks, and the ``hub.challenge`` handshake that subscribes them.

Wire facts (developers.facebook.com/docs/whatsapp/cloud-api: messages, error codes, webhooks):

- ``POST {base}/{api_version}/{phone_number_id}/messages`` with ``Authorization: Bearer
  <access token>``; base ``https://graph.facebook.com``. Body ``{"messaging_product":
  "whatsapp", "recipient_type": "individual", "to": <digits>, "type": "text", "text": {"body",
  "preview_url"}}`` or ``"type": "template", "template": {"name", "language": {"code"},
  "components": [{"type": "body", "parameters": [{"type": "text", "text"}]}]}``. A one-time
  code goes as an authentication template (category ``AUTHENTICATION``): its one body
  parameter is the code, and its copy-code button takes the code again as ``{"type":
  "button", "sub_type": "url", "index": "0", "parameters": [{"type": "text", "text"}]}``
  (developers.facebook.com/documentation/business-messaging/whatsapp/templates/
  authentication-templates/copy-code-button-authentication-templates).
- Success: ``{"messaging_product": "whatsapp", "contacts": [{"input", "wa_id"}], "messages":
  [{"id": "wamid.…"}]}``.
- Errors: ``{"error": {"message": "(#131047) Re-engagement message", "type", "code",
  "error_data": {"messaging_product", "details"}, "fbtrace_id"}}``; Meta asks clients to decide
  on ``code`` (titles will go). Every code and its outcome is in :mod:`._whatsapp_codes`, one
  table for send answers and status webhooks alike.
- Free text reaches a user only within 24 hours of their last message (131047); outside it only
  an approved template does.
- Status webhooks: ``{"object": "whatsapp_business_account", "entry": [{"changes": [{"value":
  {"metadata": {"phone_number_id"}, "statuses": [{"id", "status": sent|delivered|read|failed,
  "timestamp", "recipient_id", "errors": [{"code", "title", "message", "error_data":
  {"details"}}]}]}, "field": "messages"}]}]}``, signed ``X-Hub-Signature-256: sha256=<hex
  HMAC-SHA256 of the raw body, keyed with the app secret>``. Subscribing is a GET with
  ``hub.mode=subscribe``, ``hub.verify_token`` and ``hub.challenge``, answered with the challenge.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Any, ClassVar, Final

import httpx
from pydantic import Field, SecretStr

from .._domain import Connection, ErrorInfo
from .._errors import InvalidCredentials, ProviderUnavailable, RequestInvalid, Unauthorized
from .._types import ProviderCode
from ._http import (
    AdapterSpec,
    Answer,
    CredentialsModel,
    HttpAdapter,
    JsonUnreadable,
    decode_json_object,
)
from ._whatsapp_codes import UNKNOWN_FAILURE, graph_code
from .base import (
    InboundCallback,
    InboundMessage,
    ProviderReport,
    ReportStatus,
    SubmitOutcome,
    SubmitRequest,
)

__all__ = ["SPEC", "Credentials", "WhatsAppAdapter", "signature_header", "verify_challenge"]

DEFAULT_BASE_URL: Final = "https://graph.facebook.com"
DEFAULT_API_VERSION: Final = "v21.0"
MAX_ANSWER_BYTES: Final = 64 * 1024
SIGNATURE_HEADER: Final = "X-Hub-Signature-256"

_STATUS_OF: Final[Mapping[str, ReportStatus]] = {
    "sent": "pending",
    "delivered": "delivered",
    # "read" comes after "delivered"; it may also come alone when the receipt was lost.
    "read": "delivered",
    "failed": "failed",
}


class Credentials(CredentialsModel):
    """A WhatsApp Business phone number, the app's secret and the webhook's verify token."""

    access_token: SecretStr = Field(min_length=1)
    phone_number_id: str = Field(pattern=r"^[0-9]{1,32}$")
    app_secret: SecretStr = Field(min_length=1)
    verify_token: SecretStr = Field(min_length=1)
    api_version: str = Field(default=DEFAULT_API_VERSION, pattern=r"^v[0-9]{1,3}\.[0-9]{1,3}$")


def signature_header(body: bytes, app_secret: str) -> str:
    """``sha256=<hex>`` as Meta signs ``body``: for receivers' tests and our fakes."""
    digest = hmac.new(app_secret.encode("utf-8"), body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def verify_challenge(query: Mapping[str, str], verify_token: str) -> str | None:
    """The ``hub.challenge`` to answer a webhook subscription, or ``None`` to refuse it (403)."""
    if query.get("hub.mode") != "subscribe" or not verify_token:
        return None
    given = query.get("hub.verify_token", "")
    if not hmac.compare_digest(given.encode("utf-8"), verify_token.encode("utf-8")):
        return None
    return query.get("hub.challenge")


class WhatsAppAdapter(HttpAdapter[Credentials]):
    """The live ``bizchat`` adapter."""

    PROVIDER_CODE: ClassVar[ProviderCode] = "bizchat"
    credentials_model = Credentials
    default_base_url = DEFAULT_BASE_URL

    # --- sending --------------------------------------------------------------------------------

    async def submit(self, request: SubmitRequest) -> SubmitOutcome:
        try:
            answer = await self._call("POST", "/messages", _payload(request))
        except httpx.HTTPError as exc:
            return self.transport_outcome(exc)
        if answer.truncated:
            return self.unreadable(answer, "the answer was not read to its end")
        return self._outcome(answer)

    def _outcome(self, answer: Answer) -> SubmitOutcome:
        status = answer.status
        document = _json(answer.body)
        if answer.is_success:
            wamid = _message_id(document)
            if wamid is not None:
                return SubmitOutcome.accepted(wamid)
            return self.unreadable(answer, f"no message id, {_kind(answer, document)}")
        error = document.get("error") if document is not None else None
        if not isinstance(error, dict):
            said = (
                f"WhatsApp answered HTTP {status} ({_kind(answer, None)}): {self.excerpt(answer)}"
            )
            return _by_status(answer, said)
        said = self._quote(_describe(error))
        row = graph_code(error.get("code"))
        if row is None or status >= 500:
            return _by_status(answer, said)
        return row.outcome(said, answer.retry_after)

    def _quote(self, text: str) -> str:
        return self.redact(text)

    async def _call(
        self, method: str, path: str, payload: Mapping[str, object] | None = None
    ) -> Answer:
        """One Graph request, its answer read no further than the cap."""
        creds = self.credentials
        return await self.exchange(
            method,
            f"/{creds.api_version}/{creds.phone_number_id}{path}",
            max_body=MAX_ANSWER_BYTES,
            headers={"Authorization": f"Bearer {self.secret(creds.access_token)}"},
            json=payload,
        )

    # --- reports --------------------------------------------------------------------------------

    def parse_reports(self, callback: InboundCallback) -> list[ProviderReport]:
        """Read a status webhook after checking its signature.

        A GET is the subscription handshake (see :meth:`challenge`) and carries no reports.
        Raises :class:`Unauthorized` when a body in WhatsApp's shape, or any body that carries
        an ``X-Hub-Signature-256``, is not signed with this app's secret, and
        :class:`RequestInvalid` when a signed body is not a webhook payload, or when an
        unsigned body is not WhatsApp's at all (so the connection's other reader, the
        simulator's push format for test-mode messages, may read it).
        """
        if callback.method.upper() == "GET":
            return []
        if _signature(callback.headers) is None and not _whatsapp_shaped(callback.body):
            # Meta signs every webhook, so an unsigned body that is not in its shape makes no
            # claim to be one. Only this format ever reaches live messages; the simulator's
            # (tried next by the messenger) only ever touches test-mode ones (D2, D20).
            raise RequestInvalid("The body is not a signed WhatsApp webhook.")
        self.verify_signature(callback)
        try:
            document = decode_json_object(callback.body)
        except JsonUnreadable as exc:
            if exc.problem == "not_object":
                raise RequestInvalid.for_field("body", "must be a JSON object") from None
            raise RequestInvalid("The webhook body is not valid JSON.") from None
        if document.get("object") != "whatsapp_business_account":
            return []
        return [
            report
            for value in _change_values(document)
            if _for_number(value, self.credentials.phone_number_id)
            for report in _reports(value)
        ]

    def parse_inbound(self, callback: InboundCallback) -> list[InboundMessage]:
        """The users' own messages of a webhook :meth:`parse_reports` accepted (signature
        checked): ``value.messages[]`` with ``from``, ``id``, ``timestamp`` and the text of a
        ``text`` message or of a quick-reply ``button``. Media are skipped."""
        if callback.method.upper() == "GET":
            return []
        try:
            document = decode_json_object(callback.body)
        except JsonUnreadable:
            return []
        if document.get("object") != "whatsapp_business_account":
            return []
        return [
            found
            for value in _change_values(document)
            if _for_number(value, self.credentials.phone_number_id)
            for found in _inbound(value)
        ]

    def verify_signature(self, callback: InboundCallback) -> None:
        """Raise :class:`Unauthorized` unless the body is signed with this app's secret."""
        given = _signature(callback.headers) or ""
        expected = signature_header(callback.body, self.secret(self.credentials.app_secret))
        # Meta sends lower-case hex; the comparison stays constant-time either way.
        presented = given.strip().lower().encode("utf-8")
        if not hmac.compare_digest(presented, expected.encode("utf-8")):
            raise Unauthorized(f"The {SIGNATURE_HEADER} signature does not match the body.")

    def challenge(self, query: Mapping[str, str]) -> str | None:
        """The subscription handshake with this connection's ``verify_token``."""
        return verify_challenge(query, self.secret(self.credentials.verify_token))

    # --- credentials check ----------------------------------------------------------------------

    async def check(self) -> None:
        """``GET /{version}/{phone_number_id}``: the number must exist and the token reach it."""
        try:
            answer = await self._call("GET", "")
        except httpx.HTTPError as exc:
            raise self.unreachable(exc, "to check the access token") from None
        if answer.truncated:
            raise self.unreachable(answer, "to check the access token")
        if answer.is_success:
            return
        document = _json(answer.body)
        error = document.get("error") if document is not None else None
        row = graph_code(error.get("code")) if isinstance(error, dict) else None
        if answer.status >= 500 or (row is not None and row.effect in ("unavailable", "throttled")):
            raise ProviderUnavailable(
                f"WhatsApp answered HTTP {answer.status}: {self.excerpt(answer)}"
            )
        if answer.status in (401, 403) or (row is not None and row.code == "PROVIDER_AUTH_FAILED"):
            raise InvalidCredentials("WhatsApp refused the access token.")
        raise InvalidCredentials(
            "WhatsApp does not know this phone_number_id, or the token cannot reach it."
        )


# --- the request --------------------------------------------------------------------------------


def _payload(request: SubmitRequest) -> dict[str, object]:
    payload: dict[str, object] = {
        "messaging_product": "whatsapp",
        "recipient_type": "individual",
        # Graph takes the number in international form without '+'.
        "to": request.to.lstrip("+"),
    }
    template = request.template
    if template is None:
        payload["type"] = "text"
        payload["text"] = {"body": request.text, "preview_url": False}
        return payload
    body: dict[str, object] = {"name": template.name, "language": {"code": template.language}}
    if template.parameters:
        parameters = [{"type": "text", "text": value} for value in template.parameters]
        components: list[dict[str, object]] = [{"type": "body", "parameters": parameters}]
        if request.one_time_code:
            # D36: an authentication template's copy-code button takes the code again, as a
            # URL button's parameter at index 0 (Meta, "Copy code authentication templates").
            code = [{"type": "text", "text": template.parameters[0]}]
            components.append(
                {"type": "button", "sub_type": "url", "index": "0", "parameters": code}
            )
        body["components"] = components
    payload["type"] = "template"
    payload["template"] = body
    return payload


# --- reading answers ----------------------------------------------------------------------------


def _by_status(answer: Answer, said: str) -> SubmitOutcome:
    """The outcome of an answer whose error code we do not know, from its HTTP status."""
    status = answer.status
    if status == 429:
        return SubmitOutcome.unavailable(said, retry_after=answer.retry_after)
    if status >= 500 or status < 400:
        return SubmitOutcome.unavailable(said)
    if status in (401, 403):
        return SubmitOutcome.rejected("PROVIDER_AUTH_FAILED", said)
    return SubmitOutcome.rejected("PROVIDER_REJECTED", said)


def _describe(error: Mapping[str, Any]) -> str:
    message = error.get("message")
    text = message if isinstance(message, str) and message.strip() else "(no message)"
    code = error.get("code")
    if isinstance(code, int) and f"#{code}" not in text:
        text = f"(#{code}) {text}"
    data = error.get("error_data")
    details = data.get("details") if isinstance(data, dict) else None
    if isinstance(details, str) and details.strip():
        text = f"{text}: {details}"
    return " ".join(text.split())[:400]


def _message_id(document: Mapping[str, Any] | None) -> str | None:
    messages = document.get("messages") if document is not None else None
    first = messages[0] if isinstance(messages, list) and messages else None
    wamid = first.get("id") if isinstance(first, dict) else None
    return wamid if isinstance(wamid, str) and wamid.strip() else None


def _kind(answer: Answer, document: Mapping[str, Any] | None) -> str:
    if document is not None:
        return "JSON without messages[0].id"
    content_type = answer.headers.get("Content-Type", "no content type").split(";")[0]
    return f"a body that is not Graph API JSON, {content_type}"


def _json(body: bytes) -> dict[str, Any] | None:
    try:
        return decode_json_object(body)
    except JsonUnreadable:
        return None


# --- reading webhooks ---------------------------------------------------------------------------


def _signature(headers: Mapping[str, str]) -> str | None:
    """The ``X-Hub-Signature-256`` header in any case, or ``None`` when there is none."""
    wanted = SIGNATURE_HEADER.lower()
    return next((v for k, v in headers.items() if k.lower() == wanted), None)


def _whatsapp_shaped(body: bytes) -> bool:
    """Does ``body`` look like a Meta webhook (a JSON object with ``object`` or ``entry``)?"""
    document = _json(body)
    return document is not None and ("object" in document or "entry" in document)


def _change_values(document: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    entries = document.get("entry")
    for entry in entries if isinstance(entries, list) else ():
        changes = entry.get("changes") if isinstance(entry, dict) else None
        for change in changes if isinstance(changes, list) else ():
            value = change.get("value") if isinstance(change, dict) else None
            if isinstance(value, dict):
                yield value


def _for_number(value: Mapping[str, Any], phone_number_id: str) -> bool:
    # One app has one webhook URL for all its numbers: skip the other numbers' statuses.
    metadata = value.get("metadata")
    number = metadata.get("phone_number_id") if isinstance(metadata, dict) else None
    return number is None or str(number) == phone_number_id


def _reports(value: Mapping[str, Any]) -> Iterator[ProviderReport]:
    statuses = value.get("statuses")
    for item in statuses if isinstance(statuses, list) else ():
        if not isinstance(item, dict):
            continue
        wamid, word = item.get("id"), item.get("status")
        status = _STATUS_OF.get(word) if isinstance(word, str) else None
        # Unknown words ("deleted", "warning", new ones) say nothing about delivery.
        if not isinstance(wamid, str) or not wamid or status is None:
            continue
        recipient = item.get("recipient_id")
        yield ProviderReport(
            provider_message_id=wamid,
            status=status,
            provider_status=str(word),
            occurred_at=_timestamp(item.get("timestamp")),
            error=_status_error(item) if status == "failed" else None,
            to=f"+{recipient}" if isinstance(recipient, str) and recipient.isdigit() else None,
        )


def _inbound(value: Mapping[str, Any]) -> Iterator[InboundMessage]:
    messages = value.get("messages")
    for item in messages if isinstance(messages, list) else ():
        if not isinstance(item, dict):
            continue
        sender, wamid = item.get("from"), item.get("id")
        text = _inbound_text(item)
        if not isinstance(sender, str) or not sender.isdigit() or not isinstance(wamid, str):
            continue
        if text is None or not wamid:
            continue
        yield InboundMessage(
            sender=f"+{sender}",
            text=text,
            provider_message_id=wamid,
            received_at=_timestamp(item.get("timestamp")),
        )


def _inbound_text(item: Mapping[str, Any]) -> str | None:
    kind = item.get("type")
    part = item.get(kind) if isinstance(kind, str) else None
    if not isinstance(part, dict):
        return None
    text = part.get("body") if kind == "text" else part.get("text") if kind == "button" else None
    return text if isinstance(text, str) else None


def _status_error(item: Mapping[str, Any]) -> ErrorInfo:
    errors = item.get("errors")
    first = errors[0] if isinstance(errors, list) and errors else None
    if not isinstance(first, dict):
        return ErrorInfo(UNKNOWN_FAILURE.code, "WhatsApp could not deliver the message.")
    # The same table as a send's answer: a code means one thing wherever it arrives.
    row = graph_code(first.get("code")) or UNKNOWN_FAILURE
    title = first.get("title") or first.get("message")
    return ErrorInfo(row.code, _describe({**first, "message": title}))


def _timestamp(value: object) -> datetime | None:
    if not isinstance(value, str | int) or not str(value).isdigit():
        return None
    try:
        return datetime.fromtimestamp(int(value), UTC)
    except (OverflowError, OSError, ValueError):
        return None


def _factory(connection: Connection, credentials: Mapping[str, str]) -> WhatsAppAdapter:
    return WhatsAppAdapter(connection, credentials)


SPEC: Final = AdapterSpec("bizchat", Credentials, _factory)
