"""İYS's HTTP API as its public documentation (dev.iys.org.tr) describes it, over an
injected ``httpx.AsyncClient`` (tests give it a loopback fake or a ``MockTransport``).

Every path, field and answer here is cited in docs/iys.md:

- ``POST /oauth2/token``: ``{"username", "password", "grant_type": "password"}`` or
  ``{"refresh_token", "grant_type": "refresh_token"}`` → ``access_token``,
  ``refresh_token``, ``expires_in`` (7200), ``refresh_expires_in`` (14400);
- ``POST /sps/{iysCode}/brands/{brandCode}/consents``: one consent → 200
  ``{transactionId, creationDate}``, or 422 ``{errors: [{location, code, message}]}``;
- ``POST …/consents/status``: ``{recipient, recipientType, type}`` → the record;
- ``POST …/consents/request``: a list of consents → ``{requestId, subRequests}``;
  ``GET …/consents/request/{requestId}`` → ``[{index, status, subrequestId,
  transactionId, creationDate, error}]``, ``status`` ``success``/``failure``/``enqueue``;
- ``GET …/consents/changes?source=HS|IYS&after=…`` → ``{after, list}``.

A 401 to a call with a token is :class:`IysTokenExpired` (the session asks for a new token
and calls once more); 429 is :class:`IysThrottled` with İYS's ``Retry-After``; a 5xx, a
time-out or a transport error is :class:`IysUnavailable`; a 422 is :class:`IysRefused`
with İYS's H-codes. No message carries the password or a token.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import httpx

from .._retry_after import parse_retry_after
from ..providers._http import JsonUnreadable, decode_json, excerpt, transport_cause
from .errors import (
    IysCredentialsRefused,
    IysError,
    IysRefused,
    IysThrottled,
    IysTokenExpired,
    IysUnavailable,
)
from .wire import (
    BulkAccepted,
    BulkResult,
    ChangesPage,
    IysChange,
    IysRecord,
    Registered,
    TokenGrant,
    WireConsent,
)

__all__ = ["IysApi"]

#: What an answer of İYS may weigh before we stop reading it (a changes page is the
#: largest: a week of a brand's changes).
_MAX_BODY: Final = 32 * 1024 * 1024
_JSON: Final = {"Accept": "application/json"}


class IysApi:
    """One İYS brand's API at ``base_url`` (its ``iysCode`` and ``brandCode``)."""

    def __init__(
        self, client: httpx.AsyncClient, base_url: str, iys_code: int, brand_code: int
    ) -> None:
        self._client = client
        self._base = base_url.rstrip("/")
        self._brand = f"{self._base}/sps/{iys_code}/brands/{brand_code}"

    def __repr__(self) -> str:
        return f"IysApi({self._brand!r})"

    # -- tokens (no access token: a 401 here is a refusal of what we sent)

    async def password_grant(self, username: str, password: str) -> TokenGrant:
        body = {"username": username, "password": password, "grant_type": "password"}
        return await self._token(body, secrets=(password,))

    async def refresh_grant(self, refresh_token: str) -> TokenGrant:
        body = {"refresh_token": refresh_token, "grant_type": "refresh_token"}
        return await self._token(body, secrets=(refresh_token,))

    async def _token(self, body: Mapping[str, str], *, secrets: Sequence[str]) -> TokenGrant:
        response = await self._send(
            "POST", f"{self._base}/oauth2/token", json=body, secrets=secrets
        )
        if response.status_code in (400, 401, 403):
            raise IysCredentialsRefused(
                f"İYS refused the token request ({response.status_code}): "
                f"{excerpt(response.text, secrets)}"
            )
        document = self._ok(response, secrets=secrets)
        if not isinstance(document, dict) or not isinstance(document.get("access_token"), str):
            raise IysUnavailable("İYS's token answer has no access_token.")
        refresh = document.get("refresh_token")
        return TokenGrant(
            access_token=document["access_token"],
            refresh_token=refresh if isinstance(refresh, str) else None,
            expires_in=_seconds(document.get("expires_in"), 7200.0),
            refresh_expires_in=_seconds(document.get("refresh_expires_in"), None),
        )

    # -- consents (with an access token)

    async def add(self, token: str, consent: WireConsent) -> Registered:
        response = await self._send(
            "POST", f"{self._brand}/consents", token=token, json=consent.body()
        )
        document = self._ok(response)
        if not isinstance(document, dict):
            raise IysUnavailable("İYS's answer to a consent is not an object.")
        return Registered(_text(document.get("transactionId")), _text(document.get("creationDate")))

    async def status(
        self, token: str, recipient: str, recipient_type: str, type_: str
    ) -> IysRecord | None:
        """İYS's record of the recipient, or ``None`` when it has none (404, or a 422: a
        recipient İYS does not know; docs/iys.md notes this reading)."""
        body = {"recipient": recipient, "recipientType": recipient_type, "type": type_}
        url = f"{self._brand}/consents/status"
        response = await self._send("POST", url, token=token, json=body)
        if response.status_code in (404, 422):
            return None
        document = self._ok(response)
        if not isinstance(document, dict) or not isinstance(document.get("status"), str):
            return None
        return IysRecord(
            status=document["status"],
            consent_date=_text(document.get("consentDate")),
            source=_text(document.get("source")),
        )

    async def add_many(self, token: str, consents: Sequence[WireConsent]) -> BulkAccepted:
        bodies = [consent.body() for consent in consents]
        response = await self._send(
            "POST", f"{self._brand}/consents/request", token=token, json=bodies
        )
        document = self._ok(response)
        if not isinstance(document, dict) or not isinstance(document.get("requestId"), str):
            raise IysUnavailable("İYS's answer to a bulk request has no requestId.")
        subrequests = document.get("subRequests")
        ids = tuple(
            str(sub["subrequestId"])
            for sub in (subrequests if isinstance(subrequests, list) else [])
            if isinstance(sub, dict) and sub.get("subrequestId") is not None
        )
        return BulkAccepted(document["requestId"], ids)

    async def request_results(self, token: str, request_id: str) -> list[BulkResult]:
        response = await self._send(
            "GET", f"{self._brand}/consents/request/{request_id}", token=token
        )
        document = self._ok(response)
        if not isinstance(document, list):
            raise IysUnavailable("İYS's bulk results are not a list.")
        return [result for item in document if (result := _bulk_result(item)) is not None]

    async def changes(self, token: str, source: str, after: str | None) -> ChangesPage:
        params = {"source": source}
        if after is not None:
            params["after"] = after
        response = await self._send(
            "GET", f"{self._brand}/consents/changes", token=token, params=params
        )
        document = self._ok(response)
        if not isinstance(document, dict):
            raise IysUnavailable("İYS's changes are not an object.")
        listed = document.get("list")
        changes = tuple(
            change
            for item in (listed if isinstance(listed, list) else [])
            if (change := _change(item)) is not None
        )
        return ChangesPage(_text(document.get("after")), changes)

    # -- the wire

    async def _send(
        self,
        method: str,
        url: str,
        *,
        token: str | None = None,
        json: object = None,
        params: Mapping[str, str] | None = None,
        secrets: Sequence[str] = (),
    ) -> httpx.Response:
        headers = dict(_JSON)
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        try:
            response = await self._client.request(
                method, url, headers=headers, json=json, params=params
            )
        except httpx.HTTPError as exc:
            raise IysUnavailable(f"İYS: {transport_cause(exc)}") from None
        if token is not None and response.status_code == 401:
            raise IysTokenExpired
        if response.status_code == 429:
            raise IysThrottled(
                "İYS answered 429 (too many requests).",
                retry_after=parse_retry_after(response.headers.get("Retry-After")),
            )
        if response.status_code >= 500:
            raise IysUnavailable(
                f"İYS answered {response.status_code}: {excerpt(response.text, secrets)}",
                retry_after=parse_retry_after(response.headers.get("Retry-After")),
            )
        return response

    def _ok(self, response: httpx.Response, *, secrets: Sequence[str] = ()) -> object:
        if response.status_code == 422:
            raise IysRefused(errors=_errors(response))
        if not 200 <= response.status_code < 300:
            raise IysUnavailable(
                f"İYS answered {response.status_code}: {excerpt(response.text, secrets)}"
            )
        try:
            return decode_json(response.content, max_bytes=_MAX_BODY)
        except JsonUnreadable as exc:
            raise IysUnavailable(f"İYS's answer could not be read: {exc}") from None


def _text(value: object) -> str | None:
    if isinstance(value, str) and value:
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def _seconds(value: object, default: float | None) -> Any:
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return float(value)
    return default


def _errors(response: httpx.Response) -> list[IysError]:
    try:
        document = decode_json(response.content, max_bytes=_MAX_BODY)
    except JsonUnreadable:
        return [IysError("", f"İYS answered 422: {excerpt(response.text)}")]
    listed = document.get("errors") if isinstance(document, dict) else None
    found: list[IysError] = []
    for entry in listed if isinstance(listed, list) else []:
        if not isinstance(entry, dict):
            continue
        location = entry.get("location")
        found.append(
            IysError(
                code=str(entry.get("code") or ""),
                message=excerpt(str(entry.get("message") or "")),
                location=tuple(str(p) for p in location) if isinstance(location, list) else (),
            )
        )
    return found or [IysError("", f"İYS answered 422: {excerpt(response.text)}")]


def _bulk_result(item: object) -> BulkResult | None:
    if not isinstance(item, dict) or item.get("subrequestId") is None:
        return None
    status = item.get("status")
    if status not in ("success", "failure", "enqueue"):
        return None
    error = item.get("error")
    problem = None
    if isinstance(error, dict):
        problem = IysError(str(error.get("code") or ""), excerpt(str(error.get("message") or "")))
    return BulkResult(
        subrequest_id=str(item["subrequestId"]),
        status=status,
        transaction_id=_text(item.get("transactionId")),
        error=problem,
    )


def _change(item: object) -> IysChange | None:
    if not isinstance(item, dict):
        return None
    fields = {name: _text(item.get(name)) for name in (
        "transactionId", "recipient", "recipientType", "type", "status", "source",
        "consentDate", "creationDate",
    )}  # fmt: skip
    if None in (fields["transactionId"], fields["recipient"], fields["status"]):
        return None
    return IysChange(
        transaction_id=fields["transactionId"] or "",
        recipient=fields["recipient"] or "",
        recipient_type=fields["recipientType"] or "BIREYSEL",
        type=fields["type"] or "MESAJ",
        status=fields["status"] or "",
        source=fields["source"],
        consent_date=fields["consentDate"],
        creation_date=fields["creationDate"],
    )
