"""A local Verimor SMS API v2 for the ``sms_c`` adapter's tests.

Speaks the wire format of ``verimor/SMS-API`` ``user_guide.md`` and the v2 OpenAPI spec:
``POST /v2/send.json`` (JSON in, plain text out: a campaign id with 200, an error code with 400,
``401`` for a bad account), ``GET /v2/balance``, and builds the JSON array Verimor pushes as
delivery reports. It records every request it receives.

A campaign is refused as a whole, as Verimor does, when any one of its messages is at fault
(over 7 parts, a bad number, the same SMS to the same number again, a forbidden word), the
error code naming none of them.

Knobs script misbehaviour for every later send: :meth:`FakeVerimor.fail_with` (a 400 code),
:meth:`FakeVerimor.answer` (any status, body and content type: 5xx, malformed, HTML, huge),
:meth:`FakeVerimor.throttle` (429 with or without ``Retry-After``) and ``delay`` (seconds
before answering). :func:`serve` runs an app on a real loopback port.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ._server import serve

__all__ = ["FakeVerimor", "Received", "serve"]

_PLAIN = "text/plain; charset=utf-8"
_DEST = re.compile(r"90[0-9]{10}")
#: Longest text per data coding: 7 parts (the user guide's "SMS boy karakter limitleri").
_MAX_LENGTH = {"0": 1071, "1": 1043, "2": 469}
#: Not-1 of that table: with datacoding 0 or 1 these count as 2 characters.
_DOUBLE = frozenset("^{}\\[]~|€")


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class _Campaign:
    id: int
    messages: list[dict[str, str]]
    is_commercial: bool
    iys_recipient_type: str | None


@dataclass
class FakeVerimor:
    username: str = "908501234567"
    password: str = 'api-s3cret&"<pw>'
    headers: tuple[str, ...] = ("UMTEST", "BASLIGIM")
    credits: int = 10_000
    #: Numbers Verimor would call malformed (400 INVALID_DESTINATION_ADDRESS for the campaign).
    bad_numbers: set[str] = field(default_factory=set)
    #: Words that make Verimor refuse a text (400 FORBIDDEN_MESSAGE for the campaign).
    forbidden_words: set[str] = field(default_factory=set)
    #: ``(msg, dest)`` pairs taken so far: the same SMS again "within 24 hours" (the fake's
    #: whole life) is 400 MUKERRER_RAPORLAMA for the campaign it rides in.
    taken: set[tuple[str, str]] = field(default_factory=set)
    delay: float = 0.0
    received: list[Received] = field(default_factory=list)
    campaigns: dict[int, _Campaign] = field(default_factory=dict)
    _scripted: tuple[int, bytes, str, dict[str, str]] | None = None
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(20210))

    # --- knobs --------------------------------------------------------------------------------

    def fail_with(self, code: str) -> None:
        """Every later send answers ``400`` with this plain-text code."""
        self.answer(400, code)

    def answer(
        self,
        status: int,
        body: str | bytes,
        content_type: str = _PLAIN,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        """Every later send gets exactly this answer, whatever it asked."""
        raw = body.encode("utf-8") if isinstance(body, str) else body
        self._scripted = (status, raw, content_type, dict(headers or {}))

    def throttle(self, retry_after: str | None = "30") -> None:
        """Every later send gets ``429`` (Verimor: over the requests-per-minute limit)."""
        extra = {} if retry_after is None else {"Retry-After": retry_after}
        self.answer(429, "Too Many Requests", headers=extra)

    def sends(self) -> list[Received]:
        return [r for r in self.received if r.path == "/v2/send.json"]

    # --- pushed reports -----------------------------------------------------------------------

    def report_push(
        self,
        campaign_id: int,
        statuses: Mapping[str, str] | None = None,
        *,
        gsm_error: str = "0",
        with_inbound: bool = False,
    ) -> bytes:
        """The JSON array Verimor would POST for this campaign (``DELIVERED`` by default)."""
        entries: list[dict[str, Any]] = []
        for n, message in enumerate(self.campaigns[campaign_id].messages):
            status = (statuses or {}).get(message["dest"], "DELIVERED")
            delivered = status in ("DELIVERED", "SENT")
            entries.append({
                "type": "outbound",
                "campaign_id": campaign_id,
                "campaign_custom_id": None,
                "message_id": str(13582302 + n),
                "message_custom_id": None,
                "dest": message["dest"],
                "size": 1,
                "international_multiplier": 1,
                "credits": 1,
                "status": status,
                "gsm_error": "0" if delivered else gsm_error,
                "sent_at": "2026-01-02 10:00:00" if delivered else None,
                "done_at": "2026-01-02 10:00:05",
            })  # fmt: skip
        if with_inbound:
            entries.append({
                "message_id": 1234, "type": "inbound", "received_at": "2026-01-02 09:00:00",
                "network": "TURKCELL", "source_addr": "905319876543",
                "destination_addr": "908501234567", "keyword": "", "content": "merhaba",
            })  # fmt: skip
        return json.dumps(entries, ensure_ascii=False).encode("utf-8")

    # --- the app ------------------------------------------------------------------------------

    @property
    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/v2/send.json", self._send, methods=["POST"]),
                Route("/v2/balance", self._balance, methods=["GET"]),
                Route("/v2/headers", self._headers, methods=["GET"]),
            ]
        )

    async def _record(self, request: Request) -> bytes:
        body = await request.body()
        self.received.append(
            Received(
                request.method,
                request.url.path,
                dict(request.query_params),
                dict(request.headers),
                body,
            )
        )
        if self.delay:
            await asyncio.sleep(self.delay)
        return body

    async def _send(self, request: Request) -> Response:
        body = await self._record(request)
        if self._scripted is not None:
            status, raw, content_type, headers = self._scripted
            return Response(raw, status, headers=headers, media_type=content_type)
        try:
            payload = json.loads(body)
        except ValueError:
            return _plain(400, "INVALID_JSON")
        if not isinstance(payload, dict):
            return _plain(400, "INVALID_JSON")
        if (payload.get("username"), payload.get("password")) != (self.username, self.password):
            return _plain(401, "Geçersiz kullanıcı adı/şifre")
        refusal = self._refusal(payload)
        if refusal is not None:
            return _plain(400, refusal)
        campaign = _Campaign(
            next(self._ids),
            [{"msg": m["msg"], "dest": d} for m in payload["messages"] for d in _dests(m)],
            bool(payload.get("is_commercial")),
            payload.get("iys_recipient_type"),
        )
        self.campaigns[campaign.id] = campaign
        self.taken.update((m["msg"], m["dest"]) for m in campaign.messages)
        self.credits -= len(campaign.messages)
        return _plain(200, str(campaign.id))

    def _refusal(self, payload: dict[str, Any]) -> str | None:
        """Verimor's validation, in the order its error table lists it."""
        if payload.get("source_addr") not in self.headers:
            return "INVALID_SOURCE_ADDRESS"
        datacoding = str(payload.get("datacoding", "0"))
        if datacoding not in _MAX_LENGTH:
            return "INVALID_DATACODING"
        if payload.get("is_commercial") and payload.get("iys_recipient_type") not in (
            "BIREYSEL",
            "TACIR",
        ):
            return "INVALID_IYS_RECIPIENT_TYPE"
        messages = payload.get("messages")
        if not isinstance(messages, list) or not messages:
            return "MISSING_MESSAGE"
        for message in messages:
            if not isinstance(message, dict) or not message.get("msg"):
                return "MISSING_MESSAGE"
            if _length(message["msg"], datacoding) > _MAX_LENGTH[datacoding]:
                return "MESSAGE_TOO_LONG"
            if not message.get("dest"):
                return "MISSING_DESTINATION_ADDRESS"
            if any(not _DEST.fullmatch(d) or d in self.bad_numbers for d in _dests(message)):
                return "INVALID_DESTINATION_ADDRESS"
            if any((message["msg"], d) in self.taken for d in _dests(message)):
                return "MUKERRER_RAPORLAMA"
            if any(word in message["msg"] for word in self.forbidden_words):
                return "FORBIDDEN_MESSAGE"
        if sum(len(_dests(m)) for m in messages) > self.credits:
            return "INSUFFICIENT_CREDITS"
        return None

    async def _balance(self, request: Request) -> Response:
        await self._record(request)
        query = request.query_params
        if (query.get("username"), query.get("password")) != (self.username, self.password):
            return _plain(401, "Geçersiz kullanıcı adı/şifre")
        return _plain(200, f"{self.credits}.0")

    async def _headers(self, request: Request) -> Response:
        """``GET /v2/headers``: the user guide's JSON list of header names."""
        await self._record(request)
        query = request.query_params
        if (query.get("username"), query.get("password")) != (self.username, self.password):
            return _plain(401, "Geçersiz kullanıcı adı/şifre")
        body = json.dumps(list(self.headers), ensure_ascii=False)
        return Response(body, 200, media_type="application/json")


def _length(text: str, datacoding: str) -> int:
    """A text's length as Verimor's length table counts it for this data coding."""
    if datacoding == "2":
        return len(text)
    return len(text) + sum(1 for c in text if c in _DOUBLE)


def _dests(message: Mapping[str, str]) -> list[str]:
    return [d.strip() for d in str(message.get("dest", "")).split(",") if d.strip()]


def _plain(status: int, text: str) -> Response:
    return Response(text, status, media_type=_PLAIN)
