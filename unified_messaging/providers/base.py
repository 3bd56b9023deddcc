"""The seam between the library and a provider: one protocol, one outcome type.

Every provider (the five SMS gateways, the chat-bot channel, the business chat channel, and
the simulator that stands in for each of them under a test key) is a
:class:`ProviderAdapter`. An adapter turns a :class:`SubmitRequest` into the provider's wire
format and the provider's answer into a :class:`SubmitOutcome` of one of five kinds:

``accepted``
    The provider took the message; ``provider_message_id`` is its id for it.
``rejected``
    Provider-level refusal (bad header, no credit, throttled for good): the next fallback
    provider may well succeed, so routing moves on.
``recipient_failed``
    Recipient-level refusal (no IYS consent, chat unreachable): every provider would refuse
    it too, so routing stops.
``unavailable``
    Transport error before the request left, 5xx, throttled: the answer proves the provider
    took nothing, so routing moves on.
``unknown``
    The provider may have taken the message and we cannot tell: a 2xx answer we could not
    read (wrong content type, cut or over-long body, no id), or no answer after the whole
    request was sent (read time-out, connection broken mid-answer). Routing stops here:
    another provider, or the same one again, could send the SMS twice. The
    rule that tells it from ``unavailable`` is :meth:`HttpAdapter.unreadable
    <unified_messaging.providers._http.HttpAdapter.unreadable>` and
    :meth:`~unified_messaging.providers._http.HttpAdapter.transport_outcome`.

Adapters also read the provider's delivery reports, pushed (:meth:`parse_reports`) or polled
(:meth:`poll_reports`), into :class:`ProviderReport` values. A provider that must be polled
says how often, and how many report calls a minute it takes, in its profile's
:class:`PollPolicy`; the worker keeps to it across every process (one durable poll item per
connection), and hands each round's :class:`ReportCalls` to adapters that can count their
calls (:class:`PacedPolling`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Final, Literal, Protocol, runtime_checkable

from .._domain import Connection, ErrorInfo
from .._encoding import analyze_sms
from .._errors import ProviderOutcomeUnknown, ProviderUnavailable
from .._types import (
    CHANNEL_OF,
    IYS_MODES,
    Channel,
    DeliveryStatus,
    Encoding,
    IysMode,
    ProviderCode,
)

__all__ = [
    "NO_FALLBACK_CODES",
    "PROFILES",
    "AdapterFactory",
    "InboundCallback",
    "InboundMessage",
    "LimitsParts",
    "OutcomeKind",
    "PacedPolling",
    "PollPolicy",
    "ProviderAdapter",
    "ProviderProfile",
    "ProviderReport",
    "ProviderTemplate",
    "ReadsInbound",
    "RepliesToReports",
    "ReportCalls",
    "ReportStatus",
    "SubmitOutcome",
    "SubmitRequest",
    "minted_job_id",
    "minted_message_id",
    "parts_limit",
    "uses_turkish_shift",
]

OutcomeKind = Literal["accepted", "rejected", "recipient_failed", "unavailable", "unknown"]

#: Failure codes that belong to the recipient or the message, not to the provider: another
#: provider would refuse it too (or deliver a duplicate), so a report carrying one of them
#: ends the message instead of moving it to the next fallback provider (D6).
NO_FALLBACK_CODES: Final[frozenset[str]] = frozenset(
    {
        "IYS_CONSENT_MISSING",
        "INVALID_RECIPIENT",
        "RECIPIENT_BLACKLISTED",
        "DUPLICATE_MESSAGE",
        "CHAT_UNREACHABLE",
        "OUTSIDE_CUSTOMER_SERVICE_WINDOW",
    }
)
#: A report may also say a message is still on its way; only final statuses change a record.
ReportStatus = DeliveryStatus | Literal["pending"]


@dataclass(frozen=True, slots=True)
class ProviderTemplate:
    """A provider-side template (``bizchat``): name, language and positional parameters."""

    name: str
    language: str
    parameters: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SubmitRequest:
    """One message for one recipient, ready for the wire."""

    job_id: str
    #: Normalized recipient: E.164 for SMS and ``bizchat``, chat id or ``@name`` for ``chatbot``.
    to: str
    text: str = field(repr=False)
    sender: str | None = None
    #: 0-based position of this try in the message's routing (the first provider is 0).
    attempt: int = 0
    iys_mode: IysMode = "informational"
    encoding: Encoding | None = None
    template: ProviderTemplate | None = None
    workspace_id: str = ""
    connection_id: str = ""
    #: A verification's code message (D34): an adapter with a route for codes (NetGSM's
    #: OTP route) may send it there.
    one_time_code: bool = False


@dataclass(frozen=True, slots=True)
class SubmitOutcome:
    kind: OutcomeKind
    provider_message_id: str | None = None
    error: ErrorInfo | None = None
    #: Seconds the provider asked us to wait (429 ``Retry-After`` / ``retry_after``).
    retry_after: float | None = None
    #: The provider refused a request of several messages as a whole, for a reason that names
    #: no culprit (a duplicate, a forbidden word, one bad number): nothing of it was sent, and
    #: this message may be fine on its own. Routing sends such messages again in smaller
    #: requests until the refusal falls on the guilty ones alone (:mod:`.._routing.split`).
    #: Never set on the outcome of a request of one message: that refusal names its culprit.
    batch_refusal: bool = False
    #: The recipient turned us away for good (a Telegram user blocked the bot): the send
    #: fails as ``recipient_failed`` and the messenger adds them to the suppression list.
    opted_out: bool = False

    @classmethod
    def accepted(cls, provider_message_id: str) -> SubmitOutcome:
        return cls("accepted", provider_message_id=provider_message_id)

    @classmethod
    def rejected(cls, code: str, message: str) -> SubmitOutcome:
        return cls("rejected", error=ErrorInfo(code, message))

    @classmethod
    def recipient_failed(cls, code: str, message: str) -> SubmitOutcome:
        return cls("recipient_failed", error=ErrorInfo(code, message))

    @classmethod
    def unavailable(
        cls, message: str, *, code: str = ProviderUnavailable.code, retry_after: float | None = None
    ) -> SubmitOutcome:
        """Nothing was taken, and the answer proves it (an error status, a throttle, a
        refusal the provider documents, or a request that never left): routing moves on.
        An answer that cannot be read is not proof: :meth:`HttpAdapter.unreadable`."""
        return cls("unavailable", error=ErrorInfo(code, message), retry_after=retry_after)

    def refused_together(self, count: int) -> list[SubmitOutcome]:
        """The outcomes of ``count`` messages that one request carried and the provider
        refused as a whole, naming no culprit: each marked :attr:`batch_refusal` when there
        were several. A message that went alone is the culprit: its refusal is its own."""
        if count < 2 or self.kind not in ("rejected", "recipient_failed"):
            return [self] * count
        return [replace(self, batch_refusal=True)] * count

    @classmethod
    def unknown(cls, message: str, *, provider_message_id: str | None = None) -> SubmitOutcome:
        """The provider may have taken it: never a fallback, never a resend.

        ``provider_message_id``: the id a later report would name, where the adapter chose it
        before sending (Kannel's ``dlr-url``), so that report can still settle the message.
        """
        return cls(
            "unknown",
            provider_message_id=provider_message_id,
            error=ErrorInfo(ProviderOutcomeUnknown.code, message),
        )


@dataclass(frozen=True, slots=True)
class ProviderReport:
    """One delivery report, read from the provider's push or poll answer."""

    provider_message_id: str
    status: ReportStatus
    #: The provider's own status word or number, kept for the status record's ``dlr``.
    provider_status: str
    occurred_at: datetime | None = None
    error: ErrorInfo | None = None
    #: The recipient as the provider reports it, where it does (useful for batch reports).
    to: str | None = None


@dataclass(frozen=True, slots=True)
class InboundCallback:
    """A delivery-report request as it arrived over HTTP, before any parsing."""

    method: str
    headers: Mapping[str, str]
    query: Mapping[str, str]
    body: bytes = b""


@dataclass(frozen=True, slots=True)
class InboundMessage:
    """One message a recipient sent back (a reply, a STOP, a bot command), as the provider
    pushed it to the report URL."""

    #: Who wrote, as the provider names them (digits, ``+`` digits, or a chat id).
    sender: str
    text: str = field(repr=False)
    provider_message_id: str
    received_at: datetime | None = None


@runtime_checkable
class ReadsInbound(Protocol):
    """Protocol: an adapter whose provider pushes inbound messages to the report URL."""

    def parse_inbound(self, callback: InboundCallback) -> list[InboundMessage]:
        """The inbound messages of a callback whose reports :meth:`parse_reports` accepted
        (so its signature, where the provider signs, is checked); ``[]`` if it has none."""
        ...


@runtime_checkable
class ProviderAdapter(Protocol):
    """Protocol: one provider account's wire format (or the simulator standing in for it)."""

    @property
    def code(self) -> ProviderCode: ...

    @property
    def max_batch(self) -> int:
        """Recipients one provider request can carry; 1 when there is no batch endpoint."""
        ...

    async def submit(self, request: SubmitRequest) -> SubmitOutcome: ...

    async def submit_batch(self, requests: Sequence[SubmitRequest]) -> list[SubmitOutcome]:
        """Submit many at once; one outcome per request, in the same order."""
        ...

    def parse_reports(self, callback: InboundCallback) -> list[ProviderReport]:
        """Read a pushed delivery-report request; ``[]`` if it carries none."""
        ...

    async def poll_reports(self, provider_message_ids: Sequence[str]) -> list[ProviderReport]:
        """Ask the provider for reports (providers without push); ``[]`` where none are new."""
        ...

    async def aclose(self) -> None: ...


#: Builds the live adapter of a connection from its decrypted credentials.
AdapterFactory = Callable[[Connection, Mapping[str, str]], ProviderAdapter]


@dataclass(frozen=True, slots=True)
class PollPolicy:
    """How a provider without pushed reports wants to be asked for them (D20).

    The worker starts a round for a connection at most once per ``interval`` (counted from
    the end of the previous round, in whichever process ran it), and a round makes at most
    ``calls_per_minute`` report calls. Since rounds are a minute apart or more, no minute
    ever sees more calls than that, however many workers share the connection.

    Each message is asked about first ``first_after`` its send, and again no sooner than
    ``again_after`` (default: ``interval``) after it was last asked: its provider reference
    carries that time (``ProviderRef.poll_after``), so the pace holds per message across
    processes, and the messages asked least recently are asked first.
    """

    interval: timedelta
    #: The cap on report calls in one round (so in any minute); ``None``: no cap.
    calls_per_minute: int | None = None
    first_after: timedelta = timedelta(0)
    again_after: timedelta | None = None

    def __post_init__(self) -> None:
        if self.interval < timedelta(minutes=1):
            raise ValueError("a poll interval is a minute or more (the call budget's window)")
        if self.calls_per_minute is not None and self.calls_per_minute < 1:
            raise ValueError("calls_per_minute must be at least 1")
        if self.first_after < timedelta(0):
            raise ValueError("first_after must not be negative")

    @property
    def again(self) -> timedelta:
        """The least time between two report queries about one message."""
        return self.interval if self.again_after is None else self.again_after


class ReportCalls:
    """The report calls one poll round may still make. An adapter takes one before each
    call to the provider and stops when it is refused; the round then knows it was cut
    short (:attr:`cut_short`) and asks about the rest next time.

    An adapter also says which provider message ids a call it made answered for
    (:meth:`cover`): a round cut short postpones those only, and the rest is asked first
    next round."""

    __slots__ = ("_left", "covered", "cut_short", "made")

    def __init__(self, limit: int | None) -> None:
        self._left = limit
        self.made = 0
        self.cut_short = False
        #: Ids a call of this round asked the provider about (whatever it answered).
        self.covered: set[str] = set()

    def take(self) -> bool:
        if self._left is not None and self._left <= 0:
            self.cut_short = True
            return False
        if self._left is not None:
            self._left -= 1
        self.made += 1
        return True

    def stop(self) -> None:
        """No more calls this round: the provider says it is over its limit (shared with
        another user of the account), or the adapter's own budget is spent."""
        self._left = 0
        self.cut_short = True

    def cover(self, provider_message_ids: Iterable[str]) -> None:
        """A call was made about these ids: they are not asked again until their policy's
        ``again`` has passed, whatever the provider answered."""
        self.covered.update(provider_message_ids)

    def __repr__(self) -> str:
        return f"ReportCalls(made={self.made}, left={self._left}, cut_short={self.cut_short})"


@runtime_checkable
class PacedPolling(Protocol):
    """Protocol: a polled adapter that counts its report calls against a round's budget."""

    async def poll_reports_within(
        self, provider_message_ids: Sequence[str], calls: ReportCalls
    ) -> list[ProviderReport]:
        """:meth:`ProviderAdapter.poll_reports`, taking one of ``calls`` before each call
        to the provider and returning what it has when one is refused."""
        ...


@runtime_checkable
class RepliesToReports(Protocol):
    """Protocol: an adapter whose provider wants a set body back for each report it pushes
    (Jasmin's DLR thrower sends a report again unless it reads ``ACK/Jasmin``)."""

    @property
    def report_reply(self) -> str: ...


#: A message id we mint for a provider whose answer carries none (Kannel): the job's id (our
#: ``msg_`` ids, :mod:`.._ids`) and the attempt's index. See :func:`minted_message_id`.
_MINTED: Final = re.compile(r"(msg_[0-9A-HJKMNP-TV-Z]{26})\.(\d{1,4})")


def minted_message_id(job_id: str, attempt: int) -> str:
    """The provider message id an adapter mints for ``attempt`` of ``job_id`` (Kannel's, in
    its ``dlr-url``), where the provider's answer carries none.

    Derived from what the send stores before any call (the write-ahead row's job id), never
    random: a report for a send whose outcome was never stored (the process died mid-call,
    or the submit timed out) still names its message (:func:`minted_job_id`, D10)."""
    return f"{job_id}.{attempt}"


def minted_job_id(provider_message_id: str) -> str | None:
    """The job a :func:`minted_message_id` names, or ``None`` if it is not one of ours."""
    found = _MINTED.fullmatch(provider_message_id)
    return found.group(1) if found else None


@runtime_checkable
class LimitsParts(Protocol):
    """Protocol: an adapter whose SMS part limit is the connection's own setting, not the
    provider's profile (``sms_e``: the gateway's ``max-messages`` / ``long_content_max_parts``)."""

    @property
    def max_parts(self) -> int: ...


def parts_limit(adapter: ProviderAdapter, provider: ProviderCode) -> int | None:
    """The most SMS parts one message may have through ``adapter`` (``None``: no part limit
    is known): the connection's setting where it has one, else the provider's profile."""
    if isinstance(adapter, LimitsParts):
        return adapter.max_parts
    return PROFILES[provider].max_parts


@dataclass(frozen=True, slots=True)
class ProviderProfile:
    """The facts about a provider that both its live adapter and its simulator obey."""

    code: ProviderCode
    name: str
    wire_format: str
    max_batch: int
    #: Longest text the provider takes, in characters.
    max_text_length: int
    #: Message headers the provider accepts (alphanumeric sender ids are at most 11 chars
    #: in GSM; numeric ones up to 16 digits). ``None`` for channels without senders.
    sender_pattern: re.Pattern[str] | None
    #: Does the provider push reports (else they are polled)? ``None``: no reports at all.
    pushes_reports: bool | None
    #: How the worker polls the provider for reports: set exactly where ``pushes_reports``
    #: is ``False``.
    poll: PollPolicy | None = field(default=None, kw_only=True)
    #: Can this provider's wire format send the Turkish national-language single-shift table
    #: (3GPP TS 23.038 A.2.1)? Where it cannot, text that would need it goes out as UCS-2
    #: whatever the connection's ``turkish_shift`` says, and is counted so (D24).
    turkish_shift: bool = field(default=False, kw_only=True)
    #: D27: the send rate a new connection gets, where the provider documents one: messages
    #: and provider calls a second (``None``: no documented limit, so none by default).
    max_rate: float | None = field(default=None, kw_only=True)
    max_calls: float | None = field(default=None, kw_only=True)
    #: Most SMS parts the provider takes in one message; a longer one makes it refuse the
    #: whole request it is in. ``None``: it documents no part limit (``max_text_length``
    #: still bounds the text).
    max_parts: int | None = field(default=None, kw_only=True)
    #: The IYS modes the provider's wire format can say (a connection may use only these):
    #: every mode, unless the provider documents no way to mark commercial traffic.
    iys_modes: frozenset[IysMode] = field(default=frozenset(IYS_MODES), kw_only=True)

    @property
    def channel(self) -> Channel:
        return CHANNEL_OF[self.code]

    def sender_problem(self, sender: str | None) -> str | None:
        """Why the provider would refuse this header, or ``None`` if it takes it."""
        if self.sender_pattern is None:
            return None
        if sender is None:
            return "the provider requires a message header"
        if not self.sender_pattern.fullmatch(sender):
            return "the message header must be 2-11 letters, digits, spaces, '.', '-' or '_'"
        return None

    def length_problem(self, text: str, encoding: Encoding | None = None) -> str | None:
        """Why the provider would refuse ``text`` as too long (``BODY_TOO_LONG``), or ``None``.

        The one place of each provider's length rule (D24): at most
        ``max_text_length`` characters, and at most ``max_parts`` SMS parts counted by
        :func:`~.._encoding.analyze_sms` in the ``encoding`` the message goes out in (the
        Turkish shift only where it is ``gsm7_turkish``; ``None``: this provider's own
        choice). Adapters and the simulator ask it before any call, so a text over the limit
        fails alone instead of making the provider refuse the batch it would ride in.
        """
        if len(text) > self.max_text_length:
            return f"{self.name} takes at most {self.max_text_length} characters of text."
        if self.max_parts is None:
            return None
        shift = self.turkish_shift if encoding is None else encoding == "gsm7_turkish"
        parts = analyze_sms(text, allow_turkish_shift=shift).segments
        if parts <= self.max_parts:
            return None
        return f"The text takes {parts} SMS parts; {self.name} takes at most {self.max_parts}."


def uses_turkish_shift(connection: Connection) -> bool:
    """May SMS text through ``connection`` use the Turkish single-shift table? Only where the
    connection allows it and its provider can send it: the one rule behind both the record's
    ``encoding``/``segments`` and the data coding an adapter puts on the wire."""
    return connection.turkish_shift and PROFILES[connection.provider].turkish_shift


# Alphanumeric sender ids (TP-OA, 3GPP TS 23.040) hold 11 GSM characters; Turkish operators
# also register numeric headers (short codes, 850 numbers) of up to 16 digits.
_SMS_HEADER = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ._-]{1,10}|\+?[0-9]{2,16}")

PROFILES: Final[Mapping[ProviderCode, ProviderProfile]] = {
    # NetGSM (encoding "TR"), Verimor (datacoding 1) and Mutlucell (charset "turkish") send
    # the single-shift table; İletimerkezi picks the coding from the text itself. Neither
    # Kannel's sendsms nor Jasmin's /send can build the shift-table UDH: Turkish text is UCS-2.
    # NetGSM: "10 report calls a minute" (code 80 past it); reports are asked every minute.
    "sms_a": ProviderProfile("sms_a", "NetGSM", "NetGSM REST v2", 100, 1600, _SMS_HEADER, False,
                             turkish_shift=True,
                             poll=PollPolicy(timedelta(minutes=1), calls_per_minute=10)),
    # İletimerkezi: 100 SMS a second per account (its API overview, from 2026-05-05); code 453
    # past 7 SMS (its error codes).
    "sms_b": ProviderProfile("sms_b", "İletimerkezi", "İletimerkezi JSON v1", 100, 1600,
                             _SMS_HEADER, True, turkish_shift=True, max_rate=100, max_parts=7),
    # Verimor's user guide (GENEL NOTLAR, since 2023-02-28): 240 send requests a minute, 4 a
    # second (429 past it); 7 parts at most (SMS BOY KARAKTER LİMİTLERİ: 1071 / 1043 / 469).
    "sms_c": ProviderProfile("sms_c", "Verimor", "Verimor v2", 100, 1600, _SMS_HEADER, True,
                             turkish_shift=True, max_calls=4, max_parts=7),
    # Mutlucell: a pack's first report query at least a minute after its send, then at most
    # every 15 minutes while it is pending, or the account is blocked (see mutlucell.py). A
    # round a minute, one call per pack; no cap is documented, so ours keeps a round small.
    # Its public documents and SDKs name no IYS attribute of a pack: informational only.
    "sms_d": ProviderProfile("sms_d", "Mutlucell", "Mutlucell XML", 100, 1600, _SMS_HEADER,
                             False, turkish_shift=True, iys_modes=frozenset({"informational"}),
                             poll=PollPolicy(timedelta(minutes=1), calls_per_minute=10,
                                             first_after=timedelta(minutes=1),
                                             again_after=timedelta(minutes=15))),
    "sms_e": ProviderProfile("sms_e", "SMS gateway", "Kannel sendsms or Jasmin HTTP API", 1,
                             1600, _SMS_HEADER, True, turkish_shift=False),
    # Telegram's Bot FAQ: no more than about 30 messages a second to many chats (429 past it).
    "chatbot": ProviderProfile("chatbot", "Telegram", "Telegram Bot API", 1, 4096, None, None,
                               max_rate=30),
    # WhatsApp Cloud API: 80 messages a second per business number by default (130429 past
    # it); numbers Meta upgraded to 1,000 raise the connection's max_rate.
    "bizchat": ProviderProfile("bizchat", "WhatsApp Cloud", "WhatsApp Cloud API", 1, 4096, None,
                               True, max_rate=80),
}  # fmt: skip
