"""``sms_a``: the NetGSM REST v2 adapter (send, report polling, credentials check).

Owns NetGSM's wire format and the mapping of its answers to the four outcomes. Wire facts,
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
- ``GET /sms/rest/v2/msgheader`` lists the account's headers: the credentials check.

Message ids: NetGSM gives one ``jobid`` per request and reports rows by ``jobid`` and number,
so each recipient's ``provider_message_id`` is ``"{jobid}:{E.164 number}"``. A batch is split
so no request carries the same number twice, which keeps that id unique.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import ClassVar, Final

import httpx
from pydantic import Field, SecretStr
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from .._clock import Clock, SystemClock
from .._domain import Connection, ErrorInfo
from .._encoding import analyze_sms
from .._errors import InvalidCredentials, ProviderUnavailable
from .._types import IysMode, ProviderCode
from ._http import (
    DEFAULT_TIMEOUT,
    AdapterSpec,
    CredentialsModel,
    HttpAdapter,
    NotSent,
    parse_retry_after,
)
from .base import ProviderReport, ReportStatus, SubmitOutcome, SubmitRequest

__all__ = ["SPEC", "Credentials", "NetgsmAdapter"]

logger = logging.getLogger("unified_messaging.providers.netgsm")

#: No NetGSM answer is anywhere near this; a bigger one is a proxy page or worse.
MAX_ANSWER_BYTES: Final = 256 * 1024
#: Turkey has kept UTC+3 all year since 2016; NetGSM's dates are local.
TURKEY: Final = timezone(timedelta(hours=3), "TRT")
REPORT_CALLS_PER_MINUTE: Final = 10
REPORT_PAGE_SIZE: Final = 100
#: Job ids per report call: our cap (NetGSM documents none), so one call stays small.
REPORT_JOBIDS_PER_CALL: Final = 100

_TOO_LARGE: Final = SubmitOutcome.unavailable("NetGSM's answer is too large to be read.")
_IYS_FILTER: Final[Mapping[IysMode, str]] = {
    "informational": "0",
    "commercial_individual": "11",
    "commercial_merchant": "12",
}
# code -> (outcome kind, our code, what it means); 80/85 are throttling, so "unavailable".
_SEND_CODES: Final[Mapping[str, tuple[str, str, str]]] = {
    "20": ("rejected", "BODY_REJECTED", "the text has a problem or is over the maximum length"),
    "30": ("rejected", "PROVIDER_AUTH_FAILED",
           "wrong usercode or password, no API access, or the IP is not allowed"),
    "40": ("rejected", "SENDER_NOT_APPROVED", "the message header is not registered"),
    "50": ("rejected", "IYS_NOT_CONFIGURED", "the account cannot send IYS-checked messages"),
    "51": ("rejected", "IYS_NOT_CONFIGURED", "no IYS brand is registered for the account"),
    "70": ("rejected", "PROVIDER_REJECTED", "a parameter is wrong or missing"),
    "80": ("unavailable", "PROVIDER_UNAVAILABLE", "the sending rate limit is exceeded"),
    "85": ("unavailable", "PROVIDER_UNAVAILABLE",
           "more than 20 jobs for one number within a minute"),
    "100": ("unavailable", "PROVIDER_UNAVAILABLE", "system error"),
    "101": ("unavailable", "PROVIDER_UNAVAILABLE", "system error"),
}  # fmt: skip
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


class _AnswerTooLarge(Exception):
    """The answer was cut off at :data:`MAX_ANSWER_BYTES`."""


@dataclass(frozen=True, slots=True)
class _Answer:
    status: int
    content_type: str
    retry_after: float | None
    body: bytes


class _ReportBudget:
    """At most ``limit`` report calls in any minute, shared by every poll of this adapter."""

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

    def exhaust(self) -> None:
        # NetGSM says we are over (another process shares the account): wait a full minute.
        self._calls = deque([self._clock.now()] * self._limit)


def _national(number: str) -> str | None:
    """``5XXXXXXXXX`` from any Turkish mobile form (``+905…``, ``905…``, ``05…``), else None."""
    digits = "".join(c for c in str(number) if c.isdigit())
    for prefix in ("90", "0"):
        if len(digits) == 10 + len(prefix) and digits.startswith(prefix):
            digits = digits[len(prefix) :]
    return digits if len(digits) == 10 and digits.startswith("5") else None


_Indexed = tuple[int, SubmitRequest]


def _split_distinct(items: Sequence[_Indexed], size: int) -> list[list[_Indexed]]:
    """Chunks of at most ``size`` in which no number appears twice (ids stay unique)."""
    chunks: list[tuple[list[_Indexed], set[str]]] = []
    for item in items:
        to = item[1].to
        for chunk, numbers in chunks:
            if len(chunk) < size and to not in numbers:
                chunk.append(item)
                numbers.add(to)
                break
        else:
            chunks.append(([item], {to}))
    return [chunk for chunk, _ in chunks]


def _decode(answer: _Answer) -> dict[str, object] | SubmitOutcome:
    """The JSON object of an answer, or the ``unavailable`` outcome of an unreadable one."""
    if answer.status == 429:
        return SubmitOutcome.unavailable(
            "NetGSM is throttling requests (HTTP 429).", retry_after=answer.retry_after
        )
    if answer.status >= 500:
        return SubmitOutcome.unavailable(f"NetGSM answered HTTP {answer.status}.")
    kind = answer.content_type.split(";")[0].strip().lower()
    if kind and "json" not in kind and kind != "text/plain":
        return SubmitOutcome.unavailable(
            f"NetGSM answered HTTP {answer.status} with {kind}, not JSON."
        )
    try:
        data = json.loads(answer.body)
    except (ValueError, RecursionError):
        return SubmitOutcome.unavailable(f"NetGSM's answer (HTTP {answer.status}) is not JSON.")
    if not isinstance(data, dict):
        return SubmitOutcome.unavailable("NetGSM's answer is not a JSON object.")
    return data


def _answer_code(data: Mapping[str, object]) -> str:
    code = data.get("code")
    if isinstance(code, bool) or not isinstance(code, str | int):
        return ""
    text = str(code).strip()
    return text.zfill(2) if text.isdigit() else text


class NetgsmAdapter(HttpAdapter[Credentials]):
    """Live adapter of an ``sms_a`` connection (NetGSM REST v2)."""

    code_: ClassVar[ProviderCode] = "sms_a"
    credentials_model: ClassVar[type[CredentialsModel]] = Credentials
    default_base_url: ClassVar[str] = "https://api.netgsm.com.tr"

    def __init__(
        self,
        connection: Connection,
        credentials: Mapping[str, str],
        *,
        client: httpx.AsyncClient | None = None,
        timeout: httpx.Timeout = DEFAULT_TIMEOUT,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        connect_retries: int = 2,
        clock: Clock | None = None,
    ) -> None:
        super().__init__(
            connection,
            credentials,
            client=client,
            timeout=timeout,
            sleep=sleep,
            connect_retries=connect_retries,
        )
        self._clock = clock or SystemClock()
        self.report_budget = _ReportBudget(self._clock)

    # --- HTTP ----------------------------------------------------------------------------------

    def _headers(self) -> dict[str, str]:
        pair = f"{self.credentials.usercode}:{self.secret(self.credentials.password)}"
        return {"Authorization": "Basic " + base64.b64encode(pair.encode()).decode("ascii")}

    async def exchange(
        self,
        method: str,
        path: str,
        body: object | None = None,
        params: Mapping[str, str] | None = None,
    ) -> _Answer:
        """One call: connect retries only (like ``request()``), answer read up to the cap.

        Raises ``httpx.HTTPError`` (transport) or :class:`_AnswerTooLarge`.
        """
        if isinstance(body, dict) and self.credentials.appname:
            body["appname"] = self.credentials.appname  # NetGSM's optional usage tag
        request = self.client.build_request(
            method, self.base_url + path, json=body, params=params, headers=self._headers()
        )
        retrying = AsyncRetrying(
            retry=retry_if_exception_type(NotSent),
            stop=stop_after_attempt(self._connect_retries + 1),
            wait=wait_exponential(multiplier=0.2, max=2.0),
            sleep=self._sleep,
            reraise=True,
        )
        response: httpx.Response | None = None
        async for attempt in retrying:
            with attempt:
                response = await self.client.send(request, stream=True)
        assert response is not None
        try:
            length = response.headers.get("Content-Length", "")
            if length.isdigit() and int(length) > MAX_ANSWER_BYTES:
                raise _AnswerTooLarge
            content = bytearray()
            async for chunk in response.aiter_bytes():
                content += chunk
                if len(content) > MAX_ANSWER_BYTES:
                    raise _AnswerTooLarge
        finally:
            await response.aclose()
        return _Answer(
            response.status_code,
            response.headers.get("Content-Type", ""),
            parse_retry_after(response.headers.get("Retry-After")),
            bytes(content),
        )

    # --- submit --------------------------------------------------------------------------------

    async def submit(self, request: SubmitRequest) -> SubmitOutcome:
        return (await self.submit_batch([request]))[0]

    async def submit_batch(self, requests: Sequence[SubmitRequest]) -> list[SubmitOutcome]:
        outcomes: dict[int, SubmitOutcome] = {}
        groups: dict[tuple[str, IysMode, bool], list[_Indexed]] = {}
        for index, request in enumerate(requests):
            refusal = self._refusal(request)
            if refusal is not None:
                outcomes[index] = refusal
                continue
            key = (self._sender(request) or "", request.iys_mode, _needs_turkish(request))
            groups.setdefault(key, []).append((index, request))
        # One header, IYS class and encoding per NetGSM request; over max_batch is split.
        for (sender, iys_mode, turkish), members in groups.items():
            for chunk in _split_distinct(members, self.max_batch):
                answers = await self._send_chunk(sender, iys_mode, turkish, [r for _, r in chunk])
                for (index, _), outcome in zip(chunk, answers, strict=True):
                    outcomes[index] = outcome
        return [outcomes[i] for i in range(len(requests))]

    def _sender(self, request: SubmitRequest) -> str | None:
        return request.sender or self.connection.default_sender

    def _refusal(self, request: SubmitRequest) -> SubmitOutcome | None:
        """Why NetGSM would refuse this message, decided before any call."""
        if _national(request.to) is None or not request.to.startswith("+90"):
            return SubmitOutcome.recipient_failed(
                "INVALID_RECIPIENT", "NetGSM takes Turkish mobile numbers (+905…) only."
            )
        sender = self._sender(request)
        if sender is None:
            return SubmitOutcome.rejected("SENDER_REQUIRED", "NetGSM needs a message header.")
        problem = self.profile.sender_problem(sender)
        if problem is not None:
            return SubmitOutcome.rejected("SENDER_NOT_APPROVED", f"NetGSM: {problem}.")
        if not request.text or len(request.text) > self.profile.max_text_length:
            return SubmitOutcome.rejected(
                "BODY_TOO_LONG" if request.text else "BODY_REJECTED",
                f"NetGSM takes 1-{self.profile.max_text_length} characters of text.",
            )
        return None

    async def _send_chunk(
        self, sender: str, iys_mode: IysMode, turkish: bool, chunk: Sequence[SubmitRequest]
    ) -> list[SubmitOutcome]:
        body: dict[str, object] = {
            "msgheader": sender,
            "messages": [{"msg": r.text, "no": _national(r.to)} for r in chunk],
            "iysfilter": _IYS_FILTER[iys_mode],
        }
        if turkish:
            body["encoding"] = "TR"
        try:
            answer = await self.exchange("POST", "/sms/rest/v2/send", body)
        except _AnswerTooLarge:
            return [_TOO_LARGE] * len(chunk)
        except httpx.HTTPError as exc:
            return [self.transport_outcome(exc)] * len(chunk)
        read = _send_result(answer)
        if isinstance(read, SubmitOutcome):
            return [read] * len(chunk)
        return [SubmitOutcome.accepted(f"{read}:{r.to}") for r in chunk]

    # --- reports -------------------------------------------------------------------------------

    async def poll_reports(self, provider_message_ids: Sequence[str]) -> list[ProviderReport]:
        """Ask for the jobs of these ids, many job ids a call, within 10 calls a minute.

        When the minute's budget is spent the rest waits for the next poll: this returns
        what it has, never sleeps, and never provokes NetGSM's code 80.
        """
        wanted: dict[str, set[str]] = {}
        for message_id in provider_message_ids:
            jobid, _, to = message_id.partition(":")
            if jobid and to:
                wanted.setdefault(jobid, set()).add(to)
        reports: list[ProviderReport] = []
        jobids = list(wanted)
        step = REPORT_JOBIDS_PER_CALL
        for start in range(0, len(jobids), step):
            if not await self._poll_jobs(jobids[start : start + step], wanted, reports):
                break
        return reports

    async def _poll_jobs(
        self, jobids: list[str], wanted: Mapping[str, set[str]], out: list[ProviderReport]
    ) -> bool:
        """Page through one call's jobs; ``False`` when the budget or NetGSM stopped us."""
        page = 0
        while True:
            if not self.report_budget.take():
                return False
            rows = await self._report_page(jobids, page)
            if rows is None:
                return False
            for row in rows:
                report = _report_of(row, {j: wanted[j] for j in jobids})
                if report is not None:
                    out.append(report)
            if len(rows) < REPORT_PAGE_SIZE:
                return True
            page += 1

    async def _report_page(self, jobids: list[str], page: int) -> list[Mapping[str, object]] | None:
        stop = self._clock.now().astimezone(TURKEY)
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
            answer = await self.exchange("POST", "/sms/rest/v2/report", body)
        except (httpx.HTTPError, _AnswerTooLarge) as exc:
            logger.warning("NetGSM report poll failed: %s", type(exc).__name__)
            return None
        data = _decode(answer)
        if isinstance(data, SubmitOutcome):
            logger.warning("NetGSM report poll: %s", data.error.message if data.error else "")
            return None
        code = _answer_code(data)
        if code == "60":
            return []
        if code == "80":
            self.report_budget.exhaust()
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
            answer = await self.exchange(
                "GET", "/sms/rest/v2/msgheader", params={"appname": app} if app else None
            )
        except (httpx.HTTPError, _AnswerTooLarge) as exc:
            raise ProviderUnavailable("NetGSM could not be reached to check credentials.") from exc
        data = _decode(answer)
        if answer.status in (401, 403) or (isinstance(data, dict) and _answer_code(data) == "30"):
            raise InvalidCredentials(
                "NetGSM refused the credentials: wrong usercode or password, no API access, "
                "or this IP is not allowed."
            )
        if isinstance(data, SubmitOutcome) or _answer_code(data) != "00":
            raise ProviderUnavailable("NetGSM gave no usable answer to the credentials check.")


def _needs_turkish(request: SubmitRequest) -> bool:
    """``encoding: "TR"`` unless the text is plain GSM-7: ş ğ ı İ ç need NetGSM's TR mode."""
    encoding = request.encoding or analyze_sms(request.text).encoding
    return encoding != "gsm7"


def _send_result(answer: _Answer) -> str | SubmitOutcome:
    """The job id of a send answer, or the outcome of a refusal or an unreadable answer."""
    data = _decode(answer)
    if isinstance(data, SubmitOutcome):
        return data
    code = _answer_code(data)
    jobid = data.get("jobid")
    if code == "00":
        if isinstance(jobid, str | int) and not isinstance(jobid, bool) and str(jobid).strip():
            return str(jobid).strip()
        return SubmitOutcome.unavailable("NetGSM said 00 but gave no job id.")
    known = _SEND_CODES.get(code)
    if known is None:
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
        return SubmitOutcome.unavailable(message, retry_after=answer.retry_after)
    return SubmitOutcome.rejected(our_code, message)


def _report_of(row: Mapping[str, object], asked: Mapping[str, set[str]]) -> ProviderReport | None:
    """One row as the report of an id asked for in this call, else ``None``."""
    jobid, number, status = row.get("jobid"), row.get("number"), row.get("status")
    local = _national(str(number)) if isinstance(number, str | int) else None
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
