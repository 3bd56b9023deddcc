"""Reports that settle a send cut off mid-call, through the message id we minted for it.

Where a provider's answer carries no message id (Kannel's ``sendsms``), the adapter mints one
and hands it over with the message (Kannel: in the ``dlr-url``). That id is the job's id and
the attempt's index (:func:`~..providers.base.minted_message_id`): both are in the send's
write-ahead row before any call. So when the send never stored its outcome (the process died
mid-call, or the submit timed out: the row ends ``unknown`` with ``SUBMIT_INTERRUPTED`` and
no provider ref), the provider's report still names its message, and settles it as D10
promises a late report may. Nothing more is written ahead: the id *is* the job's id.

The claim is narrow: only a message of the connection's own workspace and mode, ended
``unknown`` by its submit check, whose last attempt has no provider id yet. That attempt
becomes the connection's, under the reported id, and the report applies to it as to any other
(``rules.apply_report``). The job id is 80 random bits (:mod:`.._ids`) and reports come in on
the connection's secret ``dlr_token`` path: only the gateway we handed the id to can name it.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from .._domain import Connection, MessageRecord
from ..providers.base import ProviderReport, minted_job_id
from .rules import SUBMIT_INTERRUPTED, Transition, apply_report

__all__ = ["claimable", "minted_job", "settle_interrupted"]


def minted_job(report: ProviderReport) -> str | None:
    """The job ``report`` names by a minted id (``None``: a provider's own id)."""
    return minted_job_id(report.provider_message_id)


def claimable(record: MessageRecord, connection: Connection) -> bool:
    """Whether a minted id's report through ``connection`` may settle ``record``: a send of
    the connection's workspace cut off mid-call, whose provider id was never stored."""
    return (
        record.workspace_id == connection.workspace_id
        and record.status == "unknown"
        and record.error == SUBMIT_INTERRUPTED
        and bool(record.attempts)
        and record.attempts[-1].provider_message_id is None
    )


def settle_interrupted(
    record: MessageRecord, connection: Connection, report: ProviderReport, *, now: datetime
) -> Transition:
    """``report`` applied to the cut-off send ``record`` (see :func:`claimable`): its last
    attempt becomes ``connection``'s, under the reported id, then the report is applied to
    it. Unchanged if ``record`` is no longer claimable (a report got there first)."""
    if not claimable(record, connection):
        return Transition(record, changed=False)
    last = replace(
        record.attempts[-1],
        provider=connection.provider,
        provider_message_id=report.provider_message_id,
    )
    claimed = replace(record, provider=connection.provider, attempts=(*record.attempts[:-1], last))
    return apply_report(claimed, report, now=now)
