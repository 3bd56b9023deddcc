"""The delivery state machine (D10): every (state, report) pair, time-outs, idempotency."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from itertools import product

import pytest
from hypothesis import given
from hypothesis import strategies as st

from unified_messaging._domain import Attempt, ErrorInfo, MessageRecord
from unified_messaging._lifecycle.rules import (
    FINAL_STATUSES,
    TRANSITIONS,
    apply_report,
    apply_timeout,
    can_transition,
)
from unified_messaging.providers.base import ProviderReport

T0 = datetime(2026, 3, 1, tzinfo=UTC)
LATER = T0 + timedelta(minutes=5)
STATES = ("queued", "sent", "delivered", "expired", "rejected", "failed", "unknown")
REPORTS = ("pending", "delivered", "expired", "rejected", "failed", "unknown")


def record(
    status: str = "sent", *, fallback: tuple[str, ...] = (), attempts: int = 1
) -> MessageRecord:
    tries = tuple(
        Attempt(
            provider=p,
            status="accepted" if i == attempts - 1 else "unknown",
            at=T0,
            provider_message_id=f"pm-{i}",
        )
        for i, p in enumerate(["sms_a", "sms_b", "sms_c"][:attempts])
    )
    if status == "queued":
        tries = ()
    if status == "unknown":  # how a message becomes unknown: its last attempt timed out
        tries = (*tries[:-1], replace(tries[-1], status="unknown"))
    return MessageRecord(
        job_id="msg_1",
        workspace_id="ws_1",
        livemode=True,
        status=status,  # type: ignore[arg-type]
        to="+905551234567",
        channel="sms",
        provider="sms_a",
        created_at=T0,
        updated_at=T0,
        text="hi",
        sender="ACME",
        sent_at=T0,
        attempts=tries,
        fallback_left=fallback,  # type: ignore[arg-type]
    )


def report(status: str, pm: str = "pm-0") -> ProviderReport:
    return ProviderReport(provider_message_id=pm, status=status, provider_status=status.upper())  # type: ignore[arg-type]


@pytest.mark.parametrize(("state", "status"), list(product(STATES, REPORTS)))
def test_every_state_and_report_pair_follows_d10(state: str, status: str) -> None:
    before = record(state)
    result = apply_report(before, report(status), now=LATER)
    after = result.record.status
    if state == "queued" or status == "pending":
        assert result.record == before  # no attempt to report on, or nothing final yet
    elif state == "sent":
        assert after == status
        assert result.event == f"message.{status}"
        assert result.record.final_at == LATER
        assert result.record.dlr is not None and result.record.dlr.status == status
    elif state == "unknown":
        # The attempt of an unknown message is still open: a late report may replace it.
        if status == "unknown":
            assert not result.changed
        else:
            assert after == status
    else:
        assert after == state  # final states are terminal
    if after != state:
        assert can_transition(state, after)  # type: ignore[arg-type]


def test_only_d10_transitions_are_legal() -> None:
    assert ("delivered", "failed") not in TRANSITIONS
    assert ("failed", "sent") not in TRANSITIONS
    assert ("queued", "delivered") in TRANSITIONS  # chatbot: no receipts, success is final
    assert ("unknown", "queued") in TRANSITIONS  # only over SUBMIT_INTERRUPTED (check_move)
    assert ("delivered", "queued") not in TRANSITIONS
    assert all(source not in FINAL_STATUSES - {"unknown"} for source, _ in TRANSITIONS)


@pytest.mark.parametrize("status", ["failed", "rejected"])
def test_failure_report_with_fallback_left_asks_for_redispatch(status: str) -> None:
    result = apply_report(record(fallback=("sms_b",)), report(status), now=LATER)
    assert result.fallback is True
    assert result.event == "message.fallback"
    assert result.record.status == "sent"
    assert result.record.attempts[0].status == status
    assert result.record.final_at is None


@pytest.mark.parametrize("status", ["delivered", "expired", "unknown"])
def test_non_failure_reports_end_the_message_even_with_fallback_left(status: str) -> None:
    result = apply_report(record(fallback=("sms_b",)), report(status), now=LATER)
    assert result.fallback is False
    assert result.record.status == status


def test_failure_without_fallback_carries_an_error() -> None:
    result = apply_report(record(), report("rejected"), now=LATER)
    assert result.record.error == ErrorInfo(
        "PROVIDER_REJECTED", "The provider rejected the message."
    )
    given_error = ErrorInfo("GSM_ERROR_1", "absent subscriber")
    failed = ProviderReport("pm-0", "failed", "UNDELIVERED", error=given_error)
    assert apply_report(record(), failed, now=LATER).record.error == given_error


def test_duplicate_report_is_idempotent() -> None:
    once = apply_report(record(), report("delivered"), now=LATER).record
    twice = apply_report(once, report("delivered"), now=LATER + timedelta(hours=1))
    assert not twice.changed
    assert twice.record == once


def test_out_of_order_reports_keep_the_first_final_answer() -> None:
    delivered = apply_report(record(), report("delivered"), now=LATER).record
    late_failure = apply_report(delivered, report("failed"), now=LATER)
    assert late_failure.record.status == "delivered"
    assert not late_failure.changed


def test_pending_after_final_changes_nothing() -> None:
    delivered = apply_report(record(), report("delivered"), now=LATER).record
    assert not apply_report(delivered, report("pending"), now=LATER).changed


def test_report_for_a_superseded_attempt_updates_that_attempt_only() -> None:
    current = record(attempts=2)
    result = apply_report(current, report("delivered", pm="pm-0"), now=LATER)
    assert result.changed
    assert result.event is None
    assert result.record.status == "sent"
    assert result.record.attempts[0].status == "delivered"
    assert result.record.attempts[1].status == "accepted"


def test_report_for_an_unknown_message_id_is_ignored() -> None:
    result = apply_report(record(), report("delivered", pm="nope"), now=LATER)
    assert not result.changed


def test_timeout_with_fallback_left_asks_for_redispatch() -> None:
    result = apply_timeout(record(fallback=("sms_b", "sms_c")), now=LATER)
    assert result.fallback
    assert result.event == "message.fallback"
    assert result.record.attempts[-1].status == "unknown"


def test_timeout_without_fallback_ends_unknown_and_a_late_report_replaces_it() -> None:
    timed_out = apply_timeout(record(), now=LATER)
    assert timed_out.record.status == "unknown"
    assert timed_out.event == "message.unknown"
    late = apply_report(timed_out.record, report("delivered"), now=LATER + timedelta(hours=2))
    assert late.record.status == "delivered"
    assert late.event == "message.delivered"


@pytest.mark.parametrize("state", [s for s in STATES if s != "sent"])
def test_timeout_only_touches_sent_messages(state: str) -> None:
    assert not apply_timeout(record(state), now=LATER).changed


def test_timeout_after_a_report_changes_nothing() -> None:
    delivered = apply_report(record(), report("delivered"), now=LATER).record
    assert not apply_timeout(delivered, now=LATER).changed


@given(st.lists(st.sampled_from(REPORTS), max_size=12))
def test_any_report_sequence_only_makes_legal_moves(statuses: list[str]) -> None:
    current = record()
    for status in statuses:
        before = current.status
        current = apply_report(current, report(status), now=LATER).record
        assert current.status == before or can_transition(before, current.status)
    if any(s in ("delivered", "expired", "rejected", "failed") for s in statuses):
        first_final = next(
            s for s in statuses if s in ("delivered", "expired", "rejected", "failed")
        )
        assert current.status == first_final or (
            "unknown" in statuses and statuses.index("unknown") < statuses.index(first_final)
        )


def test_replace_keeps_frozen_records_unchanged() -> None:
    before = record()
    apply_report(before, report("delivered"), now=LATER)
    assert before.status == "sent"
    assert replace(before) == before


@pytest.mark.parametrize("code", ["IYS_CONSENT_MISSING", "INVALID_RECIPIENT", "DUPLICATE_MESSAGE"])
def test_recipient_level_failure_report_does_not_fall_back(code: str) -> None:
    failed = ProviderReport("pm-0", "rejected", "16", error=ErrorInfo(code, "refused"))
    result = apply_report(record(fallback=("sms_b",)), failed, now=LATER)
    assert result.fallback is False
    assert result.record.status == "rejected"
    assert result.record.error is not None and result.record.error.code == code
