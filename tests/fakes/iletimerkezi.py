"""A local İletimerkezi JSON v1 server speaking the wire format the ``sms_b`` adapter expects.

It checks ``request.authentication`` (401), the order the way İletimerkezi documents it (400
unparsable, 402 credit, 450/459/460 header, 451 same text to the same numbers within ten
minutes, 452 bad or blocked number, 453 over 7 SMS once its `` B186`` is appended, 454 empty
text, 468/469 IYS fields; each for the whole order, naming no message), answers with the HTTP
status equal to ``response.status.code``, keeps one report row per number (110 until a test
sets another), and serves ``/v1/get-report/json`` (paged, 455 for an unknown order) and
``/v1/get-balance/json``. :meth:`IletimerkeziFake.webhook` builds the push
İletimerkezi would send.

Knobs script the next answers (:meth:`IletimerkeziFake.script`): a forced code, a delay, any
status with any body and content type (5xx, 429 with ``Retry-After``, malformed, HTML,
huge). Everything received is recorded in :attr:`IletimerkeziFake.received`.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from unified_messaging._encoding import analyze_sms
from unified_messaging.providers.base import InboundCallback

__all__ = ["OPERATOR_CODE", "Canned", "IletimerkeziFake", "Received", "ReportRow"]

#: The BTK operator code İletimerkezi appends to every SMS (its API overview), so a text
#: that fits 7 SMS on its own may not once it is there (453, for the whole order).
OPERATOR_CODE = " B186"

_MESSAGES = {
    200: "İşlem başarılı",
    400: "İstek çözümlenemedi",
    401: "Üyelik bilgileri hatalı",
    402: "Bakiye yetersiz",
    450: "Gönderilen başlık kullanıma uygun değil",
    451: "Tekrar eden sipariş",
    452: "Mesaj alıcıları hatalı",
    453: "Sipariş boyutu aşıldı",
    454: "Mesaj metni boş",
    455: "Sipariş bulunamadı",
    459: "Mesaj başlığı boş olamaz",
    460: "Başlık 11 karakteri geçmemeli ve Türkçe karakter içermemelidir",
    468: "İYS üzerinden sorgulanıp sorgulanmayacağını belirtmelisiniz",
    469: "İYS listesi seçmelisiniz: BIREYSEL veya TACIR",
}


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    json: object | None


@dataclass
class Canned:
    """One scripted answer. ``code`` alone gives İletimerkezi's own refusal with that code."""

    code: int | None = None
    status: int | None = None
    body: bytes | None = None
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    #: Stream the body in 64 KiB chunks with no Content-Length (how a runaway answer looks).
    chunked: bool = False


@dataclass
class ReportRow:
    order_id: str
    number: str
    status: int = 110


class IletimerkeziFake:
    def __init__(
        self,
        *,
        key: str = "a1b2c3d4e5f6",
        hash_: str = "0f9e8d7c6b5a4f3e2d1c",
        senders: tuple[str, ...] = ("ACME", "ACMEBILGI"),
    ) -> None:
        self.key, self.hash = key, hash_
        self.senders = list(senders)
        self.blocked: set[str] = set()
        self.credit = True
        #: ``get-balance``'s ``balance``: lira (``amount``) and SMS credits (``sms``).
        self.balance = {"amount": "0", "sms": "18343"}
        self.received: list[Received] = []
        self.rows: list[ReportRow] = []
        self.order_status: dict[str, int] = {}
        self._sent: set[tuple[str, tuple[str, ...]]] = set()
        self._script: deque[Canned] = deque()
        self._next_order = 40_000_001
        self.app = Starlette(
            routes=[
                Route("/v1/send-sms/json", self._send, methods=["POST"]),
                Route("/v1/get-report/json", self._report, methods=["POST"]),
                Route("/v1/get-balance/json", self._balance, methods=["POST"]),
                Route("/v1/get-sender/json", self._senders, methods=["POST"]),
            ]
        )

    # --- knobs -----------------------------------------------------------------------------------

    def script(self, *answers: Canned) -> None:
        """Answer the next requests with these, in order, before behaving normally again."""
        self._script.extend(answers)

    def set_status(self, order_id: str, number: str, status: int) -> None:
        for row in self.rows:
            if row.order_id == order_id and row.number[-10:] == number[-10:]:
                row.status = status

    def webhook(self, order_id: str, number: str, status: str, text: str = "") -> InboundCallback:
        """The request İletimerkezi POSTs to the panel's webhook URL for one message."""
        body = {
            "report": {
                "id": 1_599_558_518,
                "packet_id": int(order_id),
                "status": status,
                "to": "+90" + number[-10:],
                "body": text,
            }
        }
        headers = {"content-type": "application/json"}
        return InboundCallback("POST", headers, {}, json.dumps(body).encode())

    @property
    def orders(self) -> list[Received]:
        return [r for r in self.received if r.path == "/v1/send-sms/json"]

    # --- endpoints -------------------------------------------------------------------------------

    async def _record(self, request: Request) -> tuple[dict[str, object] | None, Response | None]:
        raw = await request.body()
        try:
            parsed = json.loads(raw)
        except ValueError:
            parsed = None
        self.received.append(Received(request.url.path, dict(request.headers), raw, parsed))
        if self._script:
            return None, await _canned(self._script.popleft())
        inner = parsed.get("request") if isinstance(parsed, dict) else None
        if not isinstance(inner, dict):
            return None, _status(400)
        auth = inner.get("authentication")
        if not isinstance(auth, dict) or (auth.get("key"), auth.get("hash")) != (
            self.key,
            self.hash,
        ):
            return None, _status(401)
        return inner, None

    async def _send(self, request: Request) -> Response:
        inner, early = await self._record(request)
        if early is not None or inner is None:
            return early or _status(400)
        order = inner.get("order")
        if not isinstance(order, dict):
            return _status(400)
        refusal = self._order_problem(order)
        if refusal is not None:
            return _status(refusal)
        order_id = str(self._next_order)
        self._next_order += 1
        self.order_status[order_id] = 113
        for message in _messages(order):
            for number in message["receipents"]["number"]:
                self.rows.append(ReportRow(order_id, number))
        return _status(200, order={"id": order_id})

    def _order_problem(self, order: dict[str, object]) -> int | None:
        sender = order.get("sender")
        if not sender:
            return 459
        if not isinstance(sender, str) or len(sender) > 11 or not sender.isascii():
            return 460
        if sender not in self.senders:
            return 450
        if order.get("iys") not in ("0", "1"):
            return 468
        if order.get("iys") == "1" and order.get("iysList") not in ("BIREYSEL", "TACIR"):
            return 469
        messages = _messages(order)
        if not messages:
            return 400
        for message in messages:
            text, numbers = message.get("text"), message["receipents"].get("number")
            if not isinstance(text, str) or not text:
                return 454
            if analyze_sms(text + OPERATOR_CODE).segments > 7:
                return 453
            if not isinstance(numbers, list) or not numbers:
                return 452
            if any(not _valid(n) or str(n)[-10:] in self.blocked for n in numbers):
                return 452
        if not self.credit:
            return 402
        key: list[tuple[str, tuple[str, ...]]] = [
            (m["text"], tuple(m["receipents"]["number"])) for m in messages
        ]
        if any(k in self._sent for k in key):
            return 451
        self._sent.update(key)
        return None

    async def _report(self, request: Request) -> Response:
        inner, early = await self._record(request)
        if early is not None or inner is None:
            return early or _status(400)
        order = inner.get("order")
        order_id = str(order.get("id")) if isinstance(order, dict) else ""
        if order_id not in self.order_status:
            return _status(455)
        assert isinstance(order, dict)
        page, rows = int(order.get("page", 1)), int(order.get("rowCount", 1000))
        mine = [r for r in self.rows if r.order_id == order_id]
        chosen = mine[(page - 1) * rows : page * rows]
        messages = [{"number": int(r.number[-10:]), "status": r.status} for r in chosen]
        status = self.order_status[order_id]
        return _status(200, order={"id": int(order_id), "status": status, "message": messages})

    async def _balance(self, request: Request) -> Response:
        _, early = await self._record(request)
        return early or _status(200, balance=self.balance)

    async def _senders(self, request: Request) -> Response:
        """``get-sender``: ``senders.sender``, the approved headers (docs/sms/sender)."""
        _, early = await self._record(request)
        return early or _status(200, senders={"sender": list(self.senders)})


def _messages(order: dict[str, object]) -> list[dict[str, Any]]:
    raw = order.get("message")
    items = raw if isinstance(raw, list) else [raw]
    return [m for m in items if isinstance(m, dict) and isinstance(m.get("receipents"), dict)]


def _valid(number: object) -> bool:
    digits = str(number).lstrip("+")
    if digits.startswith("90"):
        digits = digits[2:]
    return len(digits) == 10 and digits.isdigit() and digits.startswith("5")


def _status(code: int, **payload: object) -> Response:
    body = {"response": {"status": {"code": code, "message": _MESSAGES.get(code, "")}, **payload}}
    return JSONResponse(body, code)


async def _canned(canned: Canned) -> Response:
    if canned.delay:
        await asyncio.sleep(canned.delay)
    if canned.body is None:
        code = canned.code or 400
        body = {"response": {"status": {"code": code, "message": _MESSAGES.get(code, "")}}}
        content = json.dumps(body).encode()
    else:
        content = canned.body
    status = canned.status or canned.code or 200
    if canned.chunked:
        chunks = (content[i : i + 65536] for i in range(0, len(content), 65536))
        return StreamingResponse(
            chunks, status, headers=canned.headers, media_type=canned.content_type
        )
    return Response(content, status, headers=canned.headers, media_type=canned.content_type)
