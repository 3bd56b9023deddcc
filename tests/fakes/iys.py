"""A local İYS for the İYS tests: the API of dev.iys.org.tr, as docs/iys.md cites it.

- ``POST /oauth2/token``: JSON ``{"username", "password", "grant_type": "password"}`` or
  ``{"refresh_token", "grant_type": "refresh_token"}`` → ``access_token``, ``refresh_token``,
  ``expires_in`` 7200, ``refresh_expires_in`` 14400, ``token_type``; wrong credentials 401.
  :meth:`FakeIys.expire_tokens` makes every access token issued so far answer 401.
- ``POST /sps/{iysCode}/brands/{brandCode}/consents``: one consent, checked by İYS's rules →
  ``{transactionId, creationDate}``, or 422 ``{"errors": [{location, code, message}]}``.
  The H-codes İYS's pages give are used for what they name (H111 type, H113 source, H114
  recipient, H155 a date before 2015-05-01); the pages give none for the other rules, so the
  fake answers those with codes of its own, marked ``HF…`` (never İYS's).
- ``POST …/consents/status``: the record, or 404 when there is none (our reading: the page
  shows no answer for a recipient without a record).
- ``POST …/consents/request`` → ``{requestId, subRequests}``; ``GET
  …/consents/request/{requestId}`` → each item ``enqueue`` for the first
  ``bulk_enqueue_polls`` asks, then ``success`` (with ``transactionId``) or ``failure``
  (with ``error``).
- ``GET …/consents/changes?source=HS|IYS&after=…`` → ``{after, list}``, ``page_size`` at a
  time, in the order İYS recorded them; :meth:`FakeIys.citizen_change` adds a change made by
  the citizen (``source=IYS``: a RET to 3338).

Knobs: :meth:`FakeIys.fail` (the next ``count`` requests to a path answer ``status``, e.g.
429 with ``Retry-After`` or 503), :attr:`FakeIys.hold_consents` (an ``asyncio.Event`` a
consent POST waits for after it is recorded, before it answers: a process killed while
waiting never hears that İYS took it), :attr:`FakeIys.consent_arrived` (set when one is).
It counts what it received: :attr:`FakeIys.consent_posts` per consent.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ._server import serve

__all__ = ["FakeIys", "serve"]

GMT3 = timezone(timedelta(hours=3))
TYPES = ("MESAJ", "ARAMA", "EPOSTA")
RECIPIENT_TYPES = ("BIREYSEL", "TACIR")
SOURCES = (
    "HS_FIZIKSEL_ORTAM", "HS_ISLAK_IMZA", "HS_WEB", "HS_CAGRI_MERKEZI", "HS_SOSYAL_MEDYA",
    "HS_EPOSTA", "HS_MESAJ", "HS_MOBIL", "HS_EORTAM", "HS_ETKINLIK", "HS_2015", "HS_ATM",
    "HS_KARAR",
)  # fmt: skip
FIRST_MOMENT = "2015-05-01 00:00:00"
_H155 = (
    "İzin tarihi (consentDate) için 2015-05-01 00:00:00 tarihinden önceki tarihler girilmemelidir."
)
#: The fake's own codes, for rules whose H-code İYS's pages do not give.
ALREADY = "HF01"  # ONAY after ONAY, RET after RET
FIRST_RET = "HF02"  # a first record cannot be RET
NOT_AFTER = "HF03"  # consentDate not after the record's


def _now_text() -> str:
    return datetime.now(GMT3).strftime("%Y-%m-%d %H:%M:%S")


@dataclass
class Change:
    transaction_id: str
    consent: dict[str, Any]
    creation_date: str
    source: str  # HS or IYS
    cursor: str = ""

    def listed(self) -> dict[str, Any]:
        return {**self.consent, "creationDate": self.creation_date,
                "transactionId": self.transaction_id}  # fmt: skip


@dataclass
class Fault:
    path: str
    status: int
    left: int
    retry_after: str | None


@dataclass
class FakeIys:
    iys_code: int = 710271
    brand_code: int = 710272
    username: str = "iys-api-user"
    password: str = 'İys p@ss "quoted"'
    expires_in: int = 7200
    page_size: int = 50
    bulk_enqueue_polls: int = 1
    #: ``(recipient, recipientType, type) → the record İYS holds``.
    records: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    changes: list[Change] = field(default_factory=list)
    token_requests: list[str] = field(default_factory=list)  # grant types, in order
    consent_posts: Counter[tuple[str, str, str, str, str | None]] = field(default_factory=Counter)
    status_lookups: int = 0
    bulk_requests: list[list[dict[str, Any]]] = field(default_factory=list)
    bulk_polls: int = 0
    requests: list[tuple[str, str]] = field(default_factory=list)
    #: Recipients İYS refuses, with the H-code and message it answers.
    refused: dict[str, tuple[str, str]] = field(default_factory=dict)
    hold_consents: asyncio.Event | None = None
    consent_arrived: asyncio.Event = field(default_factory=asyncio.Event)
    _access: dict[str, bool] = field(default_factory=dict)
    _refresh: set[str] = field(default_factory=set)
    _faults: list[Fault] = field(default_factory=list)
    _bulks: dict[str, dict[str, Any]] = field(default_factory=dict)
    _ids: itertools.count[int] = field(default_factory=itertools.count)

    # -- knobs --------------------------------------------------------------------------------

    def expire_tokens(self) -> None:
        """Every access token issued so far answers 401 from now on."""
        for token in self._access:
            self._access[token] = False

    def fail(
        self, path: str, status: int, *, count: int = 1, retry_after: str | None = None
    ) -> None:
        """The next ``count`` requests whose path ends with ``path`` answer ``status``."""
        self._faults.append(Fault(path, status, count, retry_after))

    def citizen_change(self, recipient: str, status: str = "RET", *, when: str | None = None,
                       recipient_type: str = "BIREYSEL", type_: str = "MESAJ") -> str:  # fmt: skip
        """A change the citizen made through İYS (the app, or an SMS to 3338)."""
        consent = {"recipient": recipient, "recipientType": recipient_type, "type": type_,
                   "status": status, "consentDate": when or _now_text(),
                   "source": "IYS_3338"}  # fmt: skip
        return self._record(consent, source="IYS")

    def hs_change(self, consent: dict[str, Any]) -> str:
        """A consent another system of the brand registered (listed with ``source=HS``)."""
        return self._record(dict(consent), source="HS")

    def posts_of(self, recipient: str) -> int:
        return sum(n for key, n in self.consent_posts.items() if key[0] == recipient)

    # -- the app -------------------------------------------------------------------------------

    def app(self) -> Starlette:
        brand = "/sps/{iys}/brands/{brand}"
        return Starlette(
            routes=[
                Route("/oauth2/token", self._token, methods=["POST"]),
                Route(f"{brand}/consents", self._add, methods=["POST"]),
                Route(f"{brand}/consents/status", self._status, methods=["POST"]),
                Route(f"{brand}/consents/request", self._add_many, methods=["POST"]),
                Route(f"{brand}/consents/request/{{request_id}}", self._results, methods=["GET"]),
                Route(f"{brand}/consents/changes", self._changes, methods=["GET"]),
            ]
        )

    async def _begin(self, request: Request, *, authorized: bool = True) -> Response | None:
        self.requests.append((request.method, request.url.path))
        for fault in self._faults:
            if fault.left > 0 and request.url.path.endswith(fault.path):
                fault.left -= 1
                headers = {"Retry-After": fault.retry_after} if fault.retry_after else {}
                return Response(f"fault {fault.status}", fault.status, headers=headers)
        if not authorized:
            return None
        header = request.headers.get("authorization", "")
        token = header.removeprefix("Bearer ")
        if not header.startswith("Bearer ") or not self._access.get(token):
            return JSONResponse({"error": "invalid_token"}, 401)
        iys, brand = request.path_params.get("iys"), request.path_params.get("brand")
        if (iys, brand) != (str(self.iys_code), str(self.brand_code)):
            return JSONResponse({"errors": [{"code": "H001", "message": "Marka bulunamadı."}]}, 403)
        return None

    async def _token(self, request: Request) -> Response:
        refused = await self._begin(request, authorized=False)
        if refused is not None:
            return refused
        body = json.loads(await request.body())
        grant = body.get("grant_type")
        self.token_requests.append(str(grant))
        if grant == "password":
            if (body.get("username"), body.get("password")) != (self.username, self.password):
                return JSONResponse({"error": "invalid_grant"}, 401)
        elif grant == "refresh_token":
            if body.get("refresh_token") not in self._refresh:
                return JSONResponse({"error": "invalid_grant"}, 401)
        else:
            return JSONResponse({"error": "unsupported_grant_type"}, 400)
        access, refresh = uuid.uuid4().hex, uuid.uuid4().hex
        self._access[access] = True
        self._refresh.add(refresh)
        return JSONResponse({"access_token": access, "refresh_token": refresh,
                             "expires_in": self.expires_in, "refresh_expires_in": 14400,
                             "token_type": "bearer"})  # fmt: skip

    async def _add(self, request: Request) -> Response:
        refused = await self._begin(request)
        if refused is not None:
            return refused
        consent = json.loads(await request.body())
        key = (consent.get("recipient"), consent.get("recipientType"), consent.get("type"),
               consent.get("status"), consent.get("consentDate"))  # fmt: skip
        self.consent_posts[key] += 1  # type: ignore[index]
        errors = self._check(consent)
        if errors:
            return JSONResponse({"errors": errors}, 422)
        transaction_id = self._record(consent, source="HS")
        self.consent_arrived.set()
        if self.hold_consents is not None:
            await self.hold_consents.wait()
        created = self.changes[-1].creation_date
        return JSONResponse({"transactionId": transaction_id, "creationDate": created})

    async def _status(self, request: Request) -> Response:
        refused = await self._begin(request)
        if refused is not None:
            return refused
        self.status_lookups += 1
        body = json.loads(await request.body())
        record = self.records.get(
            (body.get("recipient"), body.get("recipientType"), body.get("type"))
        )
        if record is None:
            return JSONResponse({"errors": [{"code": "HF04", "message": "İzin bulunamadı."}]}, 404)
        return JSONResponse(record)

    async def _add_many(self, request: Request) -> Response:
        refused = await self._begin(request)
        if refused is not None:
            return refused
        consents = json.loads(await request.body())
        self.bulk_requests.append(consents)
        request_id = str(uuid.uuid4())
        subs = []
        for consent in consents:
            key = (consent.get("recipient"), consent.get("recipientType"), consent.get("type"),
                   consent.get("status"), consent.get("consentDate"))  # fmt: skip
            self.consent_posts[key] += 1  # type: ignore[index]
            subs.append({"subrequestId": str(uuid.uuid4()), **consent})
        self._bulks[request_id] = {"consents": consents, "subs": subs, "polls": 0, "results": None}
        return JSONResponse({"requestId": request_id, "subRequests": subs})

    async def _results(self, request: Request) -> Response:
        refused = await self._begin(request)
        if refused is not None:
            return refused
        self.bulk_polls += 1
        bulk = self._bulks.get(request.path_params["request_id"])
        if bulk is None:
            return JSONResponse({"errors": [{"code": "HF05", "message": "İstek bulunamadı."}]}, 404)
        bulk["polls"] += 1
        if bulk["polls"] <= self.bulk_enqueue_polls:
            return JSONResponse([
                {"index": i + 1, "status": "enqueue", "subrequestId": sub["subrequestId"]}
                for i, sub in enumerate(bulk["subs"])
            ])  # fmt: skip
        self._process(bulk)
        return JSONResponse(bulk["results"])

    async def process_bulks(self) -> None:
        """İYS works through every bulk request it holds (else it does when first asked
        after ``bulk_enqueue_polls`` asks)."""
        for bulk in self._bulks.values():
            self._process(bulk)

    def _process(self, bulk: dict[str, Any]) -> None:
        if bulk["results"] is None:
            results = []
            for i, (consent, sub) in enumerate(zip(bulk["consents"], bulk["subs"], strict=True)):
                errors = self._check(consent)
                entry: dict[str, Any] = {"index": i + 1, "subrequestId": sub["subrequestId"]}
                if errors:
                    first = errors[0]
                    entry.update(
                        status="failure", error={"code": first["code"], "message": first["message"]}
                    )
                else:
                    transaction_id = self._record(consent, source="HS")
                    entry.update(status="success", transactionId=transaction_id,
                                 creationDate=self.changes[-1].creation_date)  # fmt: skip
                results.append(entry)
            bulk["results"] = results

    async def _changes(self, request: Request) -> Response:
        refused = await self._begin(request)
        if refused is not None:
            return refused
        source = request.query_params.get("source", "HS")
        after = request.query_params.get("after")
        listed = [c for c in self.changes if c.source == source]
        start = 0
        if after is not None:
            ids = [c.cursor for c in listed]
            start = ids.index(after) + 1 if after in ids else 0
        page = listed[start : start + self.page_size]
        cursor = page[-1].cursor if page else after
        return JSONResponse({"after": cursor, "list": [c.listed() for c in page]})

    # -- İYS's rules -----------------------------------------------------------------------

    def _check(self, consent: dict[str, Any]) -> list[dict[str, Any]]:
        errors = []
        if consent.get("type") not in TYPES:
            errors.append(_error("type", "H111", "İzin tipi (type) bulunamadı."))
        source = consent.get("source")
        tacir = consent.get("recipientType") == "TACIR"
        if not (source in SOURCES or (tacir and source is None)):
            errors.append(_error("source", "H113", "İzin kaynağı (source) bulunamadı."))
        recipient = consent.get("recipient")
        if not isinstance(recipient, str) or not (recipient.startswith("+90") or "@" in recipient):
            errors.append(_error("recipient", "H114", "Alıcı (recipient) bulunamadı."))
        elif recipient in self.refused:
            code, message = self.refused[recipient]
            errors.append(_error("recipient", code, message))
        date = consent.get("consentDate")
        if isinstance(date, str) and date < FIRST_MOMENT:
            errors.append(_error("consentDate", "H155", _H155))
        if errors:
            return errors
        record = self.records.get((recipient, consent["recipientType"], consent["type"]))
        status = consent.get("status")
        if record is None and status == "RET":
            return [_error("status", FIRST_RET, "İlk kayıt RET olamaz.")]
        if record is not None and record["status"] == status:
            return [_error("status", ALREADY, "Aynı durumda izin zaten kayıtlı.")]
        if (
            record is not None
            and isinstance(date, str)
            and date <= (record.get("consentDate") or "")
        ):
            return [_error("consentDate", NOT_AFTER, "consentDate mevcut izinden ileride olmalı.")]
        return []

    def _record(self, consent: dict[str, Any], *, source: str) -> str:
        transaction_id = uuid.uuid4().hex + uuid.uuid4().hex
        created = datetime.now(GMT3) + timedelta(milliseconds=next(self._ids))
        key = (consent["recipient"], consent.get("recipientType", "BIREYSEL"), consent["type"])
        self.records[key] = {**consent, "creationDate": created.strftime("%Y-%m-%d %H:%M:%S")}
        stamp = int(created.astimezone(UTC).timestamp() * 1000)
        self.changes.append(Change(transaction_id, dict(consent),
                                   created.strftime("%Y-%m-%d %H:%M:%S"), source,
                                   f"{stamp}_{transaction_id}"))  # fmt: skip
        return transaction_id


def _error(location: str, code: str, message: str) -> dict[str, Any]:
    return {"location": [location], "code": code, "message": message}
