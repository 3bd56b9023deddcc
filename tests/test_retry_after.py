"""The one ``Retry-After`` reader: never raises, ASCII digits only, bounded."""

from __future__ import annotations

import email.utils
from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from unified_messaging._retry_after import MAX_RETRY_AFTER, bounded_wait, parse_retry_after

NOW = datetime(2026, 1, 1, tzinfo=UTC)


@given(st.one_of(st.none(), st.text(), st.text(alphabet="0123456789 \t²³¹٣٠,.-+e")))
def test_any_value_reads_as_none_or_a_bounded_wait(value: str | None) -> None:
    seconds = parse_retry_after(value, now=NOW)
    assert seconds is None or 0.0 <= seconds <= MAX_RETRY_AFTER


@given(st.integers(min_value=0, max_value=10**30))
def test_delay_seconds_read_as_themselves_up_to_the_bound(n: int) -> None:
    expected = min(float(n), MAX_RETRY_AFTER) if len(str(n)) <= 15 else None
    assert parse_retry_after(f" {n} ", now=NOW) == expected


@given(st.text(alphabet=st.characters(categories=["Nd", "No"]), min_size=1))
def test_only_ascii_digits_are_delay_seconds(value: str) -> None:
    if not value.isascii():
        assert parse_retry_after(value, now=NOW) is None


@given(st.integers(min_value=-(10**6), max_value=10**6))
def test_an_http_date_is_the_time_until_it(offset: int) -> None:
    when = NOW + timedelta(seconds=offset)
    value = email.utils.format_datetime(when, usegmt=True)
    assert parse_retry_after(value, now=NOW) == min(max(0.0, float(offset)), MAX_RETRY_AFTER)


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_a_providers_numeric_wait_is_bounded_or_refused(seconds: float) -> None:
    wait = bounded_wait(seconds)
    assert wait is None or 0.0 <= wait <= MAX_RETRY_AFTER
    if 0 <= seconds <= MAX_RETRY_AFTER:
        assert wait == seconds
