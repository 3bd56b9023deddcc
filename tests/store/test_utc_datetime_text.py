"""``UtcDateTime`` on SQLite binds in one step, and reads in one: the text must
stay exactly what ``process_bind_param`` followed by SQLAlchemy's own DATETIME processor
writes, since stored times are compared as text (due work, time-outs, retention), and a
read must give what SQLAlchemy's DATETIME processor and ``process_result_value`` gave."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
import sqlalchemy as sa
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy.dialects import sqlite

from unified_messaging.store._tables import UtcDateTime

DIALECT = sqlite.dialect()  # type: ignore[no-untyped-call]


def two_steps(value: datetime) -> object:
    """What SQLAlchemy would bind without the one-step processor."""
    naive = UtcDateTime().process_bind_param(value, DIALECT)
    process = sa.DateTime().dialect_impl(DIALECT).bind_processor(DIALECT)
    assert process is not None
    return process(naive)


@given(
    st.datetimes(
        min_value=datetime(1, 1, 2),
        max_value=datetime(9999, 12, 30),
        timezones=st.sampled_from(
            [UTC, timezone(timedelta(hours=3)), timezone(-timedelta(hours=5, minutes=30))]
        ),
    )
)
def test_the_one_step_text_is_the_two_step_text(value: datetime) -> None:
    process = UtcDateTime().bind_processor(DIALECT)
    assert process is not None
    assert process(value) == two_steps(value)


def test_none_stays_none_and_naive_datetimes_are_refused() -> None:
    process = UtcDateTime().bind_processor(DIALECT)
    assert process is not None
    assert process(None) is None
    with pytest.raises(ValueError, match="timezone-aware"):
        process(datetime(2026, 1, 1))


def two_steps_back(text: str) -> object:
    """What SQLAlchemy would return without the one-step result processor."""
    process = sa.DateTime().dialect_impl(DIALECT).result_processor(DIALECT, None)
    assert process is not None
    return UtcDateTime().process_result_value(process(text), DIALECT)


@given(
    st.datetimes(
        min_value=datetime(1, 1, 2),
        max_value=datetime(9999, 12, 30),
        timezones=st.sampled_from(
            [UTC, timezone(timedelta(hours=3)), timezone(-timedelta(hours=5, minutes=30))]
        ),
    )
)
def test_the_one_step_read_is_the_two_step_read(value: datetime) -> None:
    """The stored text read back: the same instant, in UTC, as SQLAlchemy's two steps."""
    bind = UtcDateTime().bind_processor(DIALECT)
    result = UtcDateTime().result_processor(DIALECT, None)
    assert bind is not None and result is not None
    text = bind(value)
    back = result(text)
    assert back == two_steps_back(text) == value
    assert back.tzinfo is UTC
