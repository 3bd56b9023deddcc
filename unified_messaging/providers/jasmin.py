"""``sms_e`` with ``gateway=jasmin``: the Jasmin SMS Gateway's HTTP API.

Owns the request of one SMS to a Jasmin ``/send``, the reading of its answer, and the
delivery reports Jasmin posts to the ``dlr-url`` we hand it. Jasmin does not speak Kannel's
``sendsms`` (other path, other fields, other answers, other reports): a connection chooses
it with the ``gateway`` credential (:mod:`._sms_gateway`).

Wire facts (Jasmin's documentation, ``misc/doc/sources/apis/http/index.rst``, and its source:
``jasmin/protocols/http/endpoints/send.py``, ``errors.py``, ``validation.py``,
``jasmin/routing/throwers.py``, ``jasmin/managers/dlr.py``; github.com/jookies/jasmin):

- ``POST {base}/send`` (GET works too; default port 1401), form fields ``username``,
  ``password``, ``to`` (``^\\+?\\d+$``, one recipient), ``from``, ``coding`` (SMPP
  ``data_coding``: 0 SMSC default alphabet, 8 UCS-2), ``content`` (UTF-8; with coding 0
  Jasmin converts it to GSM 03.38 itself) or ``hex-content`` (the bytes, in hex: how UCS-2
  text goes), ``dlr`` ``yes``, ``dlr-url``, ``dlr-level`` (1 SMSC, 2 terminal, 3 both),
  ``dlr-method`` (``GET``/``POST``). An argument Jasmin does not know is a 400.
- Answers are ``text/plain``: ``200 Success "<uuid>"``; otherwise ``Error "<reason>"`` with
  400 (argument validation; ``Authorization failed for user [..] (..)``; ``Value filter
  failed for user [..] (source_address filter mismatch)``), 403 (``Authentication failure
  for username:..``, ``Cannot charge submit_sm, ..``, ``User throughput exceeded``), 412
  (``No route found``, ``Failover route has no bound connectors``), 500 (``Cannot send
  submit_sm, ..``), 503 (interceptor down).
- A text longer than ``long_content_max_parts`` (5 by default) is cut to that many parts
  without a word: we refuse it before sending (``max_parts`` credential).
- Reports: Jasmin's DLR thrower sends, with ``dlr-method``, the fields ``id`` (the uuid of
  ``Success``), ``message_status``, ``level``, ``connector`` and, for a terminal report,
  ``id_smsc``, ``sub``, ``dlvrd``, ``subdate``, ``donedate``, ``err``, ``text``. A level-1
  report's ``message_status`` is the SMSC's ``submit_sm_resp`` status (``ESME_ROK``,
  ``ESME_R…``); a level-2 one's is the receipt's state (``DELIVRD``, ``EXPIRED``, ``DELETED``,
  ``UNDELIV``, ``ACCEPTD``, ``UNKNOWN``, ``REJECTD``). The receiver must answer ``200`` with
  the body ``ACK/Jasmin`` exactly, or Jasmin sends the report again.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import ClassVar, Final
from urllib.parse import parse_qsl

import httpx

from .._domain import Connection, ErrorInfo
from .._encoding import analyze_sms
from .._errors import InvalidCredentials, ProviderUnavailable, RequestInvalid
from .._types import ProviderCode
from ._http import Answer, HttpAdapter, JsonUnreadable, decode_json_object
from ._sms_gateway import JasminCredentials, require_base_url
from .account import AccountReading, parse_amount
from .base import InboundCallback, ProviderReport, ReportStatus, SubmitOutcome, SubmitRequest

__all__ = ["REPORT_ACK", "JasminAdapter"]

SEND_PATH: Final = "/send"
BALANCE_PATH: Final = "/balance"
#: What Jasmin's DLR thrower must read back, or it sends the report again.
REPORT_ACK: Final = "ACK/Jasmin"
#: Both levels: the SMSC's refusal of the submit (level 1) is a report too.
DLR_LEVEL: Final = "3"
#: Jasmin's answers are one short line (or a small JSON object for ``/balance``).
MAX_ANSWER_BYTES: Final = 8 * 1024
#: ``User throughput exceeded``: the user's ``http_throughput`` is messages a second.
THROUGHPUT_PAUSE: Final = 1.0

_SUCCESS: Final = re.compile(r'\A\s*Success\s+"([^"\s]+)"\s*\Z')
_ERROR: Final = re.compile(r'\A\s*Error\s+"(.*)"\s*\Z', re.DOTALL)

#: Level-2 (receipt) states: SMPP 3.4 Appendix B, as Jasmin passes them on.
_RECEIPT: Final[Mapping[str, ReportStatus]] = {
    "DELIVRD": "delivered",
    "ACCEPTD": "pending",
    "EXPIRED": "expired",
    "REJECTD": "rejected",
    "UNDELIV": "failed",
    "DELETED": "failed",
    "UNKNOWN": "unknown",
}
#: ``submit_sm_resp`` statuses that name the recipient: another gateway would refuse it too.
_BAD_DESTINATION: Final = frozenset({"ESME_RINVDSTADR", "ESME_RINVDSTTON", "ESME_RINVDSTNPI"})


class JasminAdapter(HttpAdapter[JasminCredentials]):
    """The live ``sms_e`` adapter for a Jasmin gateway: one message per ``/send``."""

    PROVIDER_CODE: ClassVar[ProviderCode] = "sms_e"
    credentials_model = JasminCredentials
    # Every Jasmin is someone's own host: there is no public default.
    default_base_url = ""

    @classmethod
    def validate_connection(cls, connection: Connection) -> None:
        """``base_url`` is required (no public default): the gateway's HTTP API address."""
        require_base_url(connection, "http://jasmin.example:1401")

    @property
    def max_parts(self) -> int:
        """The most SMS parts the gateway sends of one text (the ``max_parts`` credential)."""
        return self.credentials.parts_allowed

    # --- sending --------------------------------------------------------------------------------

    async def submit(self, request: SubmitRequest) -> SubmitOutcome:
        too_long = self.credentials.parts_problem(request)
        if too_long is not None:
            return SubmitOutcome.rejected("BODY_TOO_LONG", too_long)
        try:
            answer = await self.exchange(
                "POST",
                SEND_PATH,
                max_body=MAX_ANSWER_BYTES,
                # A form, which Twisted reads into the request's arguments as it does a
                # query: the password stays out of URLs and the gateway's access log.
                headers={"Content-Type": "application/x-www-form-urlencoded"},
                content=self._form(request),
            )
        except httpx.HTTPError as exc:
            return self.transport_outcome(exc)
        return self._outcome(answer)

    def _form(self, request: SubmitRequest) -> bytes:
        creds = self.credentials
        fields: dict[str, str] = {
            "username": creds.username,
            "password": self.secret(creds.password),
            # Jasmin's HTTP API: ``to`` is the destination in international format without
            # the '+' (its /send reference); a '+' would go on to the SMSC with TON 1.
            "to": request.to.removeprefix("+"),
        }
        if request.sender:
            fields["from"] = request.sender
        fields.update(_text_fields(request))
        if creds.dlr_url is not None:
            conn = self.connection
            fields["dlr"] = "yes"
            fields["dlr-url"] = f"{creds.dlr_url}/v1/dlr/{conn.id}/{conn.dlr_token}"
            fields["dlr-level"] = DLR_LEVEL
            # No dlr-method: POST is Jasmin's default, and setting it needs one more of the
            # user's authorizations (http_set_dlr_method).
        return str(httpx.QueryParams(fields)).encode("ascii")

    def _outcome(self, answer: Answer) -> SubmitOutcome:
        if answer.truncated:
            # Cut off or too long to be Jasmin's: a 2xx of it may still mean it was taken.
            return self.unreadable(
                answer, f"the answer was not read to its end ({MAX_ANSWER_BYTES} bytes at most)"
            )
        status, text = answer.status, answer.text.strip()
        said = self._quote(text)
        success = _SUCCESS.match(text)
        if status == 200 and success:
            return SubmitOutcome.accepted(success.group(1))
        if status < 400:
            # Not Jasmin's answer (a proxy's page, a portal): a 2xx may still mean it was
            # taken (unknown); a 3xx proves nothing was.
            return self.unreadable(answer, "not a Jasmin answer")
        reason = _reason(text)
        if status == 429 or "throughput exceeded" in reason:
            wait = answer.retry_after if answer.retry_after is not None else THROUGHPUT_PAUSE
            return SubmitOutcome.unavailable(
                f"The gateway is throttling this user: {said}", retry_after=wait
            )
        if status >= 500:
            return SubmitOutcome.unavailable(f"The gateway answered HTTP {status}: {said}")
        return SubmitOutcome.rejected(_refusal_code(status, reason), f"Jasmin refused it: {said}")

    def _quote(self, text: str) -> str:
        """The gateway's words for an error message: one line, short, no password in it."""
        line = " ".join(text.split())[:200] or "(empty body)"
        return self.redact(line)  # the connection's secrets and anything shaped like one

    # --- reports --------------------------------------------------------------------------------

    @property
    def report_reply(self) -> str:
        """The body Jasmin's DLR thrower must read back: anything else and it retries."""
        return REPORT_ACK

    def parse_reports(self, callback: InboundCallback) -> list[ProviderReport]:
        """Read one report Jasmin threw at our ``dlr-url`` (a form POST, or a GET)."""
        fields = dict(callback.query)
        if callback.body:
            fields.update(parse_qsl(callback.body.decode("utf-8", "replace")))
        message_id = fields.get("id", "").strip()
        word = fields.get("message_status", "").strip().upper()
        if not message_id or not word:
            raise RequestInvalid("The body is not a Jasmin delivery report (id, message_status).")
        level = fields.get("level", "").strip()
        status = _report_status(word)
        return [
            ProviderReport(
                provider_message_id=message_id,
                status=status,
                provider_status=f"{level}:{word}" if level else word,
                # donedate is the SMSC's local time without a zone: the arrival time is safer.
                occurred_at=None,
                error=_report_error(status, word, fields.get("err", "").strip()),
            )
        ]

    # --- credentials check ----------------------------------------------------------------------

    async def check(self) -> None:
        """``GET /balance``: Jasmin authenticates the user and sends nothing."""
        params = {
            "username": self.credentials.username,
            "password": self.secret(self.credentials.password),
        }
        try:
            answer = await self.exchange(
                "GET", BALANCE_PATH, max_body=MAX_ANSWER_BYTES, params=params
            )
        except httpx.HTTPError:
            raise ProviderUnavailable("The sms_e gateway could not be reached.") from None
        if answer.truncated or answer.status >= 500:
            raise ProviderUnavailable("The sms_e gateway could not be reached.")
        if answer.status in (401, 403):
            raise InvalidCredentials("The Jasmin gateway refused the username or password.")
        # 200, or 400 "Cannot check balance": the user is known (only not allowed /balance).

    # --- the account (messenger.accounts) ----------------------------------------------------

    async def read_account(self) -> AccountReading:
        """``GET /balance``: ``{"balance": <number or "ND">, "sms_count": <number or "ND">}``
        in the gateway's own unit; ``ND`` (not defined: no limit set) reads as no balance.
        Jasmin keeps no list of senders (a filter may restrict them): ``senders`` ``None``."""
        params = {
            "username": self.credentials.username,
            "password": self.secret(self.credentials.password),
        }
        try:
            answer = await self.exchange(
                "GET", BALANCE_PATH, max_body=MAX_ANSWER_BYTES, params=params
            )
        except httpx.HTTPError:
            raise ProviderUnavailable("The sms_e gateway could not be reached.") from None
        if answer.status in (401, 403):
            raise InvalidCredentials("The Jasmin gateway refused the username or password.")
        if answer.truncated or answer.status != 200:
            raise ProviderUnavailable(
                f"The Jasmin gateway gave no balance (HTTP {answer.status}): {self.excerpt(answer)}"
            )
        try:
            data = decode_json_object(answer.body)
        except JsonUnreadable:
            raise ProviderUnavailable("The Jasmin gateway's balance is not JSON.") from None
        return AccountReading(parse_amount(data.get("balance")), "credit", None)


# --- helpers ------------------------------------------------------------------------------------


def _text_fields(request: SubmitRequest) -> dict[str, str]:
    """``coding`` 0 with the text (Jasmin makes it GSM 03.38), or 8 with the UCS-2 bytes.

    No Turkish single shift over this API either: the ``sms_e`` profile says so, and routing
    counts the record's ``encoding``/``segments`` that way. UCS-2 goes as ``hex-content``:
    ``content`` with coding 8 would be taken as the raw bytes of the form field.
    """
    encoding = request.encoding or analyze_sms(request.text, allow_turkish_shift=False).encoding
    if encoding == "gsm7":
        return {"coding": "0", "content": request.text}
    return {"coding": "8", "hex-content": request.text.encode("utf-16-be").hex()}


def _reason(text: str) -> str:
    error = _ERROR.match(text)
    return (error.group(1) if error else text).lower()


def _refusal_code(status: int, reason: str) -> str:
    if status == 401 or "authentication failure" in reason or "authorization failed" in reason:
        return "PROVIDER_AUTH_FAILED"
    if "cannot charge" in reason:
        return "INSUFFICIENT_CREDIT"
    if "source_address filter" in reason:
        return "SENDER_NOT_APPROVED"
    return "PROVIDER_REJECTED"


def _report_status(word: str) -> ReportStatus:
    if word == "ESME_ROK":
        return "pending"  # the SMSC took it; the receipt (level 2) says the rest
    if word.startswith("ESME_"):
        return "rejected"  # the SMSC refused the submit: final, nothing was sent
    status = _RECEIPT.get(word)
    if status is None:
        # Jasmin itself refuses to throw any other status (DLRContentForHttpapi).
        raise RequestInvalid.for_field("message_status", "is not a Jasmin report status")
    return status


def _report_error(status: ReportStatus, word: str, err: str) -> ErrorInfo | None:
    detail = f" ({word}{', err:' + err[:16] if err else ''})"
    if status == "rejected" and word in _BAD_DESTINATION:
        return ErrorInfo("INVALID_RECIPIENT", f"The SMSC refused the destination{detail}.")
    if status == "rejected":
        return ErrorInfo("PROVIDER_REJECTED", f"The SMSC refused the message{detail}.")
    if status == "failed":
        return ErrorInfo("RECIPIENT_UNREACHABLE", f"The handset could not be reached{detail}.")
    return None
