"""``client.suppressions``: ``/v1/suppressions`` from :class:`~unified_messaging.AsyncClient`
and :class:`~unified_messaging.Client`. The body is checked by the server's own models before
anything is sent, so a bad field is the same 400 ``RequestInvalid`` locally.

No ``Idempotency-Key``: adding twice keeps one entry, so a retry after a lost answer is safe,
and a remove retried after its answer was lost finds nothing (``None``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from datetime import datetime

import httpx

from ._models import parse_model
from .suppressions._rules import (
    SuppressionCreate,
    SuppressionOut,
    SuppressionPage,
    SuppressionTarget,
)

__all__ = ["AsyncSuppressionsClient", "SuppressionsClient"]

#: ``request(method, path, json, params)``: the parent client's retried request.
AsyncRequest = Callable[[str, str, object, Mapping[str, str]], Awaitable[httpx.Response]]
Request = Callable[[str, str, object, Mapping[str, str]], httpx.Response]
_PATH = "/v1/suppressions"


def _add_body(channel: str, recipient: str, reason: str | None) -> dict[str, object]:
    body: dict[str, object] = {"channel": channel, "recipient": recipient}
    if reason is not None:
        body["reason"] = reason
    return parse_model(SuppressionCreate, body).model_dump(exclude_none=True)


def _remove_params(channel: str, recipient: str) -> dict[str, str]:
    parse_model(SuppressionTarget, {"channel": channel, "recipient": recipient})
    return {"channel": channel, "recipient": recipient}


def _params(filters: Mapping[str, object], cursor: str | None) -> dict[str, str]:
    params = {
        name: value.isoformat() if isinstance(value, datetime) else str(value)
        for name, value in filters.items()
        if value is not None
    }
    if cursor is not None:
        params["starting_after"] = cursor
    return params


def _removed(response: httpx.Response) -> SuppressionOut | None:
    """The entry a ``DELETE`` removed, or ``None`` when a retry found it gone (404): the try
    whose answer was lost removed it, and what it was is not known here."""
    if response.status_code == 404:
        return None
    return SuppressionOut.model_validate_json(response.content)


class AsyncSuppressionsClient:
    """``await client.suppressions.add(...)``, ``.remove(...)``, ``async for e in .list()``."""

    def __init__(self, request: AsyncRequest) -> None:
        self._request = request

    def __repr__(self) -> str:
        return "<client.suppressions>"

    async def add(
        self, channel: str, recipient: str, *, reason: str | None = None
    ) -> SuppressionOut:
        """``POST /v1/suppressions``: the entry as stored (idempotent)."""
        body = _add_body(channel, recipient, reason)
        response = await self._request("POST", _PATH, body, {})
        return SuppressionOut.model_validate_json(response.content)

    async def remove(self, channel: str, recipient: str) -> SuppressionOut | None:
        """``DELETE /v1/suppressions``: the entry removed; ``NotFound`` if none; ``None`` when
        a retry found it gone (an earlier try, whose answer was lost, removed it)."""
        return _removed(
            await self._request("DELETE", _PATH, None, _remove_params(channel, recipient))
        )

    async def list(self, **filters: object) -> AsyncIterator[SuppressionOut]:
        """``GET /v1/suppressions``, newest first, every page: ``channel``, ``recipient``,
        ``limit`` (per page)."""
        cursor: str | None = None
        while True:
            response = await self._request("GET", _PATH, None, _params(filters, cursor))
            page = SuppressionPage.model_validate_json(response.content)
            for entry in page.data:
                yield entry
            if not page.has_more or not page.data:
                return
            cursor = page.data[-1].id


class SuppressionsClient:
    """``client.suppressions.add(...)``, ``.remove(...)``, ``for e in .list()``."""

    def __init__(self, request: Request) -> None:
        self._request = request

    def __repr__(self) -> str:
        return "<client.suppressions>"

    def add(self, channel: str, recipient: str, *, reason: str | None = None) -> SuppressionOut:
        """``POST /v1/suppressions``: the entry as stored (idempotent)."""
        response = self._request("POST", _PATH, _add_body(channel, recipient, reason), {})
        return SuppressionOut.model_validate_json(response.content)

    def remove(self, channel: str, recipient: str) -> SuppressionOut | None:
        """``DELETE /v1/suppressions``: the entry removed; ``NotFound`` if none; ``None`` when
        a retry found it gone (an earlier try, whose answer was lost, removed it)."""
        return _removed(self._request("DELETE", _PATH, None, _remove_params(channel, recipient)))

    def list(self, **filters: object) -> Iterator[SuppressionOut]:
        """``GET /v1/suppressions``, newest first, every page: ``channel``, ``recipient``,
        ``limit`` (per page)."""
        cursor: str | None = None
        while True:
            response = self._request("GET", _PATH, None, _params(filters, cursor))
            page = SuppressionPage.model_validate_json(response.content)
            yield from page.data
            if not page.has_more or not page.data:
                return
            cursor = page.data[-1].id
