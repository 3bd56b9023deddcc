"""Delivery reports that arrive before their message's provider id is stored.

A provider may report on a message before the send that handed it over has stored the
provider's answer: its report reaches ``/v1/dlr/…`` while our own transaction is still on
its way. Such a report is kept as a durable work item of its own, stored before the report
request is answered, that looks for the provider message id after 1 s, 2 s, 4 s … (at most a
minute apart) and applies the report once the id is there, or gives up after
:data:`KEEP_FOR`. Nothing can slip between the two: the item keeps looking until the send's
transaction has committed, in whichever process either of them ran.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from .._domain import ErrorInfo
from ..providers.base import ProviderReport, ReportStatus
from ..store.base import JsonValue, WorkItem

__all__ = ["KEEP_FOR", "WORK_EARLY_REPORT", "KeptReport", "keep", "kept", "next_look"]

WORK_EARLY_REPORT: Final = "dlr_orphan"
#: How long an early report waits for its message at least (longer when the submit
#: time-out is, since a submit that ends late stores its provider ids that late).
KEEP_FOR: Final = timedelta(minutes=10)
#: The longest wait between two looks for the message.
MAX_WAIT: Final = timedelta(minutes=1)
_STATUSES: Final[tuple[ReportStatus, ...]] = (
    "delivered", "expired", "rejected", "failed", "unknown",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class KeptReport:
    """What a kept report's work item holds."""

    connection_id: str
    livemode: bool
    report: ProviderReport
    #: When it stops looking.
    until: datetime


def keep(
    connection_id: str, report: ProviderReport, *, livemode: bool, now: datetime, until: datetime
) -> WorkItem:
    """The work item keeping ``report`` (not ``pending``: that one would change nothing).
    Its id is the report's own, so a provider repeating it (until it hears 200) keeps one."""
    key = json.dumps([connection_id, livemode, report.provider_message_id, report.status])
    error = report.error
    occurred = report.occurred_at
    return WorkItem(
        id=f"orph_{hashlib.sha256(key.encode()).hexdigest()[:32]}",
        kind=WORK_EARLY_REPORT,
        ref=connection_id,
        due_at=now + _wait(1),
        created_at=now,
        payload={
            "connection_id": connection_id,
            "livemode": livemode,
            "provider_message_id": report.provider_message_id,
            "status": report.status,
            "provider_status": report.provider_status,
            "occurred_at": None if occurred is None else occurred.isoformat(),
            "error": None if error is None else {"code": error.code, "message": error.message},
            "to": report.to,
            "until": until.isoformat(),
        },
    )


def kept(payload: Mapping[str, JsonValue]) -> KeptReport:
    """The report a :func:`keep` item holds."""
    error, occurred, to = payload.get("error"), payload.get("occurred_at"), payload.get("to")
    report = ProviderReport(
        provider_message_id=str(payload["provider_message_id"]),
        status=_status(str(payload["status"])),
        provider_status=str(payload["provider_status"]),
        occurred_at=datetime.fromisoformat(occurred) if isinstance(occurred, str) else None,
        error=ErrorInfo(str(error["code"]), str(error["message"]))
        if isinstance(error, dict)
        else None,
        to=to if isinstance(to, str) else None,
    )
    until = datetime.fromisoformat(str(payload["until"]))
    return KeptReport(str(payload["connection_id"]), bool(payload["livemode"]), report, until)


def next_look(looks: int, now: datetime, until: datetime) -> datetime | None:
    """When to look again after ``looks`` looks, or ``None``: its time is up."""
    if now >= until:
        return None
    return min(now + _wait(looks + 1), until)


def _wait(look: int) -> timedelta:
    """The wait before the ``look``-th look: 1 s, 2 s, 4 s … at most :data:`MAX_WAIT`."""
    return min(timedelta(seconds=2 ** min(max(look - 1, 0), 16)), MAX_WAIT)


def _status(name: str) -> ReportStatus:
    for status in _STATUSES:
        if status == name:
            return status
    raise ValueError(f"unknown report status {name!r}")
