"""Verify's metrics (D34, D30): the call-site helpers that turn a verification's change
into labelled observations, so each call site in the service stays one line.

They record only into metrics that implement
:class:`~unified_messaging._observability.metrics.VerificationMetrics` (a :class:`Metrics`
written before Verify is left alone). Labels are closed vocabularies: channel, event,
mode, reason; never a recipient, an id or a code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._observability.metrics import NO_METRICS, VerificationMetrics

if TYPE_CHECKING:
    from .._observability.metrics import Metrics, Mode
    from ._records import Verification

__all__ = ["record_change", "record_refusal", "record_started"]


def _mode(verification: Verification) -> Mode:
    return "live" if verification.livemode else "test"


def record_started(metrics: Metrics, verification: Verification) -> None:
    """A new verification (a re-send is no new start)."""
    if metrics is NO_METRICS or not isinstance(metrics, VerificationMetrics):
        return
    metrics.verification(channel=verification.channel, event="started", mode=_mode(verification))


def record_change(metrics: Metrics, before: Verification, after: Verification) -> None:
    """A stored change: when it ended the verification, how; when it approved it, how long
    after its start."""
    if metrics is NO_METRICS or not isinstance(metrics, VerificationMetrics):
        return
    if after.status == before.status or after.status == "pending":
        return
    mode = _mode(after)
    metrics.verification(channel=after.channel, event=after.status, mode=mode)
    if after.status == "approved":
        seconds = max(0.0, (after.updated_at - after.created_at).total_seconds())
        metrics.verification_approved(channel=after.channel, mode=mode, seconds=seconds)


def record_refusal(metrics: Metrics, reason: str) -> None:
    """The SMS-pumping guard refused a start (``prefix`` or ``address``)."""
    if metrics is NO_METRICS or not isinstance(metrics, VerificationMetrics):
        return
    metrics.verification_refused(reason=reason)
