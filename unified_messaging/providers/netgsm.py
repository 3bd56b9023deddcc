"""``sms_a``: the NetGSM REST v2 adapter (send, report polling, credentials check).

Owns NetGSM's wire format and the mapping of its answers to the five outcomes. Wire facts,
from NetGSM's OpenAPI document and SDK enums (github.com/netgsm/netgsm-sms-js ``openapi.json``,
``src/enums.ts``, ``src/netgsm.ts``) and its Python SDK (netgsm/netgsm-sms-python):

- ``POST /sms/rest/v2/send``, HTTP Basic (usercode:password), JSON ``{"msgheader", "messages":
  [{"msg", "no"}], "encoding", "iysfilter", "appname"}``. ``no`` is ten digits (``5XXXXXXXXX``),
  ``msgheader`` at most 11 characters. ``encoding: "TR"`` turns on Turkish characters (the
  SDKs send it only when the text has them); ``iysfilter`` is ``"0"`` informational,
  ``"11"`` commercial to individuals, ``"12"`` commercial to merchants (IYS-checked).
- Success: 200 ``{"code": "00", "jobid", "description"}``, one ``jobid`` for the whole request.
  Refusals: HTTP 406 with ``code`` 20 text problem or too long, 30 bad credentials / no API
  access / IP not allowed, 40 header not registered, 50 account cannot send IYS-checked, 51 no
  IYS brand on the account, 70 bad or missing parameter, 80 sending rate limit, 85 more than 20
  jobs for one number within a minute; 100/101 system error.
- Reports: ``POST /sms/rest/v2/report`` ``{"jobids": [...], "startdate", "stopdate"`` (both
  required, ``dd.MM.yyyy HH:mm:ss``), ``"pagenumber"`` (from 0), ``"pagesize"`` (1-100)``}`` ->
  ``{"code": "00", "jobs": [{"jobid", "number", "status", "deliveredDate", "errorCode", …}]}``;
  code 60 means no records yet, 80 the limit of 10 report calls a minute. Row ``status``: 0
  pending, 1 delivered, 2 expired, 3 invalid or restricted number, 4 not sent to the operator,
  11 rejected, 12 delivery error, 13 duplicate, 14 no credit, 15 blacklisted, 16 IYS refused,
  17 IYS error.
- ``GET /sms/rest/v2/msgheader`` lists the account's headers (``{"code": "00", "msgheaders":
  [...]}``): the credentials check, and the sender list of ``messenger.accounts``.
- ``POST /balance`` ``{"usercode", "password", "stip": 2}`` answers the credit in lira as
  ``{"code": "00", "balance": "57,860"}`` (the JS SDK's ``checkBalance`` and its tests).

One-time codes (D34) may take NetGSM's OTP route instead (``/sms/send/otp``, XML), when
the connection's credentials turn it on (``otp``): :mod:`._netgsm_otp`.

Message ids: NetGSM gives one ``jobid`` per request and reports rows by ``jobid`` and number,
so each recipient's ``provider_message_id`` is ``"{jobid}:{E.164 number}"``. A batch is split
so no request carries the same number twice, which keeps that id unique.
"""

from __future__ import annotations

import base64
import logging
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from functools import cached_property
from typing import ClassVar, Final, Protocol

import httpx
from pydantic import Field, SecretStr

from .._clock import Clock
from .._domain import ErrorInfo
from .._encoding import analyze_sms
from .._errors import InvalidCredentials, ProviderUnavailable
from .._types import IysMode, ProviderCode
from . import _netgsm_otp as otp
from ._http import AdapterSpec, Answer, CredentialsModel, HttpAdapter
from ._sms import json_answer, national, numbers_by_id, send_in_groups
from .account import AccountReading, clean_senders, parse_amount
from .base import (
    PROFILES,
    ProviderReport,
    ReportCalls,
    ReportStatus,
    SubmitOutcome,
    SubmitRequest,
)

__all__ = ["SPEC", "Credentials", "NetgsmAdapter"]

logger = logging.getLogger("unified_messaging.providers.netgsm")

#: No NetGSM answer is anywhere near this; a bigger one is a proxy page or worse.
MAX_ANSWER_BYTES: Final = 256 * 1024
#: Turkey has kept UTC+3 all year since 2016; NetGSM's dates are local.
TURKEY: Final = timezone(timedelta(hours=3), "TRT")


def _calls_per_minute() -> int:
    poll = PROFILES["sms_a"].poll
    assert poll is not None and poll.calls_per_minute is not None  # the profile declares it
    return poll.calls_per_minute


#: NetGSM's cap on report calls, as its profile declares it (10 a minute).
REPORT_CALLS_PER_MINUTE: Final = _calls_per_minute()
REPORT_PAGE_SIZE: Final = 100
#: How long code 80 (sending rate exceeded) pauses the connection (D26): NetGSM sends no
#: Retry-After, and its rate limits are counted per minute.
THROTTLE_PAUSE: Final = 60.0
#: Job ids per report call: our cap (NetGSM documents none), so one call stays small.
REPORT_JOBIDS_PER_CALL: Final = 100
_IYS_FILTER: Final[Mapping[IysMode, str]] = {
    "informational": "0",
    "commercial_individual": "11",
    "commercial_merchant": "12",
}
# code -> (outcome kind, our code, what it means); 80/85 are throttling, so "unavailable":
# 80 is the account's sending rate (the connection pauses, D26), 85 one number's (20 jobs a
# minute), which says nothing about the connection, so the breaker leaves it out.
_SEND_CODES: Final[Mapping[str, tuple[str, str, str]]] = {
    "20": ("rejected", "BODY_REJECTED", "the text has a problem or is over the maximum length"),
    "30": ("rejected", "PROVIDER_AUTH_FAILED",
           "wrong usercode or password, no API access, or the IP is not allowed"),
    "40": ("rejected", "SENDER_NOT_APPROVED", "the message header is not registered"),
    "50": ("rejected", "IYS_NOT_CONFIGURED", "the account cannot send IYS-checked messages"),
    "51": ("rejected", "IYS_NOT_CONFIGURED", "no IYS brand is registered for the account"),
    "70": ("rejected", "PROVIDER_REJECTED", "a parameter is wrong or missing"),
    "80": ("unavailable", "PROVIDER_UNAVAILABLE", "the sending rate limit is exceeded"),
    "85": ("unavailable", "PROVIDER_RECIPIENT_THROTTLED",
           "more than 20 jobs for one number within a minute"),
    "100": ("unavailable", "PROVIDER_UNAVAILABLE", "system error"),
    "101": ("unavailable", "PROVIDER_UNAVAILABLE", "system error"),
}  # fmt: skip
#: Send codes one message earns its whole request without being named: 20 (a problem in a
#: text, or one over NetGSM's maximum length, which NetGSM does not put a number on).
_NO_CULPRIT: Final = frozenset({"20"})
# Report row status -> (our status, error code or None, what it means).
_REPORT_STATUS: Final[Mapping[int, tuple[ReportStatus, str | None, str]]] = {
    0: ("pending", None, "waiting for the operator"),
    1: ("delivered", None, "delivered"),
    2: ("expired", None, "validity period ran out"),
    3: ("failed", "INVALID_RECIPIENT", "invalid or restricted number"),
    4: ("rejected", "PROVIDER_REJECTED", "not sent to the operator"),
    11: ("rejected", "PROVIDER_REJECTED", "rejected by the operator"),
    12: ("failed", "RECIPIENT_UNREACHABLE", "delivery error"),
    13: ("rejected", "DUPLICATE_MESSAGE", "duplicate message"),
    14: ("rejected", "INSUFFICIENT_CREDIT", "not enough credit"),
    15: ("rejected", "RECIPIENT_BLACKLISTED", "the number is on the blacklist"),
    16: ("rejected", "IYS_CONSENT_MISSING", "IYS refused: the recipient has no consent"),
    17: ("failed", "IYS_CHECK_FAILED", "the IYS check failed"),
}


class Credentials(CredentialsModel):
    """A NetGSM API (sub-)user: its usercode, its password, and an optional app name."""

    usercode: str = Field(min_length=1)
    password: SecretStr = Field(min_length=1)
    #: NetGSM's optional ``appname``, sent with every call for their statistics.
    appname: str | None = None
    #: Send one-time codes through NetGSM's OTP route (the account needs an OTP package;
    #: without one, codes go the normal way).
    otp: bool = Field(
        default=False,
        description="true: one-time codes go by NetGSM's OTP route (needs an OTP package)",
    )


class _Budget(Protocol):
    """What a poll spends its report calls from: a worker round's :class:`ReportCalls`, or
    the adapter's own minute for direct :meth:`NetgsmAdapter.poll_reports` calls."""

    def take(self) -> bool: ...

    def stop(self) -> None: ...

    def cover(self, provider_message_ids: Iterable[str]) -> None: ...


class _ReportBudget:
    """At most ``limit`` report calls in any minute, shared by every direct poll of this
    adapter (on its clock); the worker's rounds are paced by the worker instead."""

    def __init__(self, clock: Clock, limit: int = REPORT_CALLS_PER_MINUTE) -> None:
        self._clock, self._limit = clock, limit
        self._calls: deque[datetime] = deque()

    def take(self) -> bool:
        now = self._clock.now()
        while self._calls and now - self._calls[0] >= timedelta(minutes=1):
            self._calls.popleft()
        if len(self._calls) >= self._limit:
            return False
        self._calls.append(now)
        return True

    def stop(self) -> None:
        # NetGSM says we are over (another process shares the account): wait a full minute.
        self._calls = deque([self._clock.now()] * self._limit)

    def cover(self, provider_message_ids: Iterable[str]) -> None:
        """Direct polls keep no per-message pace: the worker's rounds do."""


def _answer_code(data: Mapping[str, object]) -> str:
    code = data.get("code")
    if isinstance(code, bool) or not isinstance(code, str | int):
        return ""
    text = str(code).strip()
    return text.zfill(2) if text.isdigit() else text


class NetgsmAdapter(HttpAdapter[Credentials]):
    """Live adapter of an ``sms_a`` connection (NetGSM REST v2)."""

    PROVIDER_CODE: ClassVar[ProviderCode] = "sms_a"
    credentials_model: ClassVar[type[CredentialsModel]] = Credentials
    default_base_url: ClassVar[str] = "https://api.netgsm.com.tr"

    @cached_property
    def report_budget(self) -> _ReportBudget:
        return _ReportBudget(self.clock)

    #: Until when the OTP route rests after a 60 or 80 (``_netgsm_otp.FALL_BACK``).
    _otp_rests_until: datetime | None = None

    # --- HTTP ----------------------------------------------------------------------------------

    def _headers(self) -> dict[str, str]:
        pair = f"{self.credentials.usercode}:{self.secret(self.credentials.password)}"
        return {"Authorization": "Basic " + base64.b64encode(pair.encode()).decode("ascii")}

    async def _call(
        self,
        method: str,
        path: str,
        body: dict[str, object] | None = None,
        params: Mapping[str, str] | None = None,
    ) -> Answer:
        """One call, its answer capped; raises ``httpx.HTTPError`` (transport)."""
        if body is not None and self.credentials.appname:
            body["appname"] = self.credentials.appname  # NetGSM's optional usage tag
        return await self.exchange(
            method,
            path,
            max_body=MAX_ANSWER_BYTES,
            json=body,
            params=params,
            headers=self._headers(),
        )

    # --- submit --------------------------------------------------------------------------------

    async def submit(self, request: SubmitRequest) -> SubmitOutcome:
        return (await self.submit_batch([request]))[0]

    async def submit_batch(self, requests: Sequence[SubmitRequest]) -> list[SubmitOutcome]:
        if not self.credentials.otp or not any(r.one_time_code for r in requests):
            return await self._submit_normal(requests)
        outcomes: dict[int, SubmitOutcome] = {}
        normal: list[int] = []
        for index, request in enumerate(requests):
            found = await self._submit_otp(request) if request.one_time_code else None
            if found is None:
                normal.append(index)
            else:
                outcomes[index] = found
        sent = await self._submit_normal([requests[i] for i in normal])
        outcomes.update(zip(normal, sent, strict=True))
        return [outcomes[i] for i in range(len(requests))]

    async def _submit_normal(self, requests: Sequence[SubmitRequest]) -> list[SubmitOutcome]:
        if not requests:
            return []
        # One header, IYS class and encoding per NetGSM request; over max_batch is split.
        return await send_in_groups(
            requests,
            refusal=self._refusal,
            key=lambda r: (self._sender(r) or "", r.iys_mode, _needs_turkish(r)),
            size=self.max_batch,
            send=self._send_chunk,
        )

    def _sender(self, request: SubmitRequest) -> str | None:
        return request.sender or self.connection.default_sender

    def _refusal(self, request: SubmitRequest) -> SubmitOutcome | None:
        """Why NetGSM would refuse this message, decided before any call."""
        if national(request.to) is None or not request.to.startswith("+90"):
            return SubmitOutcome.recipient_failed(
                "INVALID_RECIPIENT", "NetGSM takes Turkish mobile numbers (+905…) only."
            )
        sender = self._sender(request)
        if sender is None:
            return SubmitOutcome.rejected("SENDER_REQUIRED", "NetGSM needs a message header.")
        problem = self.profile.sender_problem(sender)
        if problem is not None:
            return SubmitOutcome.rejected("SENDER_NOT_APPROVED", f"NetGSM: {problem}.")
        if not request.text:
            return SubmitOutcome.rejected("BODY_REJECTED", "NetGSM needs a text.")
        too_long = self.profile.length_problem(request.text, request.encoding)
        if too_long is not None:
            return SubmitOutcome.rejected("BODY_TOO_LONG", too_long)
        return None

    async def _send_chunk(
        self, key: tuple[str, IysMode, bool], chunk: Sequence[SubmitRequest]
    ) -> list[SubmitOutcome]:
        sender, iys_mode, turkish = key
        body: dict[str, object] = {
            "msgheader": sender,
            "messages": [{"msg": r.text, "no": national(r.to)} for r in chunk],
            "iysfilter": _IYS_FILTER[iys_mode],
        }
        if turkish:
            body["encoding"] = "TR"
        try:
            answer = await self._call("POST", "/sms/rest/v2/send", body)
        except httpx.HTTPError as exc:
            return [self.transport_outcome(exc)] * len(chunk)
        read = _send_result(answer, self)
        if isinstance(read, SubmitOutcome):
            if _answer_code_of(answer, self) in _NO_CULPRIT:
                # One text of the request is at fault and NetGSM does not say which; nothing
                # was sent, so routing asks again in smaller requests to find it.
                return read.refused_together(len(chunk))
            return [read] * len(chunk)
        return [SubmitOutcome.accepted(f"{read}:{r.to}") for r in chunk]

    async def _submit_otp(self, request: SubmitRequest) -> SubmitOutcome | None:
        """A code through the OTP route; ``None``: the normal route sends it (the text does
        not fit, the route rests, or NetGSM answered 60 or 80)."""
        now = self.clock.now()
        if self._otp_rests_until is not None and now < self._otp_rests_until:
            return None
        refused = self._refusal(request)
        if refused is not None:
            return refused
        text = otp.otp_text(request.text)
        if text is None:
            return None
        number, sender = national(request.to), self._sender(request)
        assert number is not None and sender is not None  # _refusal checked both
        body = otp.otp_body(
            self.credentials.usercode, self.secret(self.credentials.password), sender, text, number
        )
        try:
            answer = await self.exchange(
                "POST", otp.OTP_PATH, max_body=MAX_ANSWER_BYTES, content=body,
                headers={"Content-Type": "text/xml; charset=UTF-8"},
            )  # fmt: skip
        except httpx.HTTPError as exc:
            return self.transport_outcome(exc)
        return self._otp_outcome(answer, request)

    def _otp_outcome(self, answer: Answer, request: SubmitRequest) -> SubmitOutcome | None:
        read = otp.read_otp_answer(answer)
        if read is None:
            if answer.status == 429 or answer.status >= 500 or not answer.is_success:
                return SubmitOutcome.unavailable(
                    f"NetGSM's OTP route answered HTTP {answer.status}: {self.excerpt(answer)}",
                    retry_after=answer.retry_after,
                )
            return self.unreadable(answer, "not NetGSM's OTP answer")
        if read.accepted:
            return SubmitOutcome.accepted(f"{read.jobid}:{request.to}")
        rest = otp.FALL_BACK.get(read.code)
        if rest is not None:
            self._otp_rests_until = self.clock.now() + rest
            logger.warning(
                "NetGSM's OTP route answered code %s; codes go the normal way for %s",
                read.code, rest,
            )  # fmt: skip
            return None
        known = otp.REFUSALS.get(read.code)
        if known is None:
            if read.code == "0":  # accepted, but no job id to follow it by
                return self.unreadable(answer, "code 0 but no jobID")
            return SubmitOutcome.rejected(
                "PROVIDER_REJECTED", f"NetGSM's OTP route refused the code (code {read.code})."
            )
        kind, our_code, meaning = known
        message = f"NetGSM OTP code {read.code}: {meaning}."
        if kind == "unavailable":
            return SubmitOutcome.unavailable(message, code=our_code)
        if kind == "recipient_failed":
            return SubmitOutcome.recipient_failed(our_code, message)
        return SubmitOutcome.rejected(our_code, message)

    # --- reports -------------------------------------------------------------------------------

    async def poll_reports(self, provider_message_ids: Sequence[str]) -> list[ProviderReport]:
        """Ask for the jobs of these ids, many job ids a call, within 10 calls a minute.

        When the minute's budget is spent the rest waits for the next poll: this returns
        what it has, never sleeps, and never provokes NetGSM's code 80.
        """
        return await self._poll(provider_message_ids, self.report_budget)

    async def poll_reports_within(
        self, provider_message_ids: Sequence[str], calls: ReportCalls
    ) -> list[ProviderReport]:
        """:meth:`poll_reports` within a worker's round: each call takes one of ``calls``,
        the round's 10 (rounds are a minute apart in whichever process runs them)."""
        return await self._poll(provider_message_ids, calls)

    async def _poll(
        self, provider_message_ids: Sequence[str], calls: _Budget
    ) -> list[ProviderReport]:
        wanted = numbers_by_id(provider_message_ids)
        reports: list[ProviderReport] = []
        for jobids in _report_calls(wanted):
            if not await self._poll_jobs(jobids, wanted, reports, calls):
                break
        return reports

    async def _poll_jobs(
        self,
        jobids: list[str],
        wanted: Mapping[str, set[str]],
        out: list[ProviderReport],
        calls: _Budget,
    ) -> bool:
        """Page through one call's jobs until every number asked about has its row, or a
         page comes back short; ``False`` when the budget or NetGSM stopped us.

         A full page whose rows answer everything asked is the last one asked for: the next
         page would be empty (NetGSM's code 60), a call of the ten a minute spent on nothing
        ."""
        asked = {jobid: wanted[jobid] for jobid in jobids}
        missing = {f"{jobid}:{number}" for jobid, numbers in asked.items() for number in numbers}
        page = 0
        while True:
            if not calls.take():
                return False
            rows = await self._report_page(jobids, page, calls)
            if rows is None:
                return False
            found = [r for r in (_report_of(row, asked) for row in rows) if r is not None]
            out += found
            answered = [r.provider_message_id for r in found]
            missing.difference_update(answered)
            calls.cover(answered)
            if len(rows) < REPORT_PAGE_SIZE or not missing:
                calls.cover(f"{j}:{number}" for j, numbers in asked.items() for number in numbers)
                return True
            page += 1

    async def _report_page(
        self, jobids: list[str], page: int, calls: _Budget
    ) -> list[Mapping[str, object]] | None:
        stop = self.clock.now().astimezone(TURKEY)
        # Reports older than the DLR time-out are not waited for any more.
        start = stop - self.connection.dlr_timeout - timedelta(days=1)
        body: dict[str, object] = {
            "jobids": jobids,
            "startdate": start.strftime("%d.%m.%Y %H:%M:%S"),
            "stopdate": stop.strftime("%d.%m.%Y %H:%M:%S"),
            "pagenumber": page,
            "pagesize": REPORT_PAGE_SIZE,
        }
        try:
            answer = await self._call("POST", "/sms/rest/v2/report", body)
        except httpx.HTTPError as exc:
            logger.warning("NetGSM report poll failed: %s", self.cause(exc))
            return None
        data = json_answer(answer, self)
        if isinstance(data, SubmitOutcome):
            logger.warning("NetGSM report poll: %s", data.error.message if data.error else "")
            return None
        code = _answer_code(data)
        if code == "60":
            return []
        if code == "80":
            calls.stop()
        if code != "00":
            logger.warning("NetGSM report poll refused: code %s", code)
            return None
        jobs = data.get("jobs")
        return [row for row in jobs if isinstance(row, dict)] if isinstance(jobs, list) else []

    # --- credentials check ---------------------------------------------------------------------

    async def check(self) -> None:
        """List the account's headers; code 30 (or HTTP 401/403) means bad credentials."""
        app = self.credentials.appname
        try:
            answer = await self._call(
                "GET", "/sms/rest/v2/msgheader", params={"appname": app} if app else None
            )
        except httpx.HTTPError as exc:
            raise self.unreachable(exc, "to check credentials") from None
        if answer.truncated:
            raise self.unreachable(answer, "to check credentials")
        data = json_answer(answer, self)
        if answer.status in (401, 403) or (isinstance(data, dict) and _answer_code(data) == "30"):
            raise InvalidCredentials(
                "NetGSM refused the credentials: wrong usercode or password, no API access, "
                "or this IP is not allowed."
            )
        if isinstance(data, SubmitOutcome) or _answer_code(data) != "00":
            said = data.error.message if isinstance(data, SubmitOutcome) and data.error else ""
            raise ProviderUnavailable(
                "NetGSM gave no usable answer to the credentials check: "
                + (said or f"HTTP {answer.status}: {self.excerpt(answer)}")
            )

    # --- the account (messenger.accounts) ----------------------------------------------------

    async def read_account(self) -> AccountReading:
        """The credit (``POST /balance``, ``stip`` 2: ``{"code": "00", "balance": "57,860"}``,
        in lira) and the headers (``GET /sms/rest/v2/msgheader``: ``msgheaders``)."""
        body: dict[str, object] = {
            "usercode": self.credentials.usercode,
            "password": self.secret(self.credentials.password),
            "stip": 2,
        }
        try:
            answer = await self.exchange("POST", "/balance", max_body=MAX_ANSWER_BYTES, json=body)
        except httpx.HTTPError as exc:
            raise self.unreachable(exc, "to read the balance") from None
        data = self._account_answer(answer, "balance")
        balance = parse_amount(data.get("balance"))
        if balance is None:
            raise ProviderUnavailable("NetGSM answered the balance query without a balance.")
        app = self.credentials.appname
        try:
            answer = await self._call(
                "GET", "/sms/rest/v2/msgheader", params={"appname": app} if app else None
            )
        except httpx.HTTPError as exc:
            raise self.unreachable(exc, "to read the headers") from None
        headers = self._account_answer(answer, "header list").get("msgheaders")
        if not isinstance(headers, list):
            raise ProviderUnavailable("NetGSM answered the header query without msgheaders.")
        return AccountReading(balance, "TRY", clean_senders(headers))

    def _account_answer(self, answer: Answer, what: str) -> Mapping[str, object]:
        if answer.truncated:
            raise self.unreachable(answer, f"to read the {what}")
        data = json_answer(answer, self)
        if answer.status in (401, 403) or (isinstance(data, dict) and _answer_code(data) == "30"):
            raise InvalidCredentials(
                "NetGSM refused the credentials: wrong usercode or password, no API access, "
                "or this IP is not allowed."
            )
        if isinstance(data, SubmitOutcome) or _answer_code(data) != "00":
            raise ProviderUnavailable(
                f"NetGSM gave no usable {what} (HTTP {answer.status}): {self.excerpt(answer)}"
            )
        return data


def _report_calls(wanted: Mapping[str, set[str]]) -> list[list[str]]:
    """The job ids of each report call: as many jobs as one page of rows holds, counted by
    the numbers asked about (a job has at least those rows), and at most
    :data:`REPORT_JOBIDS_PER_CALL`; so a call asks about up to a page of messages, whether
    they are one job of 100 or 100 jobs of one."""
    groups: list[list[str]] = []
    current: list[str] = []
    rows = 0
    for jobid, numbers in wanted.items():
        full = rows + len(numbers) > REPORT_PAGE_SIZE or len(current) >= REPORT_JOBIDS_PER_CALL
        if current and full:
            groups.append(current)
            current, rows = [], 0
        current.append(jobid)
        rows += len(numbers)
    if current:
        groups.append(current)
    return groups


def _needs_turkish(request: SubmitRequest) -> bool:
    """``encoding: "TR"`` unless the text is plain GSM-7: ş ğ ı İ ç need NetGSM's TR mode."""
    encoding = request.encoding or analyze_sms(request.text).encoding
    return encoding != "gsm7"


def _answer_code_of(answer: Answer, adapter: NetgsmAdapter) -> str | None:
    """The ``code`` of a readable JSON answer, else ``None``."""
    data = json_answer(answer, adapter)
    return None if isinstance(data, SubmitOutcome) else _answer_code(data)


def _send_result(answer: Answer, adapter: NetgsmAdapter) -> str | SubmitOutcome:
    """The job id of a send answer, or the outcome of a refusal or an unreadable answer."""
    data = json_answer(answer, adapter)
    if isinstance(data, SubmitOutcome):
        return data
    code = _answer_code(data)
    jobid = data.get("jobid")
    if code == "00":
        if isinstance(jobid, str | int) and not isinstance(jobid, bool) and str(jobid).strip():
            return str(jobid).strip()
        return adapter.unreadable(answer, "code 00 but no job id")
    known = _SEND_CODES.get(code)
    if known is None:
        if answer.is_success:
            # A 2xx that names no documented code proves nothing was taken.
            return adapter.unreadable(answer, f"code {code or 'none'} is not one NetGSM documents")
        if answer.status in (401, 403):
            known = _SEND_CODES["30"]
        else:
            return SubmitOutcome.rejected(
                "PROVIDER_REJECTED",
                f"NetGSM refused the message (HTTP {answer.status}, code {code or 'none'}).",
            )
    kind, our_code, meaning = known
    message = f"NetGSM code {code}: {meaning}."
    if kind == "unavailable":
        wait = answer.retry_after
        if wait is None and code == "80":
            wait = THROTTLE_PAUSE  # D26: NetGSM names no wait; its limits count per minute
        return SubmitOutcome.unavailable(message, code=our_code, retry_after=wait)
    return SubmitOutcome.rejected(our_code, message)


def _report_of(row: Mapping[str, object], asked: Mapping[str, set[str]]) -> ProviderReport | None:
    """One row as the report of an id asked for in this call, else ``None``."""
    jobid, number, status = row.get("jobid"), row.get("number"), row.get("status")
    local = national(str(number)) if isinstance(number, str | int) else None
    if local is None or isinstance(status, bool):
        return None
    to = "+90" + local
    if to not in asked.get(str(jobid), ()):
        # NetGSM's schema calls the row's jobid an "SMS ID": should it ever differ from the
        # bulk id we asked by, the number still names the message when only one job has it.
        owners = [j for j, numbers in asked.items() if to in numbers]
        if len(owners) != 1:
            return None
        jobid = owners[0]
    try:
        code = int(str(status))
    except ValueError:
        return None
    ours, error_code, meaning = _REPORT_STATUS.get(code, ("unknown", None, "unknown status"))
    error = None
    if error_code is not None:
        detail = row.get("errorCode")
        suffix = f" (operator error {detail})" if isinstance(detail, str | int) and detail else ""
        error = ErrorInfo(error_code, f"NetGSM status {code}: {meaning}{suffix}.")
    return ProviderReport(
        provider_message_id=f"{jobid}:{to}",
        status=ours,
        provider_status=str(code),
        occurred_at=_report_time(row.get("deliveredDate")),
        error=error,
        to=to,
    )


def _report_time(value: object) -> datetime | None:
    """``deliveredDate`` in any of the forms NetGSM's documents show, local time."""
    for pattern in ("%d.%m.%Y %H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S"):
        try:
            return datetime.strptime(str(value).strip(), pattern).replace(tzinfo=TURKEY)
        except ValueError:
            continue
    return None


SPEC: Final = AdapterSpec("sms_a", Credentials, NetgsmAdapter)
