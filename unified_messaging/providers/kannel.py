"""``sms_e`` (the default ``gateway=kannel``): the Kannel ``sendsms`` HTTP interface.

Owns the request of one SMS to a Kannel smsbox (or a Kannel-compatible aggregator), the reading
of its answer, and the delivery reports Kannel fetches from the ``dlr-url`` we hand it.

Wire facts (Kannel user guide, "Sending SMS"; ``gw/smsbox.c``):

- ``GET {base}/cgi-bin/sendsms?username&password&from&to&text&charset&coding&dlr-mask&dlr-url``
  (also ``smsc`` to pick a route). A request *with a body* is read as ``text/plain`` or XML with
  ``X-Kannel-*`` headers, never as a form, so we always use GET with query parameters.
- ``coding``: 0 = 7-bit GSM, 1 = 8-bit binary, 2 = UCS-2; anything else is
  ``400 Coding field misformed, rejected``. With ``charset=UTF-8`` smsbox converts our UTF-8
  text itself. Kannel cannot build the Turkish national-language shift UDH over ``sendsms``,
  so text that needs ş ğ ı İ Ğ Ş ç goes out as UCS-2: the ``sms_e`` profile says so
  (``turkish_shift=False``), and routing counts its ``encoding``/``segments`` that way.
- Answers (``Content-Type: text/html``): ``202 0: Accepted for delivery`` (bearerbox took it),
  ``202 3: Queued for later delivery`` (stored, no SMSC yet), ``202 Sent.`` (with
  ``immediate-sendsms-reply``, and before 1.4); ``403 Authorization failed for sendsms``;
  ``403 Not routable. Do not try again.``; ``503 Temporal failure, try again later.``;
  ``500 Sending failed.``; ``400 <field> ..., rejected`` (e.g. ``Sender missing and no global
  set, rejected``, ``Missing receiver number, rejected``, ``Number(s) has/have been denied by
  white- and/or black-lists.``); ``404 Unknown request.``. A ``Success "<id>"`` from a
  Kannel-compatible front end is read as accepted too. (Jasmin is not one: it has its own
  API, :mod:`.jasmin`, chosen with the ``gateway`` credential.)
- Kannel's answer carries no message id, so we mint one, put it in the ``dlr-url``'s query and
  use it as the ``provider_message_id``: the report then names the message itself. The id is
  derived from the job and its attempt (:func:`minted_id`), never random, so a report for a
  send whose outcome was never stored (the process died mid-call) still names its message
  (docs/decisions.md, "Kannel's minted id").
- ``dlr-url`` escapes (user guide, table 7-10 "Parameters (Escape Codes)"), substituted
  URL-encoded when Kannel fetches it (GET): ``%d`` report type, ``%A`` SMSC reply
  (``id:… sub:… dlvrd:… stat:DELIVRD err:000 …`` or ``NACK/0x0000000b/Invalid Destination
  Address``), ``%T`` Unix time, ``%p`` the *sender of the report*: the handset, since a
  report travels from the handset back (``%P`` is its receiver: our own sender header).
  (``%i`` is the smsc-id and ``%I`` Kannel's internal UUID; we need neither.)
- Report ``type`` (user guide, chapter 10 "SMS Delivery Reports"; ``gw/dlr.h``): 1 delivered
  to phone, 2 non-delivered to phone, 4 queued on SMSC, 8 delivered to SMSC (ack), 16
  non-delivered to SMSC (nack); 32 and 64 only ever come with 2: ``DLR_EXPIRED`` (34) and
  ``DLR_UNKNOWN`` (66). The SMPP receipt's ``stat:`` in ``%A`` says more where it is there.
- Parts: smsbox splits a long text into at most the ``sendsms-user``'s ``max-messages``
  parts (default 1) and silently drops the rest, so the adapter refuses a longer text before
  the call (``max_parts`` credential, :meth:`.GatewayCredentials.parts_problem`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import ClassVar, Final
from urllib.parse import parse_qsl

import httpx

from .._domain import Connection, ErrorInfo
from .._encoding import analyze_sms
from .._errors import InvalidCredentials, ProviderUnavailable, RequestInvalid
from .._types import ProviderCode
from ._http import Answer, HttpAdapter, excerpt, logger
from ._sms_gateway import GatewayCredentials, KannelCredentials, require_base_url
from .base import (
    InboundCallback,
    ProviderReport,
    ReportStatus,
    SubmitOutcome,
    SubmitRequest,
    minted_message_id,
)

__all__ = ["Credentials", "KannelAdapter", "minted_id"]

#: ``sms_e``'s credentials schema, shared with the Jasmin adapter (:mod:`._sms_gateway`).
Credentials = GatewayCredentials

SENDSMS_PATH: Final = "/cgi-bin/sendsms"
#: Every report type Kannel knows (1 | 2 | 4 | 8 | 16).
DLR_MASK: Final = "31"
#: Kannel's answers are one short line; anything this big is not one of them.
MAX_ANSWER_BYTES: Final = 8 * 1024

# "Sent." is the immediate reply; the two numbered ones wait for bearerbox's ack.
_ACCEPTED_ANSWER: Final = re.compile(
    r"\A\s*(?:0: Accepted for delivery|3: Queued for later delivery|Sent\.)", re.IGNORECASE
)
_ID_ANSWER: Final = re.compile(r'\A\s*Success\s+"([^"]+)"', re.IGNORECASE)
_STAT: Final = re.compile(r"\bstat:(\w+)", re.IGNORECASE)
_ERR: Final = re.compile(r"\berr:(\w+)", re.IGNORECASE)
_NACK: Final = re.compile(r"\ANACK/(0x[0-9A-Fa-f]+|\d+)/?(.*)", re.DOTALL)

#: Report type bits (``gw/dlr.h``): ``DLR_EXPIRED`` is ``0x20 | DLR_FAIL``, ``DLR_UNKNOWN``
#: ``0x40 | DLR_FAIL``; 1 | 2 | 4 | 8 | 16 | 32 | 64 is the largest type there is.
_DLR_SUCCESS, _DLR_FAIL, _DLR_SMSC_FAIL = 1, 2, 16
_DLR_EXPIRED_BIT, _DLR_UNKNOWN_BIT = 32, 64
_MAX_DLR_TYPE: Final = 127

# The receipt's ``stat:`` (SMPP 3.4 Appendix B message states) in Kannel's ``%A``: the most
# precise word there is on a report, so it decides wherever it is one of these.
_STAT_STATUS: Final[Mapping[str, ReportStatus]] = {
    "DELIVRD": "delivered",
    "EXPIRED": "expired",
    "UNDELIV": "failed",
    "DELETED": "failed",
    "REJECTD": "rejected",
    "UNKNOWN": "unknown",
    "ACCEPTD": "pending",
    "ENROUTE": "pending",
}


def minted_id(request: SubmitRequest) -> str:
    """The id we give Kannel for ``request`` (in the ``dlr-url``): the job and the attempt
    (:func:`.base.minted_message_id`), which the send stores before any call, so a report
    names its message even when the send never stored its outcome. Letters, digits, ``_``
    and ``.``: safe in a URL as is."""
    return minted_message_id(request.job_id, request.attempt)


class KannelAdapter(HttpAdapter[KannelCredentials]):
    """The live ``sms_e`` adapter for a Kannel gateway: one message per ``sendsms`` request."""

    PROVIDER_CODE: ClassVar[ProviderCode] = "sms_e"
    credentials_model = KannelCredentials
    # Every Kannel is someone's own host: there is no public default.
    default_base_url = ""

    @classmethod
    def validate_connection(cls, connection: Connection) -> None:
        """``base_url`` is required (no public default) and must be an http(s) address."""
        require_base_url(connection, "http://kannel.example:13013")

    @property
    def max_parts(self) -> int:
        """The most SMS parts the gateway sends of one text (the ``max_parts`` credential)."""
        return self.credentials.parts_allowed

    # --- sending --------------------------------------------------------------------------------

    async def submit(self, request: SubmitRequest) -> SubmitOutcome:
        too_long = self.credentials.parts_problem(request)
        if too_long is not None:
            return SubmitOutcome.rejected("BODY_TOO_LONG", too_long)
        message_id = minted_id(request)
        try:
            answer = await self._sendsms(self._params(request, message_id))
        except httpx.HTTPError as exc:
            return self.transport_outcome(exc, provider_message_id=message_id)
        if answer.truncated:
            return self.unreadable(answer, "not a sendsms answer", provider_message_id=message_id)
        return self._outcome(answer, message_id)

    def _params(self, request: SubmitRequest, message_id: str) -> dict[str, str]:
        creds = self.credentials
        params = {
            "username": creds.username,
            "password": self.secret(creds.password),
            "to": request.to,
            "text": request.text,
            "charset": "UTF-8",
            "coding": _coding(request),
        }
        if request.sender:
            params["from"] = request.sender
        if creds.smsc:
            params["smsc"] = creds.smsc
        dlr_url = self._dlr_url(message_id)
        if dlr_url is not None:
            params["dlr-mask"] = DLR_MASK
            params["dlr-url"] = dlr_url
        return params

    def _dlr_url(self, message_id: str) -> str | None:
        base = self.credentials.dlr_url
        if base is None:
            return None
        conn = self.connection
        # Kannel substitutes the escapes itself; our id is URL-safe, so it needs no escaping.
        # %p, not %P: in a report the handset is the sender (see the module's docstring).
        return (
            f"{base}/v1/dlr/{conn.id}/{conn.dlr_token}"
            f"?id={message_id}&type=%d&answer=%A&ts=%T&to=%p"
        )

    def _outcome(self, answer: Answer, message_id: str) -> SubmitOutcome:
        status = answer.status
        text = answer.text.strip()
        said = self._quote(text)
        if 200 <= status < 300:
            if _ACCEPTED_ANSWER.match(text):
                return SubmitOutcome.accepted(message_id)
            gateway_id = _ID_ANSWER.match(text)
            if gateway_id:
                # Reports come to the dlr-url we built, so they carry our id, not this one.
                logger.debug("sms_e gateway id %s for %s", gateway_id.group(1), message_id)
                return SubmitOutcome.accepted(message_id)
            # Not a sendsms answer (a proxy's page, a portal): we cannot tell it was sent;
            # a report to our dlr-url (it names message_id) can still settle it.
            return self.unreadable(answer, "not a sendsms answer", provider_message_id=message_id)
        if status == 401 or (status == 403 and "auth" in text.lower()):
            return SubmitOutcome.rejected(
                "PROVIDER_AUTH_FAILED", f"The gateway refused the username or password: {said}"
            )
        if status == 429:
            return SubmitOutcome.unavailable(
                f"The gateway is throttling requests: {said}",
                retry_after=answer.retry_after,
            )
        if status >= 500 or status < 200 or 300 <= status < 400:
            return SubmitOutcome.unavailable(f"The gateway answered HTTP {status}: {said}")
        return SubmitOutcome.rejected(
            "PROVIDER_REJECTED", f"The gateway rejected the message (HTTP {status}): {said}"
        )

    def _quote(self, text: str) -> str:
        """The gateway's words for an error message: one line, short, no credential in it."""
        return excerpt(text, self.secrets())

    async def _sendsms(self, params: Mapping[str, str]) -> Answer:
        """One GET of ``sendsms``, its answer read no further than the cap."""
        return await self.exchange("GET", SENDSMS_PATH, max_body=MAX_ANSWER_BYTES, params=params)

    # --- reports --------------------------------------------------------------------------------

    def parse_reports(self, callback: InboundCallback) -> list[ProviderReport]:
        """Read one Kannel delivery report (a GET to our ``dlr-url``; a form POST also works)."""
        fields = dict(callback.query)
        if callback.body and _is_form(callback.headers):
            fields.update(parse_qsl(callback.body.decode("utf-8", "replace")))
        if not fields:
            return []
        message_id = fields.get("id", "").strip()
        if not message_id:
            raise RequestInvalid.for_field("id", "is missing: not a report for a dlr-url of ours")
        dlr_type = _dlr_type(fields.get("type", ""))
        answer = fields.get("answer", "")
        status = _report_status(dlr_type, answer)
        return [
            ProviderReport(
                provider_message_id=message_id,
                status=status,
                provider_status=_provider_status(dlr_type, answer),
                occurred_at=_epoch(fields.get("ts", "")),
                error=_report_error(status, answer),
                to=fields.get("to") or None,
            )
        ]

    # --- credentials check ----------------------------------------------------------------------

    async def check(self) -> None:
        """Authenticate without sending: smsbox checks the user before it looks for ``to``.

        A good user gets ``400 Missing receiver number, rejected``; a bad one ``403``.
        """
        params = {
            "username": self.credentials.username,
            "password": self.secret(self.credentials.password),
        }
        try:
            answer = await self._sendsms(params)
        except httpx.HTTPError as exc:
            raise self.unreachable(exc, "to check credentials") from None
        if answer.truncated:
            raise self.unreachable(answer, "to check credentials")
        if answer.status in (401, 403):
            raise InvalidCredentials("The sms_e gateway refused the username or password.")
        if answer.status >= 500:
            raise ProviderUnavailable(
                f"The sms_e gateway answered HTTP {answer.status}: {self._quote(answer.text)}"
            )


# --- helpers ------------------------------------------------------------------------------------


def _coding(request: SubmitRequest) -> str:
    """``0`` (GSM 03.38) or ``2`` (UCS-2): there is no Turkish shift over ``sendsms``.

    Routing sets ``request.encoding`` from the ``sms_e`` profile, so it is ``gsm7`` or
    ``ucs2`` here; a ``gsm7_turkish`` from elsewhere still goes as UCS-2, never as 7-bit
    with characters the default alphabet lacks.
    """
    encoding = request.encoding or analyze_sms(request.text, allow_turkish_shift=False).encoding
    return "0" if encoding == "gsm7" else "2"


def _dlr_type(value: str) -> int:
    try:
        dlr_type = int(value.strip())
    except ValueError:
        dlr_type = 0
    qualifier = dlr_type & (_DLR_EXPIRED_BIT | _DLR_UNKNOWN_BIT)
    # 32 and 64 qualify a non-delivery (2): alone they are no type Kannel sends.
    if not 0 < dlr_type <= _MAX_DLR_TYPE or (qualifier and not dlr_type & _DLR_FAIL):
        raise RequestInvalid.for_field(
            "type", "must be a Kannel report type (1, 2, 4, 8, 16, 34 or 66)"
        )
    return dlr_type


def _report_status(dlr_type: int, answer: str) -> ReportStatus:
    """Our status for a report of ``dlr_type`` with the SMSC's ``answer`` (``%A``).

    A final type (1 delivered, 2 and its 34/66 variants non-delivered) defers to the
    receipt's ``stat:`` where that is a known SMPP state, since it is the more precise word
    (``2`` with ``stat:EXPIRED`` is ``expired``); without one, the type's bits decide. A
    combined value can only come from a hand-made callback: the final bit wins.
    """
    if dlr_type & (_DLR_SUCCESS | _DLR_FAIL):
        stat = _STAT.search(answer)
        said = _STAT_STATUS.get(stat.group(1).upper()) if stat else None
        if said is not None and said != "pending":
            return said
        if dlr_type & _DLR_SUCCESS:
            return "delivered"
        if dlr_type & _DLR_EXPIRED_BIT:
            return "expired"
        if dlr_type & _DLR_UNKNOWN_BIT:
            return "unknown"
        return "failed"
    if dlr_type & _DLR_SMSC_FAIL:
        return "rejected"
    return "pending"


def _provider_status(dlr_type: int, answer: str) -> str:
    stat = _STAT.search(answer)
    return f"{dlr_type}:{stat.group(1).upper()}" if stat else str(dlr_type)


def _report_error(status: ReportStatus, answer: str) -> ErrorInfo | None:
    if status == "rejected":
        return ErrorInfo("PROVIDER_REJECTED", f"The SMSC refused the message{_detail(answer)}.")
    if status == "failed":
        return ErrorInfo(
            "RECIPIENT_UNREACHABLE", f"The handset could not be reached{_detail(answer)}."
        )
    return None


def _detail(answer: str) -> str:
    """The SMSC's reason, without the ``text:`` excerpt of the message that receipts carry."""
    nack = _NACK.match(answer.strip())
    if nack:
        reason = " ".join(nack.group(2).split())[:120]
        return f" (NACK {nack.group(1)}{': ' + reason if reason else ''})"
    stat, err = _STAT.search(answer), _ERR.search(answer)
    words = [f"stat:{stat.group(1)}" if stat else "", f"err:{err.group(1)}" if err else ""]
    detail = " ".join(w for w in words if w)
    return f" ({detail})" if detail else ""


def _is_form(headers: Mapping[str, str]) -> bool:
    content_type = next((v for k, v in headers.items() if k.lower() == "content-type"), "")
    return content_type.split(";")[0].strip().lower() == "application/x-www-form-urlencoded"


def _epoch(value: str) -> datetime | None:
    if not value.strip().isdigit():
        return None
    try:
        return datetime.fromtimestamp(int(value), UTC)
    except (OverflowError, OSError, ValueError):
        return None
