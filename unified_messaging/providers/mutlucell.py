"""``sms_d``: the Mutlucell XML gateway (send, polled delivery reports, credit check).

Owns Mutlucell's wire format and the mapping of every Mutlucell answer to a submit outcome or
a report status. Wire facts, from Mutlucell's API pages (``mutlucell.com.tr/toplusmsapi``),
its PHP library (``github.com/mutlucell/api``) and long-lived client libraries that agree with
them (Ardakilic/laravel-mutlucell-sms, semihs/gomutlucell):

* ``POST {base}/smsgw-ws/sndblkex``, UTF-8 XML: ``<smspack ka="user" pwd="password or API
  key" org="header" charset="…">`` holding one ``<mesaj><metin>text</metin><nums>905…,…</nums>
  </mesaj>`` per text. ``charset`` is ``default`` (GSM 03.38), ``turkish`` (single shift) or
  ``unicode``; absent, Mutlucell uses its default.
* The answer is plain text with HTTP 200 either way: ``$<pack id>#<credits used>`` on success
  (e.g. ``$1234567#1.0``; ``#0.0`` means nothing was sent, a refusal), a bare number on
  error: 20 malformed XML, 21 not the owner of the header, 22 no credit, 23 bad
  user/password, 24 another operation of the account is running, 25 SMSC stopped (try again
  in 1-2 minutes), 30 account not activated.
* Reports are polled: ``POST {base}/smsgw-ws/gtblkrprtex`` with ``<smsrapor ka pwd id/>``
  answers one ``<number> <status>`` line per recipient (statuses in :data:`_REPORT_STATUS`),
  or 20/23/30. Mutlucell asks for the first poll no sooner than a minute after sending and,
  while messages are pending, no more than once every 15 minutes: it blocks accounts that
  poll faster (its README, "Bulk Report"). Pacing the polls is the worker's job (the
  profile's ``PollPolicy``: per pack, first a minute after the send, then every 15 minutes;
  at most 10 calls a round); one call here is one request per pack.
* ``POST {base}/smsgw-ws/gtcrdtex`` with ``<smskredi ka pwd/>`` answers ``$<credit>``.
* ``POST {base}/smsgw-ws/gtorgex`` with ``<smsorig ka pwd/>`` answers the headers the
  account owns: ``$`` then one header a line (the PHP libraries' ``listOriginators``), or
  the bare error numbers above.

IYS. Mutlucell's public documents and SDKs (its PHP library's ``sendBulk``: ``ka pwd org
tarih bitis addLinkToEnd IP aboneid bayiid zamanayay charset``) name no IYS attribute of
``smspack``, so nothing here marks a pack commercial: ``sms_d`` carries informational traffic
only. Its profile says so (``iys_modes``), ``add_connection`` refuses a commercial ``sms_d``
connection, and a commercial message that still reaches this adapter (a connection stored
before that rule) is refused before sending rather than sent unmarked.

XML. Requests are built with ElementTree, which escapes ``<``, ``&`` and ``"`` in text and
attributes, so a text or a password containing them arrives intact. A carriage return in the
text reaches Mutlucell as a line feed (XML end-of-line handling), and characters XML 1.0
cannot carry (most C0 controls) are refused before sending. Mutlucell's answers are not XML
and are never parsed as XML, so no entity-expansion risk comes back with them; every answer is
read as a stream and capped.

Ids. A pack holds many recipients and has one id; a recipient's id is
``"<pack id>:<905…>"``, which a poll answer's ``<number> <status>`` line maps back to. A batch
never puts one number in a pack twice (a repeat goes into a pack of its own).
"""

from __future__ import annotations

import logging
import re
import xml.etree.ElementTree as ET
from collections.abc import Hashable, Mapping, Sequence
from typing import ClassVar, Final

import httpx
from pydantic import Field, SecretStr

from .._domain import Connection, ErrorInfo
from .._errors import InvalidCredentials, ProviderUnavailable
from .._types import Encoding, ProviderCode
from ._http import AdapterSpec, Answer, CredentialsModel, HttpAdapter
from ._sms import msisdn, numbers_by_id, send_in_groups
from .account import AccountReading, clean_senders, parse_amount
from .base import (
    OutcomeKind,
    ProviderReport,
    ReportCalls,
    ReportStatus,
    SubmitOutcome,
    SubmitRequest,
)

__all__ = ["SPEC", "Credentials", "MutlucellAdapter"]

logger = logging.getLogger("unified_messaging.providers.mutlucell")

_SEND_PATH: Final = "/smsgw-ws/sndblkex"
_REPORT_PATH: Final = "/smsgw-ws/gtblkrprtex"
_CREDIT_PATH: Final = "/smsgw-ws/gtcrdtex"
_ORIGINATOR_PATH: Final = "/smsgw-ws/gtorgex"
#: A send answer is a few bytes; a report holds a line per recipient of one pack.
_SEND_LIMIT: Final = 64 * 1024
_REPORT_LIMIT: Final = 1024 * 1024
_XML_HEADERS: Final = {"Content-Type": "text/xml; charset=UTF-8"}
_DECLARATION: Final = b'<?xml version="1.0" encoding="UTF-8"?>'

_CHARSET: Final[Mapping[Encoding, str]] = {
    "gsm7": "default",
    "gsm7_turkish": "turkish",
    "ucs2": "unicode",
}
_MOBILE: Final = re.compile(r"\+905[0-9]{9}")
_ACCEPTED: Final = re.compile(r"\$([0-9]{1,20})#([0-9]+(?:\.[0-9]+)?)")
_ERROR_CODE: Final = re.compile(r"[0-9]{1,4}")
_CREDIT: Final = re.compile(r"\$[0-9]+(?:\.[0-9]+)?")
_REPORT_LINE: Final = re.compile(r"\s*(\+?[0-9]{7,15})\s+([0-9]{1,3})(?:\s.*)?")
# XML 1.0 allows tab, LF and CR among C0 controls; U+FFFE/U+FFFF are not characters.
_NOT_XML: Final = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")

_R: Final = "rejected"
_U: Final = "unavailable"
_PR: Final = "PROVIDER_REJECTED"
#: Bare-number answers of ``sndblkex`` → (outcome, our code, why). Unknown numbers: rejected.
_SEND_ERRORS: Final[Mapping[str, tuple[OutcomeKind, str, str]]] = {
    "20": (_R, _PR, "Mutlucell could not read the request XML"),
    "21": (_R, "SENDER_NOT_APPROVED", "The Mutlucell account does not own this header"),
    "22": (_R, "INSUFFICIENT_CREDIT", "The Mutlucell account has no credit left"),
    "23": (_R, "PROVIDER_AUTH_FAILED", "Mutlucell refused the user name or password"),
    "24": (_U, "PROVIDER_UNAVAILABLE", "Another operation of the account is running"),
    "25": (_U, "PROVIDER_UNAVAILABLE", "Mutlucell's SMSC is stopped; try again in minutes"),
    "30": (_R, "PROVIDER_AUTH_FAILED", "The Mutlucell account is not activated"),
}  # fmt: skip
#: Mutlucell asks for a retry "after 1-2 minutes" on 25.
_RETRY_AFTER: Final[Mapping[str, float]] = {"24": 30.0, "25": 90.0}

_UNREACHABLE: Final = "RECIPIENT_UNREACHABLE"
#: ``gtblkrprtex`` status numbers → (our status, error). Unknown numbers become ``unknown``.
_REPORT_STATUS: Final[Mapping[str, tuple[ReportStatus, ErrorInfo | None]]] = {
    "0": ("failed", ErrorInfo(_PR, "Mutlucell did not send the message.")),
    "1": ("pending", None),  # processing
    "2": ("pending", None),  # handed to the operator, no receipt yet
    "3": ("delivered", None),
    "4": ("pending", None),  # waiting
    "5": ("expired", None),
    "6": ("failed", ErrorInfo(_UNREACHABLE, "The operator could not deliver it.")),
    "7": ("rejected", ErrorInfo(_PR, "The operator rejected the message.")),
    "11": ("unknown", None),
    "12": ("failed", ErrorInfo(_UNREACHABLE, "The number has no line.")),
    "13": ("failed", ErrorInfo(_PR, "Mutlucell reported an error.")),
    "15": ("failed", ErrorInfo("INVALID_RECIPIENT", "The number is not in use.")),
    "16": ("failed", ErrorInfo(_UNREACHABLE, "The number does not take SMS.")),
    "17": ("failed", ErrorInfo(_UNREACHABLE, "The handset's message memory is full.")),
    "18": ("failed", ErrorInfo(_UNREACHABLE, "The number is roaming.")),
    "19": ("failed", ErrorInfo(_UNREACHABLE, "The number's teleservice is off.")),
    "20": ("failed", ErrorInfo(_UNREACHABLE, "The number is being ported.")),
}  # fmt: skip


class Credentials(CredentialsModel):
    """A Mutlucell account: user name (``ka``) and password or API key (``pwd``)."""

    username: str = Field(min_length=1)
    password: SecretStr = Field(min_length=1)


class MutlucellAdapter(HttpAdapter[Credentials]):
    """The live ``sms_d`` adapter: Mutlucell's XML gateway."""

    PROVIDER_CODE: ClassVar[ProviderCode] = "sms_d"
    credentials_model: ClassVar[type[CredentialsModel]] = Credentials
    default_base_url: ClassVar[str] = "https://smsgw.mutlucell.com"

    # --- submitting -------------------------------------------------------------------------

    async def submit(self, request: SubmitRequest) -> SubmitOutcome:
        return (await self.submit_batch([request]))[0]

    async def submit_batch(self, requests: Sequence[SubmitRequest]) -> list[SubmitOutcome]:
        """One outcome per request, in order; more than :attr:`max_batch` is a caller bug."""
        if len(requests) > self.max_batch:
            raise ValueError(
                f"sms_d takes at most {self.max_batch} messages per batch, got {len(requests)}"
            )
        return await send_in_groups(
            requests,
            refusal=self._refusal,
            key=_pack_key,
            size=self.max_batch,
            send=lambda _key, group: self._send_pack(group),
        )

    def _refusal(self, request: SubmitRequest) -> SubmitOutcome | None:
        """What fails before any request: the same checks the ``sms_d`` simulator makes."""
        header_problem = self.profile.sender_problem(request.sender)
        if header_problem is not None:
            return SubmitOutcome.rejected(_PR, f"Invalid header: {header_problem}.")
        if not request.text:
            return SubmitOutcome.rejected("BODY_REJECTED", "The message text is empty.")
        if _NOT_XML.search(request.text):
            return SubmitOutcome.rejected(
                "BODY_REJECTED", "The text holds characters XML cannot carry."
            )
        if request.iys_mode not in self.profile.iys_modes:
            return SubmitOutcome.rejected(
                "IYS_NOT_CONFIGURED",
                "Mutlucell documents no way to mark a message commercial (IYS); send "
                "commercial messages through another provider.",
            )
        if _MOBILE.fullmatch(request.to) is None:
            return SubmitOutcome.recipient_failed(
                "INVALID_RECIPIENT", "The recipient must be a Turkish mobile number in E.164."
            )
        return None

    async def _send_pack(self, group: Sequence[SubmitRequest]) -> list[SubmitOutcome]:
        try:
            answer = await self._post(_SEND_PATH, self._pack(group))
        except httpx.HTTPError as exc:
            return [self.transport_outcome(exc)] * len(group)
        result = _read_send_answer(answer, self)
        if isinstance(result, str):
            return [SubmitOutcome.accepted(f"{result}:{r.to[1:]}") for r in group]
        return [result] * len(group)

    def _pack(self, group: Sequence[SubmitRequest]) -> bytes:
        first = group[0]  # the pack key makes these fields the same across the group
        root = self._root("smspack")
        root.set("org", first.sender or "")
        if first.encoding is not None:
            root.set("charset", _CHARSET[first.encoding])
        for request in group:
            mesaj = ET.SubElement(root, "mesaj")
            ET.SubElement(mesaj, "metin").text = request.text
            ET.SubElement(mesaj, "nums").text = request.to[1:]
        return _document(root)

    def _root(self, tag: str) -> ET.Element:
        return ET.Element(
            tag, {"ka": self.credentials.username, "pwd": self.secret(self.credentials.password)}
        )

    # --- reports ----------------------------------------------------------------------------

    async def poll_reports(self, provider_message_ids: Sequence[str]) -> list[ProviderReport]:
        """One ``gtblkrprtex`` request per pack; a pack that cannot be read is skipped (and
        logged) so the others still report, and the next poll asks again.

        Mutlucell's pace (a pack's first query a minute after its send, then at most every
        15 minutes, a capped number of calls a round) is its profile's
        :class:`~.base.PollPolicy`, kept by the worker; this call itself never waits.
        """
        return await self.poll_reports_within(provider_message_ids, ReportCalls(None))

    async def poll_reports_within(
        self, provider_message_ids: Sequence[str], calls: ReportCalls
    ) -> list[ProviderReport]:
        """:meth:`poll_reports`, one of the round's ``calls`` per pack. Each call covers the
        whole pack (every number its answer names), so a pack is asked once a round even
        when its ids are split across rounds' pages."""
        reports: list[ProviderReport] = []
        for pack, numbers in numbers_by_id(provider_message_ids).items():
            asked = {f"{pack}:{number}" for number in numbers}
            if not pack.isdigit():
                calls.cover(asked)  # not a pack id of ours: there is nothing to ask
                continue
            if not calls.take():
                break
            answered = await self._poll_pack(pack)
            calls.cover(asked)
            calls.cover(r.provider_message_id for r in answered)
            reports += [r for r in answered if r.provider_message_id in asked]
        return reports

    async def _poll_pack(self, pack: str) -> list[ProviderReport]:
        """The report of every number of the pack, or ``[]`` if it cannot be read."""
        query = self._root("smsrapor")
        query.set("id", pack)
        try:
            answer = await self._post(_REPORT_PATH, _document(query), limit=_REPORT_LIMIT)
        except httpx.HTTPError as exc:
            logger.warning("Mutlucell report of pack %s not read: %s", pack, self.cause(exc))
            return []
        text = answer.text.strip()
        if answer.status != httpx.codes.OK or answer.truncated or _ERROR_CODE.fullmatch(text):
            logger.warning(
                "Mutlucell report of pack %s refused: HTTP %d, %r",
                pack,
                answer.status,
                text[:4] if _ERROR_CODE.fullmatch(text) else "unreadable",
            )
            return []
        return [r for r in (_report(pack, line) for line in text.splitlines()) if r is not None]

    # --- credentials check ------------------------------------------------------------------

    async def check(self) -> None:
        """Ask for the credit: 23 (or 30, account not activated) means refused credentials."""
        try:
            answer = await self._post(_CREDIT_PATH, _document(self._root("smskredi")))
        except httpx.HTTPError as exc:
            raise self.unreachable(exc, "to check credentials") from None
        text = answer.text.strip()
        if answer.status == httpx.codes.OK and text in ("23", "30"):
            raise InvalidCredentials(f"Mutlucell refused the credentials: {_SEND_ERRORS[text][2]}.")
        if answer.status != httpx.codes.OK or answer.truncated or not _CREDIT.fullmatch(text):
            raise ProviderUnavailable(
                f"Mutlucell's credit check failed (HTTP {answer.status}): {self.excerpt(answer)}"
            )

    # --- the account (messenger.accounts) ----------------------------------------------------

    async def read_account(self) -> AccountReading:
        """The credit (``gtcrdtex``: ``$<credit>``, SMS credits) and the headers the account
        owns (``gtorgex`` with ``<smsorig ka pwd/>``: ``$`` and one header a line)."""
        text = await self._account_post(_CREDIT_PATH, "smskredi", "credit")
        if not _CREDIT.fullmatch(text):
            raise ProviderUnavailable("Mutlucell answered the credit query without a credit.")
        balance = parse_amount(text[1:])
        listed = await self._account_post(_ORIGINATOR_PATH, "smsorig", "header list")
        if not listed.startswith("$"):
            raise ProviderUnavailable("Mutlucell's header list does not start with '$'.")
        return AccountReading(balance, "SMS", clean_senders(listed[1:].splitlines()))

    async def _account_post(self, path: str, tag: str, what: str) -> str:
        try:
            answer = await self._post(path, _document(self._root(tag)))
        except httpx.HTTPError as exc:
            raise self.unreachable(exc, f"to read the {what}") from None
        text = answer.text.strip()
        if answer.status == httpx.codes.OK and text in ("23", "30"):
            raise InvalidCredentials(f"Mutlucell refused the credentials: {_SEND_ERRORS[text][2]}.")
        if answer.status != httpx.codes.OK or answer.truncated or _ERROR_CODE.fullmatch(text):
            raise ProviderUnavailable(
                f"Mutlucell gave no usable {what} (HTTP {answer.status}): {self.excerpt(answer)}"
            )
        return text

    # --- the wire ---------------------------------------------------------------------------

    async def _post(self, path: str, body: bytes, *, limit: int = _SEND_LIMIT) -> Answer:
        """One XML POST, its answer read no further than ``limit``."""
        return await self.exchange("POST", path, max_body=limit, content=body, headers=_XML_HEADERS)


def _pack_key(request: SubmitRequest) -> Hashable:
    # Header and charset belong to the whole smspack.
    return (request.sender, request.encoding)


def _document(root: ET.Element) -> bytes:
    return _DECLARATION + ET.tostring(root, encoding="unicode").encode("utf-8")


def _read_send_answer(answer: Answer, adapter: MutlucellAdapter) -> str | SubmitOutcome:
    """The pack id, or the outcome of a send not known to be accepted."""
    if answer.status == httpx.codes.TOO_MANY_REQUESTS:
        return SubmitOutcome.unavailable(
            "Mutlucell is throttling this account (429).", retry_after=answer.retry_after
        )
    if answer.status != httpx.codes.OK and answer.is_success:
        return adapter.unreadable(answer, "a 2xx other than Mutlucell's 200")
    if answer.status != httpx.codes.OK:
        return SubmitOutcome.unavailable(
            f"Mutlucell answered with HTTP {answer.status}: {adapter.excerpt(answer)}",
            retry_after=answer.retry_after,
        )
    if answer.truncated:
        return adapter.unreadable(answer, "the answer was not read to its end")
    text = answer.text.strip()
    accepted = _ACCEPTED.fullmatch(text)
    if accepted is not None:
        return _pack_taken(accepted.group(1), accepted.group(2))
    if _ERROR_CODE.fullmatch(text):
        kind, code, why = _SEND_ERRORS.get(text, (_R, _PR, "Mutlucell refused the message"))
        if kind == "unavailable":
            return SubmitOutcome.unavailable(f"{why} ({text}).", retry_after=_RETRY_AFTER[text])
        return SubmitOutcome.rejected(code, f"{why} ({text}).")
    # Mutlucell's answer is neither "$id#credit" nor an error number: an HTML error page, a
    # proxy's answer or a cut-off body. Its id cannot be trusted, so it is not "accepted".
    shape = "HTML" if text.startswith("<") or "html" in answer.content_type else "unreadable"
    logger.warning("Mutlucell answered 200 with an %s body (%d bytes)", shape, len(text))
    return adapter.unreadable(answer, f"an {shape} body instead of a pack id")


def _pack_taken(pack: str, credits: str) -> str | SubmitOutcome:
    """``$<pack>#<credits>``: the pack id, unless no credit was used, which means Mutlucell
    sent nothing (every number blacklisted or unreachable for it): a refusal, so fallback
    moves on. The number after ``#`` is the credit the pack used; client libraries read
    ``#0.0`` as "no SMS sent" (Ardakilic/laravel-mutlucell-sms ``getStatus``)."""
    if float(credits) > 0:
        return pack
    return SubmitOutcome.rejected(
        _PR, f"Mutlucell took pack {pack} but sent nothing (it used no credit)."
    )


def _report(pack: str, line: str) -> ProviderReport | None:
    match = _REPORT_LINE.fullmatch(line)
    number = msisdn(match.group(1)) if match else None
    if match is None or number is None:
        return None
    word = match.group(2)
    status, error = _REPORT_STATUS.get(word, ("unknown", None))
    return ProviderReport(
        provider_message_id=f"{pack}:{number}",
        status=status,
        provider_status=word,
        error=error,
        to=f"+{number}",
    )


def _factory(connection: Connection, credentials: Mapping[str, str]) -> MutlucellAdapter:
    return MutlucellAdapter(connection, credentials)


SPEC = AdapterSpec("sms_d", Credentials, _factory)
