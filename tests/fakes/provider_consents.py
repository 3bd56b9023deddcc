"""Local consent APIs of two SMS providers, for İYS through a provider (docs/iys.md cites
each fact):

- İletimerkezi: ``POST /v1/consent/create/json`` ``{"request": {"authentication": {"key",
  "hash"}, "consent": {"brandCode", "list": [{recipient, recipientType, type, status, source,
  consentDate}]}}}``: 1 to 5,000 consents, taken all or none; and ``POST
  /v1/consent/show/json`` ``{"request": {"authentication", "consent": {"brandCode",
  "recipient", "recipientType", "type"}}}`` → ``response.consent``, 422 when the recipient has
  no record. Answers ``{"response": {"status": {"code", "message"}}}``, the HTTP status equal
  to ``code``; 401 for a wrong key or hash. A second ONAY after an ONAY (İYS's own rule) is
  refused with İYS's H-code in the message.
- Verimor: ``POST /v2/iys_consents.json`` ``{"username", "password", "source_addr",
  "consents": [{type, source, status, recipient_type, consent_date, recipient}]}`` → 200
  and the consent campaign's id as plain text; 401 for a wrong user or password; 400 and a
  line of text for a bad number (``905…`` expected).

Knobs: :attr:`fail_next` (the next requests answer these HTTP statuses, e.g. 503 or 429),
:attr:`hold` (an ``asyncio.Event`` a create waits for after it took the consents, before it
answers). Everything received is kept in :attr:`received`.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

__all__ = ["IletimerkeziConsentsFake", "VerimorConsentsFake"]

_STATUSES = ("ONAY", "RET")
_TYPES = ("MESAJ", "ARAMA", "EPOSTA")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$")


@dataclass
class _Common:
    received: list[tuple[str, Any]] = field(default_factory=list)
    fail_next: list[int] = field(default_factory=list)
    hold: asyncio.Event | None = None
    #: (recipient, recipient type, type) → the record's status, source and date.
    records: dict[tuple[str, str, str], dict[str, str]] = field(default_factory=dict)

    def creates(self) -> list[Any]:
        return [body for path, body in self.received if "show" not in path]

    def consents_sent(self) -> list[dict[str, Any]]:
        raise NotImplementedError


@dataclass
class IletimerkeziConsentsFake(_Common):
    key: str = "im-key"
    hash: str = "im-hash"
    brand_code: int = 710272

    def app(self) -> Starlette:
        return Starlette(routes=[
            Route("/v1/consent/create/json", self._create, methods=["POST"]),
            Route("/v1/consent/show/json", self._show, methods=["POST"]),
        ])  # fmt: skip

    def consents_sent(self) -> list[dict[str, Any]]:
        return [c for body in self.creates() for c in body["request"]["consent"]["list"]]

    async def _open(self, request: Request) -> tuple[dict[str, Any] | None, Response | None]:
        try:
            body = json.loads(await request.body())
        except ValueError:
            return None, _answer(400, "Geçersiz istek")
        self.received.append((request.url.path, body))
        if self.fail_next:
            return None, _answer(self.fail_next.pop(0), "Geçici hata")
        inner = body.get("request") if isinstance(body, dict) else None
        auth = inner.get("authentication") if isinstance(inner, dict) else None
        if auth != {"key": self.key, "hash": self.hash}:
            return None, _answer(401, "Üyelik bilgileri hatalı")
        consent = inner.get("consent") if isinstance(inner, dict) else None
        if not isinstance(consent, dict) or consent.get("brandCode") != self.brand_code:
            return None, _answer(422, "Marka kodu hatalı")
        return consent, None

    async def _create(self, request: Request) -> Response:
        consent, refusal = await self._open(request)
        if consent is None:
            assert refusal is not None
            return refusal
        items = consent.get("list")
        if not isinstance(items, list) or not 1 <= len(items) <= 5000:
            return _answer(422, "1 ile 5000 arasında izin gönderilebilir")
        staged = dict(self.records)
        for item in items:  # all or none
            problem = _problem(item, staged)
            if problem is not None:
                return _answer(422, problem)
            key = (item["recipient"], item["recipientType"], item["type"])
            staged[key] = {"status": item["status"], "source": item.get("source", ""),
                           "consentDate": item.get("consentDate", "")}  # fmt: skip
        self.records = staged
        if self.hold is not None:
            await self.hold.wait()
        return _answer(200, "İşlem başarılı")

    async def _show(self, request: Request) -> Response:
        consent, refusal = await self._open(request)
        if consent is None:
            assert refusal is not None
            return refusal
        key = (consent.get("recipient"), consent.get("recipientType"), consent.get("type"))
        found = self.records.get(key)  # type: ignore[arg-type]
        if found is None:
            return _answer(422, "İzin bulunamadı")
        return _answer(200, "İşlem başarılı", consent={
            "recipient": key[0], "recipientType": key[1], "type": key[2], **found,
        })  # fmt: skip


@dataclass
class VerimorConsentsFake(_Common):
    username: str = "908501234567"
    password: str = "verimor-pass"
    campaigns: itertools.count[int] = field(default_factory=lambda: itertools.count(20212))
    #: Numbers answered 400 "Invalid phone number" (as Verimor does for one it rejects).
    refused_numbers: set[str] = field(default_factory=set)

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/v2/iys_consents.json", self._create, methods=["POST"])])

    def consents_sent(self) -> list[dict[str, Any]]:
        return [c for body in self.creates() for c in body["consents"]]

    async def _create(self, request: Request) -> Response:
        try:
            body = json.loads(await request.body())
        except ValueError:
            return PlainTextResponse("Invalid JSON", status_code=400)
        self.received.append((request.url.path, body))
        if self.fail_next:
            return PlainTextResponse("Service Unavailable", status_code=self.fail_next.pop(0))
        if (body.get("username"), body.get("password")) != (self.username, self.password):
            return PlainTextResponse("Unauthorized", status_code=401)
        consents = body.get("consents")
        if not isinstance(consents, list) or not consents:
            return PlainTextResponse("Missing consents", status_code=400)
        for item in consents:
            recipient = str(item.get("recipient", ""))
            bad = not re.fullmatch(r"90\d{10}", recipient) or recipient in self.refused_numbers
            if item.get("type") == "MESAJ" and bad:
                return PlainTextResponse(f"Invalid phone number: {recipient}", status_code=400)
            if item.get("status") not in _STATUSES or item.get("type") not in _TYPES:
                return PlainTextResponse("Invalid consent", status_code=400)
        if self.hold is not None:
            await self.hold.wait()
        return PlainTextResponse(str(next(self.campaigns)))


def _problem(item: object, records: dict[tuple[str, str, str], dict[str, str]]) -> str | None:
    """Why İYS (through İletimerkezi) refuses ``item``: its rules, its H-codes where its
    pages give one (H111 type, H114 recipient); else a message of the fake's."""
    if not isinstance(item, dict):
        return "Geçersiz izin"
    if item.get("type") not in _TYPES:
        return "H111: İzin tipi (type) bulunamadı."
    if not re.fullmatch(r"\+90\d{10}", str(item.get("recipient", ""))):
        return "H114: Alıcı (recipient) bulunamadı."
    if item.get("status") not in _STATUSES:
        return "Geçersiz izin durumu"
    date = item.get("consentDate")
    if date is not None and not _DATE.match(str(date)):
        return "Geçersiz izin tarihi"
    key = (item["recipient"], item.get("recipientType"), item["type"])
    held = records.get(key)  # type: ignore[arg-type]
    if held is None and item["status"] == "RET":
        return "İlk izin RET olamaz"
    if held is not None and held["status"] == item["status"]:
        return "HF01: Bu izin zaten kayıtlı."
    return None


def _answer(code: int, message: str, **payload: object) -> Response:
    body = {"response": {"status": {"code": code, "message": message}, **payload}}
    return JSONResponse(body, status_code=code)
