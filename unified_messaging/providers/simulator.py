"""The simulator: the provider a test API key talks to instead of a real one (DESIGN.md §6, D2).

It owns the magic recipients and what each one does, the simulated delivery reports (when each
becomes due, and handing each out once), the simulator's own push format for delivery reports,
and the record of every submission that feeds the pytest plugin's ``outbox``.

A :class:`Simulator` stands in for one provider code. It validates a request the way that
provider's adapter would (header, text length, recipient shape) before any magic, so a test key
fails where a live key would. It does no I/O and never sleeps: time comes from the injected
:class:`~unified_messaging._clock.Clock`, so a test moves a ``ManualClock`` to make reports due.

Magic recipients, for SMS codes and ``bizchat`` (``+90 555 000 00 XX``):

====  ==================================================================================
XX    behaviour
====  ==================================================================================
01    ``rejected`` at submit, ``PROVIDER_REJECTED``
02    ``recipient_failed`` at submit, ``IYS_CONSENT_MISSING``
03    ``unavailable`` at submit (a simulated time-out), ``PROVIDER_UNAVAILABLE``
04    accepted, report ``expired``
05    accepted, report ``rejected``
06    accepted, report ``failed``
07    accepted, report ``unknown``
08    accepted, no report ever
1N    ``rejected`` while ``request.attempt < N`` (N = 1-3), then accepted and ``delivered``
====  ==================================================================================

Any other valid recipient is accepted and reported ``delivered``. For ``chatbot``, chat id ``0``
and ``@unreachable_bot_user`` are ``CHAT_UNREACHABLE``; every other chat is accepted, with no
report (the channel has none: acceptance is final, D10).
"""

from __future__ import annotations

import heapq
import itertools
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Final

from .._clock import Clock
from .._domain import ErrorInfo
from .._errors import RequestInvalid
from .._types import Channel, ProviderCode
from .base import (
    PROFILES,
    InboundCallback,
    OutcomeKind,
    ProviderProfile,
    ProviderReport,
    ProviderTemplate,
    ReportStatus,
    SubmitOutcome,
    SubmitRequest,
)

__all__ = [
    "MAGIC_SUFFIXES",
    "SimulatedSubmission",
    "Simulator",
    "SimulatorSettings",
    "magic_suffix",
    "simulated_report",
]

# --- magic recipients ---------------------------------------------------------------------------

_MAGIC_PREFIX: Final = "+9055500000"
_MAGIC_LENGTH: Final = len(_MAGIC_PREFIX) + 2

_REJECT_AT_SUBMIT: Final = 1
_NO_IYS_CONSENT: Final = 2
_TIME_OUT: Final = 3
#: Endings accepted at submit whose report goes wrong later; ``None``: no report ever.
_REPORT_OF_SUFFIX: Final[Mapping[int, ReportStatus | None]] = {
    4: "expired",
    5: "rejected",
    6: "failed",
    7: "unknown",
    8: None,
}
#: ``1N``: the ending minus this is how many providers tried reject it.
_FIRST_N_REJECT_BASE: Final = 10

#: Every ending of ``+90 555 000 00 XX`` that means something; the rest behave normally.
MAGIC_SUFFIXES: Final[frozenset[int]] = frozenset((*range(1, 9), 11, 12, 13))
# Keyed by the two-digit text, so parsing is one slice and one dict lookup per submit.
_SUFFIX_OF_TEXT: Final[Mapping[str, int]] = {f"{n:02d}": n for n in MAGIC_SUFFIXES}

_UNREACHABLE_USER: Final = "@unreachable_bot_user"


def magic_suffix(to: str) -> int | None:
    """The magic ending ``XX`` of a normalized ``+90 555 000 00 XX`` recipient, else ``None``.

    Only the endings in :data:`MAGIC_SUFFIXES` count: ``magic_suffix("+905550000004") == 4``,
    while ``+905550000099`` is an ordinary number and gives ``None``.
    """
    if len(to) != _MAGIC_LENGTH or not to.startswith(_MAGIC_PREFIX):
        return None
    return _SUFFIX_OF_TEXT.get(to[len(_MAGIC_PREFIX) :])


# --- recipient shapes, as each channel's provider checks them ------------------------------------

_RECIPIENT_SHAPE: Final[Mapping[Channel, re.Pattern[str]]] = {
    "sms": re.compile(r"\+905[0-9]{9}"),
    "bizchat": re.compile(r"\+[0-9]{8,15}"),
    # Telegram chat ids are signed 52-bit integers (groups are negative); 20 digits bounds them.
    "chatbot": re.compile(r"-?[0-9]{1,20}|@[A-Za-z0-9_]{5,32}"),
}
_RECIPIENT_SHAPE_TEXT: Final[Mapping[Channel, str]] = {
    "sms": "a Turkish mobile number in E.164 (+905 and 9 digits)",
    "bizchat": "a phone number in E.164 (+ and 8-15 digits)",
    "chatbot": "an integer chat id or @ and 5-32 letters, digits or '_'",
}

# --- fixed outcomes and reports, built once because the simulator must stay cheap ----------------

_REJECTED: Final = SubmitOutcome.rejected(
    "PROVIDER_REJECTED", "The provider rejected the message (simulated)."
)
_NO_CONSENT: Final = SubmitOutcome.recipient_failed(
    "IYS_CONSENT_MISSING", "The recipient has no IYS consent for this sender (simulated)."
)
_TIMED_OUT: Final = SubmitOutcome.unavailable(
    "The provider did not answer before the time-out (simulated time-out)."
)

# Worded as Telegram words them, so code that shows the provider's message looks the same.
_CHAT_NOT_FOUND: Final = SubmitOutcome.recipient_failed(
    "CHAT_UNREACHABLE", "Bad Request: chat not found"
)
_CANNOT_INITIATE: Final = SubmitOutcome.recipient_failed(
    "CHAT_UNREACHABLE", "Forbidden: bot can't initiate conversation with a user"
)

_PROVIDER_WORD: Final[Mapping[ReportStatus, str]] = {
    "delivered": "DELIVERED",
    "expired": "EXPIRED",
    "rejected": "REJECTED",
    "failed": "UNDELIVERED",
    "unknown": "UNKNOWN",
    "pending": "PENDING",
}
#: Only reports that failed carry an error; ``expired`` and ``unknown`` say enough by status.
_REPORT_ERROR: Final[Mapping[ReportStatus, ErrorInfo]] = {
    "rejected": ErrorInfo("PROVIDER_REJECTED", "The operator rejected the message (simulated)."),
    "failed": ErrorInfo("RECIPIENT_UNREACHABLE", "The handset could not be reached (simulated)."),
}
_STATUS_OF_WORD: Final[Mapping[str, ReportStatus]] = {status: status for status in _PROVIDER_WORD}


@dataclass(frozen=True, slots=True)
class SimulatorSettings:
    """How a simulator behaves in time."""

    #: Delay between acceptance and the report becoming due; tests use ``timedelta(0)``.
    report_delay: timedelta = timedelta(seconds=2)

    def __post_init__(self) -> None:
        if self.report_delay < timedelta(0):
            raise ValueError("report_delay cannot be negative")


@dataclass(frozen=True, slots=True)
class SimulatedSubmission:
    """One message handed to a simulator, whatever became of it: an ``outbox`` entry."""

    job_id: str
    workspace_id: str
    connection_id: str
    provider: ProviderCode
    channel: Channel
    to: str
    text: str = field(repr=False)
    sender: str | None
    attempt: int
    outcome: OutcomeKind
    provider_message_id: str | None
    error: ErrorInfo | None
    at: datetime
    template: ProviderTemplate | None = None


@dataclass(frozen=True, slots=True)
class _PlannedReport:
    """The report a simulated submission will get, and when."""

    status: ReportStatus
    due_at: datetime
    to: str
    #: Tells a live heap entry from one left behind by a re-submission or a poll.
    seq: int


class Simulator:
    """A :class:`~unified_messaging.providers.base.ProviderAdapter` for test keys.

    Deterministic: the same requests at the same clock readings give the same outcomes, ids and
    reports. ``record`` is called with a :class:`SimulatedSubmission` for every submission.
    """

    def __init__(
        self,
        code: ProviderCode,
        *,
        clock: Clock,
        settings: SimulatorSettings | None = None,
        record: Callable[[SimulatedSubmission], None] | None = None,
    ) -> None:
        if code not in PROFILES:
            raise ValueError(f"unknown provider code {code!r}")
        self._code: ProviderCode = code
        self._profile: ProviderProfile = PROFILES[code]
        self._channel: Channel = self._profile.channel
        self._shape = _RECIPIENT_SHAPE[self._channel]
        self._clock = clock
        self._settings = settings or SimulatorSettings()
        self._record = record
        self._plans: dict[str, _PlannedReport] = {}
        # Due order for due_reports(); entries whose plan is gone are skipped when popped.
        self._queue: list[tuple[datetime, int, str]] = []
        self._seq = itertools.count()

    def __repr__(self) -> str:
        return f"Simulator(code={self._code!r})"

    @property
    def code(self) -> ProviderCode:
        return self._code

    @property
    def max_batch(self) -> int:
        return self._profile.max_batch

    @property
    def settings(self) -> SimulatorSettings:
        return self._settings

    # --- submitting -----------------------------------------------------------------------------

    async def submit(self, request: SubmitRequest) -> SubmitOutcome:
        return self._submit(request)

    async def submit_batch(self, requests: Sequence[SubmitRequest]) -> list[SubmitOutcome]:
        """One outcome per request, in order; more than :attr:`max_batch` is a caller bug."""
        if len(requests) > self.max_batch:
            raise ValueError(
                f"{self._code} takes at most {self.max_batch} messages per batch, "
                f"got {len(requests)}"
            )
        return [self._submit(request) for request in requests]

    def _submit(self, request: SubmitRequest) -> SubmitOutcome:
        now = self._clock.now()
        outcome, report = self._decide(request)
        if report is not None and outcome.provider_message_id is not None:
            self._plan(outcome.provider_message_id, report, request.to, now)
        if self._record is not None:
            self._record(_submission(request, self._code, self._channel, outcome, now))
        return outcome

    def _decide(self, request: SubmitRequest) -> tuple[SubmitOutcome, ReportStatus | None]:
        """The outcome of a submission and the report it plans, if any."""
        refusal = self._refusal(request)
        if refusal is not None:
            return refusal, None
        if self._channel == "chatbot":
            return self._decide_chat(request)
        return self._decide_number(request)

    def _refusal(self, request: SubmitRequest) -> SubmitOutcome | None:
        """What the real provider would refuse before looking at who the recipient is."""
        header_problem = self._profile.sender_problem(request.sender)
        if header_problem is not None:
            return SubmitOutcome.rejected("PROVIDER_REJECTED", f"Invalid header: {header_problem}.")
        text_problem = self._text_problem(request)
        if text_problem is not None:
            return text_problem
        if request.iys_mode not in self._profile.iys_modes:  # Mutlucell: informational only
            return SubmitOutcome.rejected(
                "IYS_NOT_CONFIGURED", f"{self._profile.name} cannot mark messages commercial (IYS)."
            )
        if self._shape.fullmatch(request.to) is None:
            return SubmitOutcome.recipient_failed(
                "INVALID_RECIPIENT",
                f"The recipient must be {_RECIPIENT_SHAPE_TEXT[self._channel]}.",
            )
        return None

    def _text_problem(self, request: SubmitRequest) -> SubmitOutcome | None:
        # A bizchat provider template is rendered by the provider, so our text is not sent.
        if request.template is not None and self._channel == "bizchat":
            return None
        if not request.text:
            return SubmitOutcome.rejected("PROVIDER_REJECTED", "The message text is empty.")
        too_long = self._profile.length_problem(request.text, request.encoding)
        if too_long is not None:  # the live adapters' own check, before any call
            return SubmitOutcome.rejected("BODY_TOO_LONG", too_long)
        return None

    def _decide_chat(self, request: SubmitRequest) -> tuple[SubmitOutcome, ReportStatus | None]:
        to = request.to
        # Telegram reads "00" as chat 0 and usernames case-insensitively.
        if to[0] != "@" and int(to) == 0:
            return _CHAT_NOT_FOUND, None
        if to.lower() == _UNREACHABLE_USER:
            return _CANNOT_INITIATE, None
        return self._accepted(request), None

    def _decide_number(self, request: SubmitRequest) -> tuple[SubmitOutcome, ReportStatus | None]:
        suffix = magic_suffix(request.to)
        if suffix == _REJECT_AT_SUBMIT:
            return _REJECTED, None
        if suffix == _NO_IYS_CONSENT:
            return _NO_CONSENT, None
        if suffix == _TIME_OUT:
            return _TIMED_OUT, None
        if suffix is None:
            return self._accepted(request), "delivered"
        if suffix in _REPORT_OF_SUFFIX:
            return self._accepted(request), _REPORT_OF_SUFFIX[suffix]
        if request.attempt < suffix - _FIRST_N_REJECT_BASE:
            return _REJECTED, None
        return self._accepted(request), "delivered"

    def _accepted(self, request: SubmitRequest) -> SubmitOutcome:
        return SubmitOutcome.accepted(f"sim-{self._code}-{request.job_id}-{request.attempt}")

    # --- reports --------------------------------------------------------------------------------

    def _plan(self, message_id: str, status: ReportStatus, to: str, now: datetime) -> None:
        seq = next(self._seq)
        due_at = now + self._settings.report_delay
        self._plans[message_id] = _PlannedReport(status, due_at, to, seq)
        heapq.heappush(self._queue, (due_at, seq, message_id))

    def planned_report(self, provider_message_id: str) -> tuple[ReportStatus, datetime] | None:
        """The status and due time of a report not yet handed out; ``None`` if there is none.

        ``None`` too for messages that never get a report (``08``, ``chatbot``, refusals) and
        for reports already returned.
        """
        plan = self._plans.get(provider_message_id)
        return None if plan is None else (plan.status, plan.due_at)

    def take_planned_report(self, provider_message_id: str) -> tuple[ReportStatus, datetime] | None:
        """:meth:`planned_report`, handed over: the caller keeps it (the lifecycle stores it as
        a durable work item), so the simulator forgets it and a long-running server's
        memory stays flat however many test sends it takes."""
        plan = self._plans.pop(provider_message_id, None)
        if plan is None:
            return None
        self._compact_queue()
        return plan.status, plan.due_at

    async def poll_reports(self, provider_message_ids: Sequence[str]) -> list[ProviderReport]:
        """The due, not yet returned reports among these ids; unknown ids are ignored.

        Only final reports are planned, so a message not yet due gives nothing (not ``pending``).
        """
        now = self._clock.now()
        reports: list[ProviderReport] = []
        for message_id in provider_message_ids:
            plan = self._plans.get(message_id)
            if plan is not None and plan.due_at <= now:
                del self._plans[message_id]
                reports.append(_planned_report(message_id, plan))
        self._compact_queue()
        return reports

    def due_reports(self) -> list[ProviderReport]:
        """Every due report not yet returned, in due order: for a worker with no id list."""
        now = self._clock.now()
        reports: list[ProviderReport] = []
        while self._queue and self._queue[0][0] <= now:
            _, seq, message_id = heapq.heappop(self._queue)
            plan = self._plans.get(message_id)
            if plan is not None and plan.seq == seq:
                del self._plans[message_id]
                reports.append(_planned_report(message_id, plan))
        return reports

    def _compact_queue(self) -> None:
        # poll_reports leaves its heap entries behind; rebuild before they outgrow the plans.
        if len(self._queue) <= 2 * len(self._plans) + 64:
            return
        self._queue = [(plan.due_at, plan.seq, mid) for mid, plan in self._plans.items()]
        heapq.heapify(self._queue)

    def parse_reports(self, callback: InboundCallback) -> list[ProviderReport]:
        """Read the simulator's push format: a JSON object, or a JSON list of them.

        Each object is ``{"provider_message_id": str, "status": str, "provider_status": str}``
        with ``status`` one of ``delivered``, ``expired``, ``rejected``, ``failed``, ``unknown``
        or ``pending``; ``provider_status`` is optional (defaults to the status in capitals) and
        other keys are ignored. An empty body carries no reports (``[]``). Anything else that
        cannot be read (not JSON, not UTF-8, wrong types, unknown status) raises
        :class:`~unified_messaging._errors.RequestInvalid`, so a delivery-report endpoint answers
        400 to garbage rather than dropping it silently.
        """
        if not callback.body.strip():
            return []
        try:
            document: object = json.loads(callback.body)
        except (ValueError, RecursionError) as exc:
            # ValueError covers bad JSON and bad UTF-8; RecursionError absurdly deep nesting.
            raise RequestInvalid("The delivery report body is not valid JSON.") from exc
        if isinstance(document, list):
            return [_pushed_report(item, f"[{index}]") for index, item in enumerate(document)]
        return [_pushed_report(document, "")]

    async def aclose(self) -> None:
        """Nothing to release: the simulator holds no connections."""


def _submission(
    request: SubmitRequest,
    code: ProviderCode,
    channel: Channel,
    outcome: SubmitOutcome,
    at: datetime,
) -> SimulatedSubmission:
    return SimulatedSubmission(
        job_id=request.job_id,
        workspace_id=request.workspace_id,
        connection_id=request.connection_id,
        provider=code,
        channel=channel,
        to=request.to,
        text=request.text,
        sender=request.sender,
        attempt=request.attempt,
        outcome=outcome.kind,
        provider_message_id=outcome.provider_message_id,
        error=outcome.error,
        at=at,
        template=request.template,
    )


def simulated_report(
    message_id: str, status: str, *, occurred_at: datetime | None = None, to: str | None = None
) -> ProviderReport:
    """The report the simulator gives for ``status`` (a durable work item carries the word)."""
    found = _STATUS_OF_WORD.get(status)
    if found is None:
        raise ValueError(f"not a simulated report status: {status!r}")
    return ProviderReport(
        provider_message_id=message_id,
        status=found,
        provider_status=_PROVIDER_WORD[found],
        occurred_at=occurred_at,
        error=_REPORT_ERROR.get(found),
        to=to,
    )


def _planned_report(message_id: str, plan: _PlannedReport) -> ProviderReport:
    return ProviderReport(
        provider_message_id=message_id,
        status=plan.status,
        provider_status=_PROVIDER_WORD[plan.status],
        occurred_at=plan.due_at,
        error=_REPORT_ERROR.get(plan.status),
        to=plan.to,
    )


def _pushed_report(item: object, path: str) -> ProviderReport:
    """One object of the push format, or ``RequestInvalid`` naming the field at ``path``."""
    if not isinstance(item, dict):
        raise RequestInvalid.for_field(path or "body", "must be a JSON object")
    message_id = item.get("provider_message_id")
    if not isinstance(message_id, str) or not message_id:
        raise RequestInvalid.for_field(
            f"{path}.provider_message_id".lstrip("."), "must be a non-empty string"
        )
    status_word = item.get("status")
    status = _STATUS_OF_WORD.get(status_word) if isinstance(status_word, str) else None
    if status is None:
        raise RequestInvalid.for_field(
            f"{path}.status".lstrip("."), f"must be one of {', '.join(_STATUS_OF_WORD)}"
        )
    provider_status = item.get("provider_status", _PROVIDER_WORD[status])
    if not isinstance(provider_status, str):
        raise RequestInvalid.for_field(f"{path}.provider_status".lstrip("."), "must be a string")
    return ProviderReport(
        provider_message_id=message_id,
        status=status,
        provider_status=provider_status,
        error=_REPORT_ERROR.get(status),
    )
