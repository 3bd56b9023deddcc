"""``sms_b``: the İletimerkezi JSON v1 adapter (send, pushed and polled reports, credentials).

Owns İletimerkezi's wire format and the mapping of its answers to the five outcomes. Wire
facts, from İletimerkezi's documentation source (github.com/iletimerkezi/apidocs-website:
``docs/sms/send/json.mdx``, ``docs/sms/report/json.mdx``, ``docs/sms/report/webhook.mdx``,
``docs/account/balance/json.mdx``, ``docs/status-codes.mdx``), its current pages
(iletimerkezi.com/docs/api: send-sms, error-codes, webhooks, authentication) and its Python SDK:

- ``POST /v1/send-sms/json`` ``{"request": {"authentication": {"key", "hash"}, "order":
  {"sender", "sendDateTime": [], "iys": "1"|"0", "iysList": "BIREYSEL"|"TACIR", "message":
  {"text", "receipents": {"number": [...]}}}}}``. ``receipents`` is really spelled so, under
  ``message``. One order, one sender a request; ``message`` repeats (a JSON list) for
  different texts in one order. Numbers as ``5XXXXXXXXX``, ``905…`` or ``+905…``. The key and
  hash both come from the panel (nothing is computed). No encoding field: the text decides.
- _Answer ``{"response": {"status": {"code", "message"}, "order": {"id"}}}``; the HTTP status
  mirrors ``code``. 200 success; 400 unparsable, 401 authentication (or API access off, or IP
  not allowed), 402 no credit, 404 no such method, 422 values not valid, 450 header not
  approved, 451 same text to the same numbers within 10 minutes, 452 bad recipients (or on the
  account's block list), 453 over 7 SMS long, 454 empty text, 457 bad date, 459 empty header,
  460 header over 11 characters or with Turkish letters, 468 IYS flag missing, 469 IYS list
  missing, 470 no IYS code on the account, 503 temporarily unavailable.
- Reports pushed to the panel's webhook URL: ``{"report": {"id", "packet_id", "status", "to",
  "body"}}``; ``packet_id`` is the order id, ``to`` is ``+90…``, ``status`` ``accepted`` /
  ``delivered`` / ``undelivered`` (the SDK also knows 110/111/112 there).
- Reports polled: ``POST /v1/get-report/json`` ``{"request": {"authentication", "order": {"id",
  "page", "rowCount" (max 1000)}}}`` -> ``order.message[] {number, status}``: 110 on its way,
  111 delivered, 112 not delivered; ``order.status`` 113/114/115 (115: the order failed).
- ``POST /v1/get-balance/json`` has no side effects: the credentials check. Its answer's
  ``balance`` is ``{"amount": lira, "sms": SMS credits}`` (``docs/account/balance/json.mdx``).
- ``POST /v1/get-sender/json`` (same envelope) answers ``senders: {sender: [...]}``, the
  approved headers (``docs/sms/sender/json.mdx``).

Message ids: reports name the order and the number, never our position in it, so each
recipient's ``provider_message_id`` is ``"{order id}:{E.164 number}"``; a batch is split so no
order carries one number twice. İletimerkezi refuses IYS-less commercial traffic only in
reports (``undelivered``), so ``IYS_CONSENT_MISSING`` never comes from this adapter.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import ClassVar, Final

import httpx
from pydantic import Field, SecretStr

from .._domain import ErrorInfo
from .._errors import InvalidCredentials, ProviderUnavailable
from .._types import IysMode, ProviderCode
from ._http import (
    AdapterSpec,
    Answer,
    CredentialsModel,
    HttpAdapter,
    JsonUnreadable,
    decode_json,
)
from ._sms import json_answer, national, numbers_by_id, send_in_groups
from .account import AccountReading, clean_senders, parse_amount
from .base import InboundCallback, ProviderReport, ReportStatus, SubmitOutcome, SubmitRequest

__all__ = ["SPEC", "Credentials", "IletimerkeziAdapter"]

logger = logging.getLogger("unified_messaging.providers.iletimerkezi")

#: No İletimerkezi answer is anywhere near this; a bigger one is a proxy page or worse.
MAX_ANSWER_BYTES: Final = 256 * 1024
#: ``rowCount``'s documented maximum.
REPORT_ROWS: Final = 1000

# code -> (outcome kind, our code, what it means); anything else 4xx is PROVIDER_REJECTED.
_CODES: Final[Mapping[int, tuple[str, str, str]]] = {
    400: ("rejected", "PROVIDER_REJECTED", "the request could not be parsed"),
    401: ("rejected", "PROVIDER_AUTH_FAILED",
          "wrong key or hash, API access switched off, or the IP is not allowed"),
    402: ("rejected", "INSUFFICIENT_CREDIT", "not enough credit"),
    404: ("rejected", "PROVIDER_REJECTED", "no such API method"),
    422: ("rejected", "PROVIDER_REJECTED", "values in the request could not be validated"),
    450: ("rejected", "SENDER_NOT_APPROVED", "the message header is not approved"),
    451: ("rejected", "DUPLICATE_MESSAGE",
          "the same text went to the same numbers within 10 minutes"),
    452: ("recipient_failed", "INVALID_RECIPIENT",
          "the recipient is invalid or on the account's block list"),
    453: ("rejected", "BODY_TOO_LONG", "the text is longer than 7 SMS"),
    454: ("rejected", "BODY_REJECTED", "the text is empty"),
    457: ("rejected", "PROVIDER_REJECTED", "the send date is malformed"),
    459: ("rejected", "SENDER_REQUIRED", "the message header is empty"),
    460: ("rejected", "SENDER_NOT_APPROVED",
          "the header is over 11 characters or has Turkish letters"),
    468: ("rejected", "PROVIDER_REJECTED", "the IYS flag is missing"),
    469: ("rejected", "PROVIDER_REJECTED", "the IYS list (BIREYSEL or TACIR) is missing"),
    470: ("rejected", "IYS_NOT_CONFIGURED", "no IYS code is set up for the account"),
}  # fmt: skip
#: Codes one message earns its whole order without being named: 451 (this text went to this
#: number within 10 minutes), 452 (a bad or blocked number), 453 (over 7 SMS: the B186 operator
#: code İletimerkezi appends can push a text that fits on its own past it), 454 (an empty text).
_NO_CULPRIT: Final = frozenset({451, 452, 453, 454})
_IYS: Final[Mapping[IysMode, tuple[str, str | None]]] = {
    "informational": ("0", None),
    "commercial_individual": ("1", "BIREYSEL"),
    "commercial_merchant": ("1", "TACIR"),
}
_UNDELIVERED: Final = ErrorInfo(
    "RECIPIENT_UNREACHABLE", "İletimerkezi could not deliver the message (off network, "
    "blacklisted, IYS-filtered or malformed)."
)  # fmt: skip
_REPORT_STATUS: Final[Mapping[str, tuple[ReportStatus, ErrorInfo | None]]] = {
    "accepted": ("pending", None),
    "110": ("pending", None),
    "delivered": ("delivered", None),
    "111": ("delivered", None),
    "undelivered": ("failed", _UNDELIVERED),
    "112": ("failed", _UNDELIVERED),
}


class Credentials(CredentialsModel):
    """The API key and API hash from İletimerkezi's panel (Settings > Security > API)."""

    api_key: SecretStr = Field(min_length=1)
    api_hash: SecretStr = Field(min_length=1)


def _decode(
    answer: Answer, adapter: IletimerkeziAdapter
) -> tuple[int, str, dict[str, object]] | SubmitOutcome:
    """``(code, message, response)`` of an answer, or the outcome of an unreadable one."""
    data = json_answer(answer, adapter)
    if isinstance(data, SubmitOutcome):
        return data
    response = data.get("response")
    status = response.get("status") if isinstance(response, dict) else None
    code = status.get("code") if isinstance(status, dict) else None
    if not isinstance(response, dict) or isinstance(code, bool) or not str(code).isdigit():
        return adapter.unreadable(answer, "no response.status.code")
    message = status.get("message") if isinstance(status, dict) else None
    return int(str(code)), message[:200] if isinstance(message, str) else "", response


class IletimerkeziAdapter(HttpAdapter[Credentials]):
    """Live adapter of an ``sms_b`` connection (İletimerkezi JSON v1)."""

    PROVIDER_CODE: ClassVar[ProviderCode] = "sms_b"
    credentials_model: ClassVar[type[CredentialsModel]] = Credentials
    default_base_url: ClassVar[str] = "https://api.iletimerkezi.com"

    # --- HTTP ----------------------------------------------------------------------------------

    def _envelope(self, **fields: object) -> dict[str, object]:
        auth = {
            "key": self.secret(self.credentials.api_key),
            "hash": self.secret(self.credentials.api_hash),
        }
        return {"request": {"authentication": auth, **fields}}

    async def _post(self, path: str, body: object) -> Answer:
        """One POST, its answer capped; raises ``httpx.HTTPError`` (transport)."""
        return await self.exchange("POST", path, max_body=MAX_ANSWER_BYTES, json=body)

    # --- submit --------------------------------------------------------------------------------

    async def submit(self, request: SubmitRequest) -> SubmitOutcome:
        return (await self.submit_batch([request]))[0]

    async def submit_batch(self, requests: Sequence[SubmitRequest]) -> list[SubmitOutcome]:
        # One sender and IYS class per order; over max_batch is split into more orders.
        return await send_in_groups(
            requests,
            refusal=self._refusal,
            key=lambda r: (r.sender or self.connection.default_sender or "", r.iys_mode),
            size=self.max_batch,
            send=lambda key, chunk: self._send_order(*key, chunk),
        )

    def _refusal(self, request: SubmitRequest) -> SubmitOutcome | None:
        """Why İletimerkezi would refuse this message, decided before any call."""
        if national(request.to) is None or not request.to.startswith("+90"):
            return SubmitOutcome.recipient_failed(
                "INVALID_RECIPIENT", "İletimerkezi takes Turkish mobile numbers (+905…) only."
            )
        sender = request.sender or self.connection.default_sender
        if sender is None:
            return SubmitOutcome.rejected("SENDER_REQUIRED", "İletimerkezi needs a header.")
        problem = self.profile.sender_problem(sender)
        if problem is not None:
            return SubmitOutcome.rejected("SENDER_NOT_APPROVED", f"İletimerkezi: {problem}.")
        if not request.text:
            return SubmitOutcome.rejected("BODY_REJECTED", "İletimerkezi needs a text.")
        # Over 7 SMS is code 453, which would refuse every other message of the order too.
        too_long = self.profile.length_problem(request.text, request.encoding)
        if too_long is not None:
            return SubmitOutcome.rejected("BODY_TOO_LONG", too_long)
        return None

    def _order(self, sender: str, iys_mode: IysMode, chunk: Sequence[SubmitRequest]) -> object:
        numbers_of: dict[str, list[str | None]] = {}
        for request in chunk:
            numbers_of.setdefault(request.text, []).append(national(request.to))
        messages = [{"text": t, "receipents": {"number": n}} for t, n in numbers_of.items()]
        iys, iys_list = _IYS[iys_mode]
        order: dict[str, object] = {"sender": sender, "sendDateTime": [], "iys": iys}
        if iys_list is not None:
            order["iysList"] = iys_list
        # One text: the documented single ``message`` object; more: the repeated form.
        order["message"] = messages[0] if len(messages) == 1 else messages
        return self._envelope(order=order)

    async def _send_order(
        self, sender: str, iys_mode: IysMode, chunk: Sequence[SubmitRequest]
    ) -> list[SubmitOutcome]:
        try:
            answer = await self._post("/v1/send-sms/json", self._order(sender, iys_mode, chunk))
        except httpx.HTTPError as exc:
            return [self.transport_outcome(exc)] * len(chunk)
        read = _send_result(answer, self)
        if isinstance(read, str):
            return [SubmitOutcome.accepted(f"{read}:{r.to}") for r in chunk]
        if _answer_code(answer, self) in _NO_CULPRIT:
            # The whole order is refused for one message İletimerkezi does not name, and
            # nothing was sent: routing asks again in smaller orders to find it.
            return read.refused_together(len(chunk))
        return [read] * len(chunk)

    # --- reports -------------------------------------------------------------------------------

    def parse_reports(self, callback: InboundCallback) -> list[ProviderReport]:
        """Read a webhook push ``{"report": {...}}`` (a list of them is read too)."""
        try:
            data = decode_json(callback.body, max_bytes=MAX_ANSWER_BYTES)
        except JsonUnreadable:
            return []
        raw = data.get("report") if isinstance(data, dict) else None
        items = raw if isinstance(raw, list) else [raw]
        reports = (_pushed(item) for item in items if isinstance(item, dict))
        return [report for report in reports if report is not None]

    async def poll_reports(self, provider_message_ids: Sequence[str]) -> list[ProviderReport]:
        """One ``get-report`` call an order (1000 rows a page covers any batch of ours)."""
        wanted = numbers_by_id(provider_message_ids)
        reports: list[ProviderReport] = []
        for order_id, numbers in wanted.items():
            reports.extend(await self._poll_order(order_id, numbers))
        return reports

    async def _poll_order(self, order_id: str, numbers: set[str]) -> list[ProviderReport]:
        found: list[ProviderReport] = []
        page = 1
        while True:
            order = {"id": order_id, "page": page, "rowCount": REPORT_ROWS}
            try:
                answer = await self._post("/v1/get-report/json", self._envelope(order=order))
            except httpx.HTTPError as exc:
                logger.warning("İletimerkezi report poll failed: %s", self.cause(exc))
                return found
            read = _decode(answer, self)
            if isinstance(read, SubmitOutcome) or read[0] != 200:
                # 455 (no such order yet) and 456 (not due yet) are "nothing new" too.
                return found
            body = read[2].get("order")
            rows = body.get("message") if isinstance(body, dict) else None
            rows = rows if isinstance(rows, list) else []
            for row in rows:
                report = _polled(order_id, row, numbers) if isinstance(row, dict) else None
                if report is not None:
                    found.append(report)
            if len(rows) < REPORT_ROWS:
                break
            page += 1
        if isinstance(body, dict) and str(body.get("status")) == "115":
            seen = {r.to for r in found}
            found += [_order_failed(order_id, to) for to in sorted(numbers - seen)]
        return found

    # --- credentials check ---------------------------------------------------------------------

    async def check(self) -> None:
        """Ask for the balance (no side effects); 401 means the credentials are refused."""
        try:
            answer = await self._post("/v1/get-balance/json", self._envelope())
        except httpx.HTTPError as exc:
            raise self.unreachable(exc, "to check credentials") from None
        if answer.truncated:
            raise self.unreachable(answer, "to check credentials")
        read = _decode(answer, self)
        code = answer.status if isinstance(read, SubmitOutcome) else read[0]
        if code == 401:
            raise InvalidCredentials(
                "İletimerkezi refused the credentials: wrong API key or hash, API access "
                "switched off in the panel, or this IP is not allowed."
            )
        if isinstance(read, SubmitOutcome) or code != 200:
            said = read.error.message if isinstance(read, SubmitOutcome) and read.error else ""
            raise ProviderUnavailable(
                "İletimerkezi gave no usable answer to the check: "
                + (said or f"HTTP {answer.status}: {self.excerpt(answer)}")
            )

    # --- the account (messenger.accounts) ----------------------------------------------------

    async def read_account(self) -> AccountReading:
        """The balance (``get-balance``: ``balance.amount`` in lira, ``balance.sms`` in SMS;
        the account works with one of them, so a non-zero ``amount`` means lira) and the
        approved headers (``get-sender``: ``senders.sender`` list)."""
        response = await self._account_post("/v1/get-balance/json", "balance")
        found = response.get("balance")
        found = found if isinstance(found, dict) else {}
        amount, sms = parse_amount(found.get("amount")), parse_amount(found.get("sms"))
        if amount is None and sms is None:
            raise ProviderUnavailable("İletimerkezi answered the balance query without one.")
        reading_lira = amount is not None and (amount != 0 or sms is None)
        balance, unit = (amount, "TRY") if reading_lira else (sms, "SMS")
        response = await self._account_post("/v1/get-sender/json", "header list")
        senders = response.get("senders")
        names = senders.get("sender") if isinstance(senders, dict) else None
        if isinstance(names, str):  # one header may come as a bare string
            names = [names]
        if not isinstance(names, list):
            names = []  # no approved header yet: İletimerkezi leaves the list out
        return AccountReading(balance, unit, clean_senders(names))  # type: ignore[arg-type]

    async def _account_post(self, path: str, what: str) -> dict[str, object]:
        try:
            answer = await self._post(path, self._envelope())
        except httpx.HTTPError as exc:
            raise self.unreachable(exc, f"to read the {what}") from None
        if answer.truncated:
            raise self.unreachable(answer, f"to read the {what}")
        read = _decode(answer, self)
        code = answer.status if isinstance(read, SubmitOutcome) else read[0]
        if code == 401:
            raise InvalidCredentials(
                "İletimerkezi refused the credentials: wrong API key or hash, API access "
                "switched off in the panel, or this IP is not allowed."
            )
        if isinstance(read, SubmitOutcome) or code != 200:
            raise ProviderUnavailable(
                f"İletimerkezi gave no usable {what} (HTTP {answer.status}): {self.excerpt(answer)}"
            )
        return read[2]


def _answer_code(answer: Answer, adapter: IletimerkeziAdapter) -> int | None:
    """``response.status.code`` of a readable answer, else ``None``."""
    read = _decode(answer, adapter)
    return None if isinstance(read, SubmitOutcome) else read[0]


def _send_result(answer: Answer, adapter: IletimerkeziAdapter) -> str | SubmitOutcome:
    """The order id of a send answer, or the outcome of a refusal or an unreadable answer."""
    read = _decode(answer, adapter)
    if isinstance(read, SubmitOutcome):
        return read
    code, message, response = read
    if code == 200:
        order = response.get("order")
        order_id = order.get("id") if isinstance(order, dict) else None
        text = str(order_id).strip() if isinstance(order_id, str | int) else ""
        if text and not isinstance(order_id, bool):
            return text
        return adapter.unreadable(answer, "code 200 but no order id")
    if 200 <= code < 300:
        # A success code other than 200 is not one İletimerkezi documents.
        return adapter.unreadable(answer, f"code {code}, not 200")
    if code == 503 or code >= 500:
        return SubmitOutcome.unavailable(f"İletimerkezi code {code}: {message or 'unavailable'}.")
    kind, our_code, meaning = _CODES.get(code, ("rejected", "PROVIDER_REJECTED", message))
    text = f"İletimerkezi code {code}: {meaning or 'refused'}."
    if kind == "recipient_failed":
        return SubmitOutcome.recipient_failed(our_code, text)
    return SubmitOutcome.rejected(our_code, text)


def _report(order_id: object, to: str, word: object) -> ProviderReport:
    status, error = _REPORT_STATUS.get(str(word).strip().lower(), ("unknown", None))
    return ProviderReport(
        provider_message_id=f"{order_id}:{to}",
        status=status,
        provider_status=str(word),
        error=error,
        to=to,
    )


def _pushed(item: Mapping[str, object]) -> ProviderReport | None:
    order_id, number, status = item.get("packet_id"), national(item.get("to")), item.get("status")
    if not isinstance(order_id, str | int) or isinstance(order_id, bool) or number is None:
        return None
    return _report(order_id, "+90" + number, status)


def _polled(order_id: str, row: Mapping[str, object], wanted: set[str]) -> ProviderReport | None:
    number = national(row.get("number"))
    if number is None or "+90" + number not in wanted:
        return None
    return _report(order_id, "+90" + number, row.get("status"))


def _order_failed(order_id: str, to: str) -> ProviderReport:
    error = ErrorInfo("PROVIDER_REJECTED", "İletimerkezi could not send the order (115).")
    return ProviderReport(f"{order_id}:{to}", "rejected", "115", error=error, to=to)


SPEC: Final = AdapterSpec("sms_b", Credentials, IletimerkeziAdapter)
