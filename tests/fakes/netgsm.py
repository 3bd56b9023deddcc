"""A local NetGSM REST v2 server speaking the wire format the ``sms_a`` adapter expects.

It checks Basic auth (code 30), the header list (40), the JSON shape (70), a text it will not
take (20, for the whole request: :attr:`NetgsmFake.refused_words`), answers 406 for
refusals and 200 ``{"code": "00", "jobid"}`` for acceptance, keeps one report row per
message (status 0 until a test sets another), and serves ``/sms/rest/v2/report`` with
paging and NetGSM's 10-calls-a-minute limit (code 80), and ``/sms/rest/v2/msgheader``.

``/sms/send/otp`` is NetGSM's OTP route (XML in and out, credentials in the body): it
refuses a text with Turkish letters or over one GSM-7 part (20), a bad number (50), an
account without the OTP package (60: :attr:`NetgsmFake.otp_package`) and more than 100
OTP messages a minute (80); an accepted one answers ``<code>0</code><jobID>`` and gets a
report row like any job.

Knobs script the next answers (:meth:`NetgsmFake.script`): a forced code, a delay, any status
with any body and content type (5xx, 429 with ``Retry-After``, malformed, HTML, huge).
Everything received is recorded in :attr:`NetgsmFake.received`.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
import xml.etree.ElementTree as ET
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

__all__ = ["Canned", "NetgsmFake", "Received", "ReportRow"]

_DATE = "%d.%m.%Y %H:%M:%S"


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    json: object | None


@dataclass
class Canned:
    """One scripted answer. ``code`` alone gives NetGSM's own 406 refusal with that code."""

    status: int = 406
    code: str | None = None
    body: bytes | None = None
    content_type: str = "application/json;charset=UTF-8"
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    #: Stream the body in 64 KiB chunks with no Content-Length (how a runaway answer looks).
    chunked: bool = False


@dataclass
class ReportRow:
    jobid: str
    number: str
    status: int = 0
    delivered_date: str | None = None
    error_code: int | None = None
    #: The ``jobid`` the row shows, if not the bulk id it is filed under.
    shown_jobid: str | None = None


class NetgsmFake:
    def __init__(
        self,
        *,
        usercode: str = "8503334455",
        password: str = "s3cret-pass",  # noqa: S107 - the fake's test account
        headers: tuple[str, ...] = ("ACME", "ACME BILGI"),
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.usercode = usercode
        self.password = password
        self.msgheaders = list(headers)
        #: The credit ``POST /balance`` answers (``stip`` 2), written as NetGSM writes it.
        self.credit = "57,860"
        #: Scripted answers are for sends and reports only, not the header list: a worker
        #: reads the account beside the sends (``messenger.accounts``), at a moment of its
        #: own, and must not take a send's scripted answer. A test of the account read
        #: itself turns this off.
        self.script_sends_only = True
        #: Words that make NetGSM refuse a text: code 20 ("a problem in the message text"),
        #: for the whole request it is in, naming no message.
        self.refused_words: set[str] = set()
        self.received: list[Received] = []
        self.rows: list[ReportRow] = []
        self._script: deque[Canned] = deque()
        self._next_job = 17_000_001
        self._monotonic = monotonic
        self._report_calls: deque[float] = deque()
        #: Whether the account has NetGSM's OTP package (else the OTP route answers 60).
        self.otp_package = True
        self._otp_sends: deque[float] = deque()
        self.app = Starlette(
            routes=[
                Route("/sms/send/otp", self._otp, methods=["POST"]),
                Route("/sms/rest/v2/send", self._send, methods=["POST"]),
                Route("/sms/rest/v2/report", self._report, methods=["POST"]),
                Route("/sms/rest/v2/msgheader", self._msgheader, methods=["GET"]),
                Route("/balance", self._balance, methods=["POST"]),
            ]
        )

    # --- knobs -----------------------------------------------------------------------------------

    def script(self, *answers: Canned) -> None:
        """Answer the next requests with these, in order, before behaving normally again."""
        self._script.extend(answers)

    def set_status(self, jobid: str, number: str, status: int, **extra: object) -> None:
        for row in self.rows:
            if row.jobid == jobid and row.number.endswith(number[-10:]):
                row.status = status
                row.delivered_date = extra.get("delivered_date", row.delivered_date)  # type: ignore[assignment]
                row.error_code = extra.get("error_code", row.error_code)  # type: ignore[assignment]

    @property
    def sends(self) -> list[Received]:
        return [r for r in self.received if r.path.endswith("/send")]

    @property
    def otp_sends(self) -> list[Received]:
        return [r for r in self.received if r.path.endswith("/otp")]

    @property
    def report_calls(self) -> list[Received]:
        return [r for r in self.received if r.path.endswith("/report")]

    # --- endpoints -------------------------------------------------------------------------------

    async def _record(self, request: Request) -> tuple[Received, Response | None]:
        raw = await request.body()
        try:
            parsed: object | None = json.loads(raw) if raw else None
        except ValueError:
            parsed = None
        received = Received(request.method, request.url.path, dict(request.headers), raw, parsed)
        self.received.append(received)
        if self._script:
            return received, await self._canned(self._script.popleft())
        if not self._authorized(request.headers.get("authorization", "")):
            return received, _refuse("30", "Invalid username, password or no API access")
        return received, None

    @staticmethod
    async def _canned(canned: Canned) -> Response:
        if canned.delay:
            await asyncio.sleep(canned.delay)
        if canned.body is None:
            body = json.dumps({"code": canned.code or "70", "jobid": None, "description": "x"})
            content = body.encode()
        else:
            content = canned.body
        if canned.chunked:
            chunks = (content[i : i + 65536] for i in range(0, len(content), 65536))
            return StreamingResponse(
                chunks, canned.status, headers=canned.headers, media_type=canned.content_type
            )
        return Response(
            content, canned.status, headers=canned.headers, media_type=canned.content_type
        )

    def _authorized(self, header: str) -> bool:
        expected = base64.b64encode(f"{self.usercode}:{self.password}".encode()).decode()
        return header == f"Basic {expected}"

    async def _send(self, request: Request) -> Response:
        received, early = await self._record(request)
        if early is not None:
            return early
        body = received.json
        if not isinstance(body, dict):
            return _refuse("70", "Invalid JSON")
        problem = _send_problem(body)
        if problem is not None:
            return _refuse(*problem)
        texts = [str(m["msg"]) for m in body["messages"]]  # type: ignore[attr-defined]
        if any(word in text for text in texts for word in self.refused_words):
            return _refuse("20", "Mesaj metninde ki problemden dolayı gönderilemedi")
        if body["msgheader"] not in self.msgheaders:
            return _refuse("40", "Check the msgheader parameter")
        jobid = str(self._next_job)
        self._next_job += 1
        for message in body["messages"]:
            self.rows.append(ReportRow(jobid, message["no"]))
        return JSONResponse({"code": "00", "jobid": jobid, "description": "queued"})

    async def _otp(self, request: Request) -> Response:
        raw = await request.body()
        self.received.append(
            Received(request.method, request.url.path, dict(request.headers), raw, None)
        )
        if self._script:
            return await self._canned(self._script.popleft())
        try:
            root = ET.fromstring(raw)  # noqa: S314 - our own test's XML
        except ET.ParseError:
            return _otp_answer("70", error="XML okunamadı")
        header, body = root.find("header"), root.find("body")
        if root.tag != "mainbody" or header is None or body is None:
            return _otp_answer("70", error="Input parametrelerini kontrol ediniz")
        usercode, password = header.findtext("usercode"), header.findtext("password")
        if (usercode, password) != (self.usercode, self.password):
            return _otp_answer("30", error="Kullanici bilgisi bulunamadi")
        if header.findtext("msgheader") not in self.msgheaders:
            return _otp_answer("40", error="Gönderici adınızı kontrol ediniz")
        msg, no = body.findtext("msg") or "", body.findtext("no") or ""
        if not (len(no) == 10 and no.isdigit() and no.startswith("5")):
            return _otp_answer("50", error="Gönderilen numarayı kontrol ediniz")
        if not msg or len(msg) > 160 or any(c not in _PLAIN_GSM for c in msg):
            return _otp_answer("20", error="Mesaj metni ya da mesaj boyunu kontrol ediniz")
        if not self.otp_package:
            return _otp_answer("60", error="Hesabınızda OTP SMS Paketi tanımlı değildir")
        now = self._monotonic()
        while self._otp_sends and now - self._otp_sends[0] >= 60:
            self._otp_sends.popleft()
        if len(self._otp_sends) >= 100:
            return _otp_answer("80", error="Sorgulama sınır aşımı")
        self._otp_sends.append(now)
        jobid = str(self._next_job)
        self._next_job += 1
        self.rows.append(ReportRow(jobid, no))
        return _otp_answer("0", jobid=jobid)

    async def _report(self, request: Request) -> Response:
        received, early = await self._record(request)
        if early is not None:
            return early
        now = self._monotonic()
        while self._report_calls and now - self._report_calls[0] >= 60:
            self._report_calls.popleft()
        if len(self._report_calls) >= 10:
            return _refuse("80", "Limit exceeded, can be queried 10 times per minute.")
        self._report_calls.append(now)
        body = received.json
        if not isinstance(body, dict) or not _report_request_ok(body):
            return _refuse("70", "Invalid query")
        jobids = set(body.get("jobids") or [])
        rows = [r for r in self.rows if not jobids or r.jobid in jobids]
        size, page = body.get("pagesize", 100), body.get("pagenumber", 0)
        rows = rows[page * size : (page + 1) * size]
        if not rows:
            return _refuse("60", "No records")
        jobs = [
            {
                "jobid": r.shown_jobid or r.jobid,
                "number": r.number,
                "status": r.status,
                "operator": 30,
                "msglen": 1,
                "deliveredDate": r.delivered_date,
                "errorCode": r.error_code,
                "referansID": None,
            }
            for r in rows
        ]
        return JSONResponse({"code": "00", "description": "Success", "jobs": jobs})

    async def _msgheader(self, request: Request) -> Response:
        if self.script_sends_only:
            self.received.append(Received(request.method, request.url.path,
                                          dict(request.headers), b"", None))  # fmt: skip
            if not self._authorized(request.headers.get("authorization", "")):
                return _refuse("30", "Invalid username, password or no API access")
            return JSONResponse({"code": "00", "description": "ok", "msgheaders": self.msgheaders})
        _, early = await self._record(request)
        if early is not None:
            return early
        return JSONResponse({"code": "00", "description": "ok", "msgheaders": self.msgheaders})

    async def _balance(self, request: Request) -> Response:
        """``POST /balance``: credentials in the JSON body (no Basic auth), ``stip`` 2 the
        credit (a string with a decimal comma), 1 the packages; code 30 for bad ones."""
        raw = await request.body()
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        self.received.append(Received(request.method, request.url.path, dict(request.headers),
                                      raw, body))  # fmt: skip
        if not isinstance(body, dict):
            return _refuse("70", "Invalid request")
        if (body.get("usercode"), body.get("password")) != (self.usercode, self.password):
            return _refuse("30", "Invalid credentials")
        if body.get("stip") == 1:
            return JSONResponse(
                {"code": "00", "balance": [{"amount": 399, "balance_name": "SMS Count"}]}
            )
        return JSONResponse({"code": "00", "balance": self.credit})


#: What the OTP route takes: GSM-7 (its basic table and its extension), no Turkish letters.
_PLAIN_GSM = frozenset(
    "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?¡"
    "ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà^{}\\[~]|€"
) - frozenset("ÖÜöüÇ")


def _otp_answer(code: str, *, jobid: str | None = None, error: str | None = None) -> Response:
    """NetGSM's OTP answer: XML, HTTP 200 whatever the code (as its SDK's tests show)."""
    inner = f"<code>{code}</code>"
    if jobid is not None:
        inner += f"<jobID>{jobid}</jobID>"
    if error is not None:
        inner += f"<error>{error}</error>"
    body = f'<?xml version="1.0"?>\n<xml><main>{inner}</main></xml>'
    return Response(body.encode(), 200, media_type="text/xml")


def _refuse(code: str, description: str) -> Response:
    return JSONResponse({"code": code, "jobid": None, "description": description}, 406)


def _send_problem(body: dict[str, object]) -> tuple[str, str] | None:
    header, messages = body.get("msgheader"), body.get("messages")
    if not isinstance(header, str) or not header or len(header) > 11:
        return "70", "msgheader is missing or too long"
    if body.get("iysfilter", "0") not in ("0", "11", "12"):
        return "70", "iysfilter must be 0, 11 or 12"
    if body.get("encoding") not in (None, "TR"):
        return "70", "encoding must be TR"
    if not isinstance(messages, list) or not messages:
        return "70", "messages is missing"
    for message in messages:
        if not isinstance(message, dict) or set(message) != {"msg", "no"}:
            return "70", "each message is {msg, no}"
        no, msg = message["no"], message["msg"]
        if not (isinstance(no, str) and len(no) == 10 and no.isdigit()):
            return "70", "no must be 10 digits"
        if not isinstance(msg, str) or not msg:
            return "20", "message text is empty"
    return None


def _report_request_ok(body: dict[str, object]) -> bool:
    try:
        datetime.strptime(str(body["startdate"]), _DATE)
        datetime.strptime(str(body["stopdate"]), _DATE)
    except (KeyError, ValueError):
        return False
    size, page = body.get("pagesize", 100), body.get("pagenumber", 0)
    jobids = body.get("jobids", [])
    return (
        isinstance(size, int)
        and 1 <= size <= 100
        and isinstance(page, int)
        and page >= 0
        and isinstance(jobids, list)
    )
