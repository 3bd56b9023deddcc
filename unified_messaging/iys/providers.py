"""İYS through a provider (D33): a workspace with no İYS API user of its own registers its
consents through its SMS provider's consent API, behind the same
:class:`~.backend.IysBackend` as İYS itself, so the worker's registration (once, after a
crash too), ``iys sync`` and the gate work unchanged. Every path and field below is cited in
docs/iys.md ("Through a provider").

- İletimerkezi (``sms_b``): ``POST /v1/consent/create/json`` ``{"request": {"authentication":
  {"key", "hash"}, "consent": {"brandCode", "list": [{recipient, recipientType, type, status,
  source, consentDate}]}}}`` (1 to 5,000 a request, all or none), and ``POST
  /v1/consent/show/json`` ``{"request": {"authentication", "consent": {"brandCode",
  "recipient", "recipientType", "type"}}}`` → ``response.consent`` (``status``, ``source``,
  ``consentDate``); a recipient without a record is a 422 (or an empty ``consent``). Every
  answer is ``{"response": {"status": {"code", "message"}}}`` with the HTTP status equal to
  ``code``.
- Verimor (``sms_c``): ``POST /v2/iys_consents.json`` ``{"username", "password",
  "source_addr", "consents": [{type, source, status, recipient_type, consent_date,
  recipient}]}`` → 200 with the id of the consent campaign as plain text; a refused request
  is a 4xx with a line of text. Verimor passes the consents on to İYS later: İYS's own
  refusal of one never comes back on this call, and Verimor has no per-recipient lookup.

Neither API lists changes: a citizen's RET made through İYS is never pulled (docs/iys.md
says what is done instead); :meth:`changes` answers an empty page.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import httpx

from .._retry_after import parse_retry_after
from ..providers._http import JsonUnreadable, decode_json, excerpt, transport_cause
from .errors import IysCredentialsRefused, IysError, IysRefused, IysThrottled, IysUnavailable
from .records import CONSENT_PROVIDERS
from .wire import ChangesPage, IysRecord, Registered, WireConsent

if TYPE_CHECKING:
    from .._domain import Connection

__all__ = [
    "CONSENT_PROVIDERS",
    "ILETIMERKEZI_MAX_CONSENTS",
    "IletimerkeziConsents",
    "VerimorConsents",
    "provider_backend",
]

#: İletimerkezi takes 1 to 5,000 consents in one ``consent/create`` request.
ILETIMERKEZI_MAX_CONSENTS: Final = 5_000
_ILETIMERKEZI_URL: Final = "https://api.iletimerkezi.com"
_VERIMOR_URL: Final = "https://sms.verimor.com.tr"
_MAX_BODY: Final = 1 << 20
#: An İYS H-code a provider passes on in its message (``H174: …``).
_H_CODE: Final = re.compile(r"\bH\d{3}\b")


def provider_backend(
    connection: Connection, credentials: Mapping[str, str], brand_code: int,
    client: httpx.AsyncClient,
) -> IletimerkeziConsents | VerimorConsents:  # fmt: skip
    """The consent API of ``connection``'s provider (one of :data:`CONSENT_PROVIDERS`)."""
    if connection.provider == "sms_b":
        return IletimerkeziConsents(
            client, connection.base_url or _ILETIMERKEZI_URL, brand_code,
            key=credentials.get("api_key", ""), hash_=credentials.get("api_hash", ""),
        )  # fmt: skip
    if connection.provider == "sms_c":
        return VerimorConsents(
            client, connection.base_url or _VERIMOR_URL,
            username=credentials.get("username", ""), password=credentials.get("password", ""),
            header=connection.default_sender,
        )  # fmt: skip
    raise ValueError(f"{connection.provider} has no consent API")


class _ProviderConsents:
    """What both consent APIs share: no token, no bulk requests (their create calls are
    synchronous), no changes to list."""

    name = ""

    def __init__(self, client: httpx.AsyncClient, base_url: str, secrets: Sequence[str]) -> None:
        self._client = client
        self._base_url = base_url.rstrip("/")
        self._secrets = tuple(s for s in secrets if s)

    def __repr__(self) -> str:  # never the credentials
        return f"{type(self).__name__}({self._base_url!r})"

    async def ready(self, *, wait: bool = True) -> None:
        return None  # no token to fetch: every call carries the account's credentials

    async def changes(self, source: str, after: str | None) -> ChangesPage:
        return ChangesPage(after, ())  # neither API lists İYS's changes

    async def _post(self, path: str, body: object) -> httpx.Response:
        try:
            response = await self._client.post(
                self._base_url + path, json=body,
                headers={"Accept": "application/json"},
            )  # fmt: skip
        except httpx.HTTPError as exc:
            cause = excerpt(transport_cause(exc), self._secrets)
            raise IysUnavailable(f"{self.name}: {cause}") from None
        if response.status_code == 429:
            raise IysThrottled(
                f"{self.name} answered 429 (too many requests).",
                retry_after=parse_retry_after(response.headers.get("Retry-After")),
            )
        if response.status_code >= 500:
            raise IysUnavailable(
                f"{self.name} answered {response.status_code}: {self._excerpt(response)}",
                retry_after=parse_retry_after(response.headers.get("Retry-After")),
            )
        if response.status_code in (401, 403):
            raise IysCredentialsRefused(
                f"{self.name} refused the connection's credentials "
                f"({response.status_code}): {self._excerpt(response)}"
            )
        return response

    def _excerpt(self, response: httpx.Response) -> str:
        return excerpt(response.text, self._secrets)

    def _refused(self, code: int, message: str) -> IysRefused:
        found = _H_CODE.search(message)
        h_code = found.group(0) if found else ""
        shown = f"{self.name} refused the consent ({code}): {message}"
        return IysRefused(shown, [IysError(h_code, shown)])


class IletimerkeziConsents(_ProviderConsents):
    """İletimerkezi's consent API for one account and brand."""

    name = "İletimerkezi"
    max_list = ILETIMERKEZI_MAX_CONSENTS

    def __init__(
        self, client: httpx.AsyncClient, base_url: str, brand_code: int, *, key: str,
        hash_: str,
    ) -> None:  # fmt: skip
        super().__init__(client, base_url, (key, hash_))
        self._brand_code = brand_code
        self._auth = {"key": key, "hash": hash_}

    async def add(self, consent: WireConsent) -> Registered:
        await self.add_list([consent])
        return Registered(None, None)

    async def add_list(self, consents: Sequence[WireConsent]) -> None:
        """Up to :data:`ILETIMERKEZI_MAX_CONSENTS` in one request: all taken, or none
        (:class:`IysRefused` with İletimerkezi's message)."""
        if not 0 < len(consents) <= ILETIMERKEZI_MAX_CONSENTS:
            raise ValueError(f"1 to {ILETIMERKEZI_MAX_CONSENTS} consents a request")
        body = {"consent": {"brandCode": self._brand_code,
                            "list": [c.body() for c in consents]}}  # fmt: skip
        code, message, _ = await self._call("/v1/consent/create/json", body)
        if code != 200:
            raise self._refused(code, message)

    async def status(self, recipient: str, recipient_type: str, type_: str) -> IysRecord | None:
        body = {"consent": {"brandCode": self._brand_code, "recipient": recipient,
                            "recipientType": recipient_type, "type": type_}}  # fmt: skip
        code, _, document = await self._call("/v1/consent/show/json", body)
        if code == 422:
            return None  # İletimerkezi's answer for a recipient without a record
        if code != 200:
            raise IysUnavailable(f"İletimerkezi answered {code} to a consent lookup.")
        found = document.get("consent")
        if not isinstance(found, dict) or found.get("status") not in ("ONAY", "RET"):
            return None  # ``consent: []``: no record of this recipient type
        return IysRecord(str(found["status"]), _str(found.get("consentDate")),
                         _str(found.get("source")))  # fmt: skip

    async def _call(self, path: str, fields: Mapping[str, Any]) -> tuple[int, str, dict[str, Any]]:
        """The answer's ``status.code``, its message and the ``response`` object."""
        response = await self._post(path, {"request": {"authentication": self._auth, **fields}})
        try:
            document = decode_json(response.content, max_bytes=_MAX_BODY)
        except JsonUnreadable:
            raise IysUnavailable(
                f"İletimerkezi's answer ({response.status_code}) could not be read: "
                f"{self._excerpt(response)}"
            ) from None
        answer = document.get("response") if isinstance(document, dict) else None
        answer = answer if isinstance(answer, dict) else {}
        status = answer.get("status")
        status = status if isinstance(status, dict) else {}
        code = status.get("code")
        if not isinstance(code, int) or isinstance(code, bool):
            code = response.status_code
        message = excerpt(str(status.get("message") or ""), self._secrets)
        return code, message, answer


class VerimorConsents(_ProviderConsents):
    """Verimor's consent API for one account (its header names the brand in OİM)."""

    name = "Verimor"

    def __init__(
        self, client: httpx.AsyncClient, base_url: str, *, username: str, password: str,
        header: str | None,
    ) -> None:  # fmt: skip
        super().__init__(client, base_url, (password,))
        self._username = username
        self._password = password
        self._header = header

    async def add(self, consent: WireConsent) -> Registered:
        item: dict[str, Any] = {
            "type": consent.type,
            "status": consent.status,
            "recipient_type": consent.recipient_type,
            # Verimor's numbers are 90…, without the plus.
            "recipient": consent.recipient.removeprefix("+"),
        }
        if consent.source is not None:
            item["source"] = consent.source
        if consent.consent_date is not None:
            item["consent_date"] = consent.consent_date
        body: dict[str, Any] = {"username": self._username, "password": self._password,
                                "consents": [item]}  # fmt: skip
        if self._header is not None:
            body["source_addr"] = self._header  # else Verimor takes the account's first
        response = await self._post("/v2/iys_consents.json", body)
        if response.status_code != 200:
            raise self._refused(response.status_code, self._excerpt(response))
        campaign = response.text.strip()
        if not campaign.isdigit():
            raise IysUnavailable(f"Verimor's answer could not be read: {self._excerpt(response)}")
        # The campaign id is Verimor's, not an İYS transaction id: none is given here.
        return Registered(None, None)

    async def status(self, recipient: str, recipient_type: str, type_: str) -> IysRecord | None:
        return None  # Verimor has no per-recipient lookup


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
