"""``sms_c``: the Verimor SMS API v2 (send, pushed delivery reports, balance check).

Owns Verimor's wire format and the mapping of every Verimor answer to a submit outcome or a
report status. Wire facts, from Verimor's own documentation (``github.com/verimor/SMS-API``
``user_guide.md`` and the v2 OpenAPI spec published at ``developer.verimor.com.tr/smsapi``):

* ``POST {base}/v2/send.json``, UTF-8 JSON: ``username``, ``password`` (the API password set in
  OİM), ``source_addr`` (the header), ``datacoding`` (``"0"`` GSM 03.38, ``"1"`` Turkish single
  shift, ``"2"`` UCS-2; absent: Verimor picks from the text), ``is_commercial`` and
  ``iys_recipient_type`` (``"BIREYSEL"`` | ``"TACIR"``, required when commercial) and
  ``messages[{msg, dest}]``, each message its own text, ``dest`` as ``905XXXXXXXXX``.
* Success is ``200`` with the campaign id as plain text. A refusal is ``400`` with a plain-text
  code (see :data:`_SEND_ERRORS`); a bad user/password, or a server IP that OİM does not allow,
  is ``401``; a request over 10 MB is ``413``; over the send rate limit (240 requests/min in
  the user guide since 2023-02-28, with a burst of 80 in the OpenAPI spec) is ``429``. Report
  queries are limited to 20 a minute; reports here are pushed, never queried.
* Reports are pushed to the URL set in OİM: a JSON array of ``{type: "outbound", campaign_id,
  message_id, message_custom_id, dest, status, gsm_error, sent_at, done_at, …}``; inbound SMS
  arrive at the same URL with ``type: "inbound"``. Verimor wants a ``200`` and retries three
  times, five minutes apart.
* ``GET {base}/v2/balance?username=&password=`` answers the credit as plain text, ``401`` for
  bad credentials. The secret rides in the query string because that is Verimor's format;
  nothing here logs a URL.
* ``GET {base}/v2/headers?username=&password=`` answers the approved headers as JSON: a list
  of names in the user guide (``["Verimor TLK", "Bulutsantralim"]``), a list of
  ``{"header": name}`` in the newer developer pages; both are read.

Ids. One request is one campaign. Verimor's ``message_id`` is unknown at submit time, so a
recipient's id is ``"<campaign_id>:<dest>"``, rebuilt the same way from each pushed report. A
batch never puts one number into a campaign twice (a repeat goes into a request of its own),
so the pair is unique. A campaign refused for one of its messages (a bad number, a duplicate,
a forbidden word: :data:`_NO_CULPRIT`) does not say which; nothing of it was sent, so its
outcomes are marked ``batch_refusal`` and routing sends them again in smaller campaigns to
find it (:mod:`unified_messaging._routing.split`). A text over Verimor's 7 parts is refused
before any campaign (``ProviderProfile.length_problem``). Nothing is ever re-sent after an
answer that might mean acceptance.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Hashable, Mapping, Sequence
from datetime import UTC, datetime, timedelta, timezone
from typing import ClassVar, Final

import httpx
from pydantic import Field, SecretStr

from .._domain import Connection, ErrorInfo
from .._errors import InvalidCredentials, ProviderUnavailable
from .._types import Encoding, IysMode, ProviderCode
from ._http import (
    AdapterSpec,
    Answer,
    CredentialsModel,
    HttpAdapter,
    JsonUnreadable,
    decode_json,
    redact,
)
from ._sms import msisdn, send_in_groups
from .account import AccountReading, clean_senders, parse_amount
from .base import (
    InboundCallback,
    InboundMessage,
    OutcomeKind,
    ProviderReport,
    ReportStatus,
    SubmitOutcome,
    SubmitRequest,
)

__all__ = ["SPEC", "Credentials", "VerimorAdapter"]

logger = logging.getLogger("unified_messaging.providers.verimor")

_SEND_PATH: Final = "/v2/send.json"
_BALANCE_PATH: Final = "/v2/balance"
_HEADERS_PATH: Final = "/v2/headers"
#: A campaign id or an error code is a few bytes; anything longer is not Verimor talking.
_ANSWER_LIMIT: Final = 64 * 1024
#: Verimor sends no Retry-After with its 429; its limits are counted per minute.
_DEFAULT_RETRY_AFTER: Final = 60.0
#: Verimor stamps report times in Turkish time, UTC+3 all year since 2016.
_TURKEY: Final = timezone(timedelta(hours=3))

_DATACODING: Final[Mapping[Encoding, str]] = {"gsm7": "0", "gsm7_turkish": "1", "ucs2": "2"}
_IYS_RECIPIENT_TYPE: Final[Mapping[IysMode, str]] = {
    "commercial_individual": "BIREYSEL",
    "commercial_merchant": "TACIR",
}
_SEND_HEADERS: Final = {"Content-Type": "application/json; charset=utf-8", "Accept": "text/plain"}
_PLAIN_TYPES: Final = frozenset({"", "text/plain", "application/json"})

_MOBILE: Final = re.compile(r"\+905[0-9]{9}")
_CAMPAIGN_ID: Final = re.compile(r"\s*([0-9]{1,20})\s*")
_ERROR_TOKEN: Final = re.compile(r"\s*([A-Z][A-Z0-9_]{1,63})\s*")

_R: Final = "rejected"
_RF: Final = "recipient_failed"
_PR: Final = "PROVIDER_REJECTED"
_IYS_CODE: Final = "IYS_NOT_CONFIGURED"
_IYS = "The account is not set up for IYS commercial sending"
#: ``400`` codes of ``/v2/send.json`` → (outcome, our code, why). Unknown codes: ``rejected``.
_SEND_ERRORS: Final[Mapping[str, tuple[OutcomeKind, str, str]]] = {
    "INVALID_SOURCE_ADDRESS": (_R, "SENDER_NOT_APPROVED", "Verimor did not accept the header"),
    "NUMERIC_SOURCE_ADDRESS_NOT_ALLOWED": (_R, "SENDER_NOT_APPROVED", "Numeric header refused"),
    "MISSING_MESSAGE": (_R, "BODY_REJECTED", "Verimor found no message text"),
    "MESSAGE_TOO_LONG": (_R, "BODY_TOO_LONG", "The text is over Verimor's 7 parts"),
    "INVALID_PERIOD": (_R, _PR, "Verimor refused the validity period"),
    "INVALID_DELIVERY_TIME": (_R, _PR, "Verimor refused the send time"),
    "INVALID_DATACODING": (_R, _PR, "Verimor refused the data coding"),
    "INVALID_UTF8": (_R, "BODY_REJECTED", "Verimor could not read the text as UTF-8"),
    "INVALID_JSON": (_R, _PR, "Verimor could not read the request"),
    "MISSING_DESTINATION_ADDRESS": (_R, _PR, "Verimor found no recipient"),
    "MESSAGE_COUNT_LIMIT_EXCEEDED": (_R, _PR, "Too many messages in one request"),
    "MUKERRER_RAPORLAMA": (_R, "DUPLICATE_MESSAGE", "The same SMS was sent within 24 h"),
    "FORBIDDEN_MESSAGE": (_R, "BODY_REJECTED", "Verimor refused forbidden words in the text"),
    "INSUFFICIENT_CREDITS": (_R, "INSUFFICIENT_CREDIT", "The Verimor account has no credit left"),
    "MISSING_IYS_BRAND_CODE": (_R, _IYS_CODE, f"{_IYS}: the header has no IYS brand code"),
    "AHS_AUTHORIZATION_ERROR": (_R, _IYS_CODE, f"{_IYS}: Verimor is not authorized in IYS"),
    "NO_AHS_BRAND_ERROR": (_R, _IYS_CODE, f"{_IYS}: IYS has no brand for its tax number"),
    "COMMERCIAL_SENDING_ERROR_UNDER_150K": (_R, _IYS_CODE, f"{_IYS}: not open to this account yet"),
    "INVALID_IYS_RECIPIENT_TYPE": (_R, _PR, "Verimor refused the IYS recipient type"),
    "INVALID_DESTINATION_ADDRESS": (_RF, "INVALID_RECIPIENT", "Verimor refused the number"),
    "MISSING_CONSENT": (_RF, "IYS_CONSENT_MISSING", "The recipient has no IYS consent"),
}  # fmt: skip
#: ``400`` codes that one message of a campaign earns the whole campaign without naming it
#: (the user guide's table: a number, the text, a 24-hour duplicate, forbidden words).
_NO_CULPRIT: Final = frozenset({
    "INVALID_DESTINATION_ADDRESS", "MISSING_CONSENT", "MESSAGE_TOO_LONG", "MISSING_MESSAGE",
    "INVALID_UTF8", "MUKERRER_RAPORLAMA", "FORBIDDEN_MESSAGE",
})  # fmt: skip

_UNDELIVERED: Final = ErrorInfo("RECIPIENT_UNREACHABLE", "The handset could not be reached.")
_NO_ROUTE: Final = ErrorInfo(_PR, "Verimor has no route to this recipient.")
_BLACKLISTED: Final = ErrorInfo("RECIPIENT_BLACKLISTED", "The number is on the account blacklist.")
#: Report ``status`` words → (our status, error). Unknown words become ``unknown``.
_REPORT_STATUS: Final[Mapping[str, tuple[ReportStatus, ErrorInfo | None]]] = {
    "SENDING": ("pending", None),
    "WAITING": ("pending", None),
    "DELIVERED": ("delivered", None),
    # "Sent, but the operator gives no receipt" (some foreign routes): nobody knows.
    "SENT": ("unknown", None),
    "NOT_DELIVERED": ("failed", _UNDELIVERED),
    "EXPIRED": ("expired", None),
    "INVALID_DESTINATION_ADDRESS": ("failed", ErrorInfo("INVALID_RECIPIENT", "No such number.")),
    "REJECTED": ("rejected", ErrorInfo(_PR, "The operator rejected the message.")),
    "DOUBLE_SEND_ERROR": ("rejected", ErrorInfo("DUPLICATE_MESSAGE", "A same-day repeat.")),
    "BLACKLISTED_DESTINATION_ADDRESS": ("failed", _BLACKLISTED),
    "NOT_ALLOWED_BY_IYS": ("failed", ErrorInfo("IYS_CONSENT_MISSING", "No IYS consent.")),
    "MISSING_TARIFF": ("rejected", _NO_ROUTE),
    "ROUTE_NOT_AVAILABLE": ("rejected", _NO_ROUTE),
    "NETWORK_NOTCOVERED": ("rejected", _NO_ROUTE),
    "INTERNATIONAL_DENIED": ("rejected", _NO_ROUTE),
    "SEND_ERROR": ("failed", ErrorInfo(_PR, "Verimor could not send the message.")),
}  # fmt: skip


class Credentials(CredentialsModel):
    """A Verimor account: its user name (the 12-digit account number) and its API password."""

    username: str = Field(min_length=1)
    password: SecretStr = Field(min_length=1)


class VerimorAdapter(HttpAdapter[Credentials]):
    """The live ``sms_c`` adapter: Verimor SMS API v2."""

    PROVIDER_CODE: ClassVar[ProviderCode] = "sms_c"
    credentials_model: ClassVar[type[CredentialsModel]] = Credentials
    default_base_url: ClassVar[str] = "https://sms.verimor.com.tr"

    # --- submitting -------------------------------------------------------------------------

    async def submit(self, request: SubmitRequest) -> SubmitOutcome:
        return (await self.submit_batch([request]))[0]

    async def submit_batch(self, requests: Sequence[SubmitRequest]) -> list[SubmitOutcome]:
        """One outcome per request, in order; more than :attr:`max_batch` is a caller bug."""
        if len(requests) > self.max_batch:
            raise ValueError(
                f"sms_c takes at most {self.max_batch} messages per batch, got {len(requests)}"
            )
        return await send_in_groups(
            requests,
            refusal=self._refusal,
            key=_campaign_key,
            size=self.max_batch,
            send=lambda _key, group: self._send_campaign(group),
        )

    def _refusal(self, request: SubmitRequest) -> SubmitOutcome | None:
        """What fails before any request: the same checks the ``sms_c`` simulator makes."""
        header_problem = self.profile.sender_problem(request.sender)
        if header_problem is not None:
            return SubmitOutcome.rejected("PROVIDER_REJECTED", f"Invalid header: {header_problem}.")
        if not request.text:
            return SubmitOutcome.rejected("BODY_REJECTED", "The message text is empty.")
        too_long = self.profile.length_problem(request.text, request.encoding)
        if too_long is not None:  # MESSAGE_TOO_LONG would refuse its whole campaign
            return SubmitOutcome.rejected("BODY_TOO_LONG", too_long)
        if not _is_unicode(request.text):
            return SubmitOutcome.rejected("BODY_REJECTED", "The text is not valid Unicode.")
        if _MOBILE.fullmatch(request.to) is None:
            return SubmitOutcome.recipient_failed(
                "INVALID_RECIPIENT", "The recipient must be a Turkish mobile number in E.164."
            )
        return None

    async def _send_campaign(self, group: Sequence[SubmitRequest]) -> list[SubmitOutcome]:
        try:
            answer = await self.exchange(
                "POST",
                _SEND_PATH,
                max_body=_ANSWER_LIMIT,
                content=self._body(group),
                headers=_SEND_HEADERS,
            )
        except httpx.HTTPError as exc:
            return [self.transport_outcome(exc)] * len(group)
        result = self._read_send_answer(answer)
        if isinstance(result, str):
            return [SubmitOutcome.accepted(f"{result}:{r.to[1:]}") for r in group]
        if _refusal_token(answer) in _NO_CULPRIT:
            return result.refused_together(len(group))
        return [result] * len(group)

    def _body(self, group: Sequence[SubmitRequest]) -> bytes:
        first = group[0]  # the campaign key makes these fields the same across the group
        payload: dict[str, object] = {
            "username": self.credentials.username,
            "password": self.secret(self.credentials.password),
            "source_addr": first.sender,
        }
        if first.encoding is not None:
            payload["datacoding"] = _DATACODING[first.encoding]
        payload["is_commercial"] = first.iys_mode != "informational"
        if first.iys_mode in _IYS_RECIPIENT_TYPE:
            payload["iys_recipient_type"] = _IYS_RECIPIENT_TYPE[first.iys_mode]
        payload["messages"] = [{"msg": r.text, "dest": r.to[1:]} for r in group]
        return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")

    def _read_send_answer(self, answer: Answer) -> str | SubmitOutcome:
        """The campaign id, or the outcome of a send not known to be accepted."""
        problem = _foreign_answer(answer, self)
        if problem is not None:
            return problem
        if answer.status == httpx.codes.OK:
            match = _CAMPAIGN_ID.fullmatch(answer.text)
            if match is not None:
                return match.group(1)
            logger.warning(
                "Verimor answered 200 without a campaign id (%d bytes)", len(answer.text)
            )
            return self.unreadable(answer, "no campaign id")
        if answer.status == httpx.codes.BAD_REQUEST:
            return self._refusal_outcome(answer.text)
        if answer.status in (httpx.codes.UNAUTHORIZED, httpx.codes.FORBIDDEN):
            return SubmitOutcome.rejected(
                "PROVIDER_AUTH_FAILED",
                "Verimor refused the account: wrong user name or API password, or OİM does "
                "not allow this server's IP address.",
            )
        if answer.status == httpx.codes.REQUEST_ENTITY_TOO_LARGE:
            return SubmitOutcome.rejected(
                "PROVIDER_REJECTED", "The request is over Verimor's 10 MB."
            )
        return self.unreadable(answer, "an unexpected status")

    def _refusal_outcome(self, text: str) -> SubmitOutcome:
        token = _token(text)
        if token is None or token not in _SEND_ERRORS:
            shown = token or _snippet(text, self.secret(self.credentials.password))
            return SubmitOutcome.rejected("PROVIDER_REJECTED", f"Verimor refused it ({shown}).")
        kind, code, why = _SEND_ERRORS[token]
        if kind == "recipient_failed":
            return SubmitOutcome.recipient_failed(code, f"{why} ({token}).")
        return SubmitOutcome.rejected(code, f"{why} ({token}).")

    # --- reports ----------------------------------------------------------------------------

    def parse_reports(self, callback: InboundCallback) -> list[ProviderReport]:
        """Read Verimor's pushed JSON array; inbound SMS and unreadable entries are skipped."""
        try:
            document = decode_json(callback.body)
        except JsonUnreadable:
            logger.warning("Verimor report push is not JSON (%d bytes)", len(callback.body))
            return []
        entries = document if isinstance(document, list) else [document]
        return [report for entry in entries if (report := _report(entry)) is not None]

    def parse_inbound(self, callback: InboundCallback) -> list[InboundMessage]:
        """The incoming SMS of the same push (``type: "inbound"``: ``source_addr``,
        ``content``, ``message_id``, ``received_at``), for opt-outs."""
        try:
            document = decode_json(callback.body)
        except JsonUnreadable:
            return []
        entries = document if isinstance(document, list) else [document]
        return [found for entry in entries if (found := _inbound(entry)) is not None]

    # --- credentials check ------------------------------------------------------------------

    async def check(self) -> None:
        """Ask for the balance: ``401`` means Verimor refuses these credentials."""
        params = {
            "username": self.credentials.username,
            "password": self.secret(self.credentials.password),
        }
        try:
            answer = await self.exchange(
                "GET", _BALANCE_PATH, max_body=_ANSWER_LIMIT, params=params
            )
        except httpx.HTTPError as exc:
            raise self.unreachable(exc, "to check credentials") from None
        if answer.status in (httpx.codes.UNAUTHORIZED, httpx.codes.FORBIDDEN):
            raise InvalidCredentials(
                "Verimor refused the credentials: wrong user name or API password, or OİM "
                "does not allow this server's IP address."
            )
        if _foreign_answer(answer, self) is not None or answer.status != httpx.codes.OK:
            raise ProviderUnavailable(
                f"Verimor's balance check failed (HTTP {answer.status}): {self.excerpt(answer)}"
            )

    # --- the account (messenger.accounts) ----------------------------------------------------

    async def read_account(self) -> AccountReading:
        """The credit (``GET /v2/balance``: a plain number, SMS credits) and the headers
        (``GET /v2/headers``: a JSON list of names, or of ``{"header": name}`` objects)."""
        text = await self._account_get(_BALANCE_PATH, "balance")
        balance = parse_amount(text)
        if balance is None:
            raise ProviderUnavailable("Verimor answered the balance query without a number.")
        raw = await self._account_get(_HEADERS_PATH, "header list")
        try:
            listed = decode_json(raw.encode("utf-8"))
        except JsonUnreadable:
            raise ProviderUnavailable("Verimor's header list is not JSON.") from None
        if not isinstance(listed, list):
            raise ProviderUnavailable("Verimor's header list is not a JSON list.")
        names = [e.get("header") if isinstance(e, dict) else e for e in listed]
        return AccountReading(balance, "SMS", clean_senders(names))

    async def _account_get(self, path: str, what: str) -> str:
        params = {
            "username": self.credentials.username,
            "password": self.secret(self.credentials.password),
        }
        try:
            answer = await self.exchange("GET", path, max_body=_ANSWER_LIMIT, params=params)
        except httpx.HTTPError as exc:
            raise self.unreachable(exc, f"to read the {what}") from None
        if answer.status in (httpx.codes.UNAUTHORIZED, httpx.codes.FORBIDDEN):
            raise InvalidCredentials(
                "Verimor refused the credentials: wrong user name or API password, or OİM "
                "does not allow this server's IP address."
            )
        if answer.truncated or answer.status != httpx.codes.OK:
            raise ProviderUnavailable(
                f"Verimor gave no usable {what} (HTTP {answer.status}): {self.excerpt(answer)}"
            )
        return answer.text


def _refusal_token(answer: Answer) -> str | None:
    """The plain-text code of a ``400`` refusal, else ``None``."""
    return _token(answer.text) if answer.status == httpx.codes.BAD_REQUEST else None


def _token(text: str) -> str | None:
    match = _ERROR_TOKEN.fullmatch(text)
    return match.group(1) if match else None


def _campaign_key(request: SubmitRequest) -> Hashable:
    # Header, data coding and IYS flags are per campaign in Verimor's format.
    return (request.sender, request.encoding, request.iys_mode)


def _foreign_answer(answer: Answer, adapter: VerimorAdapter) -> SubmitOutcome | None:
    """An answer that is not Verimor speaking its documented plain text, as an outcome."""
    if answer.status == httpx.codes.TOO_MANY_REQUESTS:
        wait = answer.retry_after if answer.retry_after is not None else _DEFAULT_RETRY_AFTER
        return SubmitOutcome.unavailable(
            "Verimor is throttling this account (429).", retry_after=wait
        )
    if answer.status >= httpx.codes.INTERNAL_SERVER_ERROR:
        return SubmitOutcome.unavailable(
            f"Verimor answered with server error {answer.status}: {adapter.excerpt(answer)}",
            retry_after=answer.retry_after,
        )
    if answer.truncated:
        return adapter.unreadable(answer, "the answer was not read to its end")
    if answer.content_type not in _PLAIN_TYPES:
        return adapter.unreadable(answer, "not Verimor's plain text")
    return None


def _report(entry: object) -> ProviderReport | None:
    if not isinstance(entry, dict) or entry.get("type", "outbound") != "outbound":
        return None
    campaign, dest, word = entry.get("campaign_id"), entry.get("dest"), entry.get("status")
    if not isinstance(word, str) or not isinstance(campaign, str | int):
        return None
    number = msisdn(dest) if isinstance(dest, str | int) else None
    if number is None or not str(campaign).isdigit():
        return None
    status, error = _REPORT_STATUS.get(word, ("unknown", None))
    gsm_error = str(entry.get("gsm_error") or "")
    if error is not None and gsm_error not in ("", "0"):
        # The operator's code (Verimor's table names them, e.g. 1 EC_UNKNOWN_SUBSCRIBER).
        error = ErrorInfo(error.code, f"{error.message[:-1]} (gsm_error {gsm_error}).")
    return ProviderReport(
        provider_message_id=f"{campaign}:{number}",
        status=status,
        provider_status=word,
        occurred_at=_when(entry.get("done_at")) or _when(entry.get("sent_at")),
        error=error,
        to=f"+{number}",
    )


def _inbound(entry: object) -> InboundMessage | None:
    if not isinstance(entry, dict) or entry.get("type") != "inbound":
        return None
    source, text, message_id = (
        entry.get("source_addr"),
        entry.get("content"),
        entry.get("message_id"),
    )
    if not isinstance(source, str | int) or not isinstance(text, str):
        return None
    if not isinstance(message_id, str | int) or not str(message_id):
        return None
    return InboundMessage(
        sender=f"+{source}" if str(source).isdigit() else str(source),
        text=text,
        provider_message_id=f"in:{message_id}",
        received_at=_when(entry.get("received_at")),
    )


def _when(value: object) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return (moment if moment.tzinfo else moment.replace(tzinfo=_TURKEY)).astimezone(UTC)


def _is_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates
        return False
    return True


def _snippet(text: str, secret: str) -> str:
    """A short printable excerpt of a provider's text, the secret blanked if echoed."""
    shown = redact(" ".join(text.split()), [secret] if secret else [])
    return shown[:120] or "an empty answer"


def _factory(connection: Connection, credentials: Mapping[str, str]) -> VerimorAdapter:
    return VerimorAdapter(connection, credentials)


SPEC = AdapterSpec("sms_c", Credentials, _factory)
