"""``client.consents``: ``/v1/consents`` from :class:`~unified_messaging.AsyncClient` and
:class:`~unified_messaging.Client` (D33). The body is validated by the same model the server
uses before anything is sent, so a bad field is the same 400 ``RequestInvalid`` locally.

A create carries no ``Idempotency-Key``: a create retried after its answer was lost finds the
record there and answers 422 ``CONSENT_UNCHANGED``, which then means it was recorded.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from datetime import datetime
from typing import Any
from urllib.parse import quote

import httpx

from .._models import parse_model
from .models import ConsentCreate, ConsentDetail, ConsentOut, ConsentPage

__all__ = ["AsyncConsentsClient", "ConsentsClient"]

#: ``request(method, path, json, params)``: the parent client's retried request.
AsyncRequest = Callable[[str, str, object, Mapping[str, str]], Awaitable[httpx.Response]]
Request = Callable[[str, str, object, Mapping[str, str]], httpx.Response]
_PATH = "/v1/consents"


def _body(
    recipient: str,
    status: str,
    type_: str,
    recipient_type: str,
    source: str | None,
    consent_date: datetime | None,
) -> dict[str, Any]:
    fields: dict[str, object] = {"recipient": recipient, "status": status, "type": type_,
                                 "recipient_type": recipient_type}  # fmt: skip
    if source is not None:
        fields["source"] = source
    if consent_date is not None:
        fields["consent_date"] = consent_date
    return parse_model(ConsentCreate, fields).model_dump(mode="json", exclude_none=True)


def _params(filters: Mapping[str, object], cursor: str | None) -> dict[str, str]:
    params = {name: str(value) for name, value in filters.items() if value is not None}
    if cursor is not None:
        params["starting_after"] = cursor
    return params


def _one(consent_id: str) -> str:
    return f"{_PATH}/{quote(consent_id, safe='')}"


class AsyncConsentsClient:
    """``await client.consents.create(...)``, ``.list(...)``, ``.get(...)``."""

    def __init__(self, request: AsyncRequest) -> None:
        self._request = request

    async def create(
        self,
        recipient: str,
        status: str,
        *,
        type: str = "MESAJ",
        recipient_type: str = "BIREYSEL",
        source: str | None = None,
        consent_date: datetime | None = None,
    ) -> ConsentOut:
        """``POST /v1/consents``: the consent as recorded (``iys_state`` ``pending``)."""
        body = _body(recipient, status, type, recipient_type, source, consent_date)
        response = await self._request("POST", _PATH, body, {})
        return ConsentOut.model_validate_json(response.content)

    async def list(self, **filters: object) -> AsyncIterator[ConsentOut]:
        """``GET /v1/consents``, newest first, every page: ``recipient``, ``status``,
        ``limit`` (per page)."""
        cursor: str | None = None
        while True:
            response = await self._request("GET", _PATH, None, _params(filters, cursor))
            page = ConsentPage.model_validate_json(response.content)
            for consent in page.data:
                yield consent
            if not page.has_more or not page.data:
                return
            cursor = page.data[-1].id

    async def get(self, consent_id: str) -> ConsentDetail:
        """``GET /v1/consents/{id}``: the consent and its history."""
        response = await self._request("GET", _one(consent_id), None, {})
        return ConsentDetail.model_validate_json(response.content)


class ConsentsClient:
    """The blocking twin of :class:`AsyncConsentsClient`."""

    def __init__(self, request: Request) -> None:
        self._request = request

    def create(
        self,
        recipient: str,
        status: str,
        *,
        type: str = "MESAJ",
        recipient_type: str = "BIREYSEL",
        source: str | None = None,
        consent_date: datetime | None = None,
    ) -> ConsentOut:
        """``POST /v1/consents``: the consent as recorded (``iys_state`` ``pending``)."""
        body = _body(recipient, status, type, recipient_type, source, consent_date)
        return ConsentOut.model_validate_json(self._request("POST", _PATH, body, {}).content)

    def list(self, **filters: object) -> Iterator[ConsentOut]:
        """``GET /v1/consents``, newest first, every page."""
        cursor: str | None = None
        while True:
            response = self._request("GET", _PATH, None, _params(filters, cursor))
            page = ConsentPage.model_validate_json(response.content)
            yield from page.data
            if not page.has_more or not page.data:
                return
            cursor = page.data[-1].id

    def get(self, consent_id: str) -> ConsentDetail:
        """``GET /v1/consents/{id}``: the consent and its history."""
        response = self._request("GET", _one(consent_id), None, {})
        return ConsentDetail.model_validate_json(response.content)
