"""İYS's date rules for a consent (D33), as properties over any moment: the pure functions of
``consents.rules`` that ``POST /v1/consents`` runs before anything is stored (its HTTP
answers are in ``lifecycle_http/test_consents_http.py``)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from unified_messaging.consents import (
    ConsentDateInFuture,
    ConsentDateNotAfterCurrent,
    ConsentDateTooEarly,
    ConsentDateTooOld,
    ConsentUnchanged,
    FirstConsentIsRet,
    Hs2015DateOnly,
)
from unified_messaging.consents.holidays import LAST_KNOWN_YEAR, is_business_day
from unified_messaging.consents.rules import (
    CONSENT_SOURCES,
    GMT3,
    IYS_START,
    check_change,
    earliest_consent_date,
    in_gmt3,
    iys_date,
)

#: Moments from İYS's start to well after today, to the second (İYS's resolution).
moments = st.datetimes(
    min_value=datetime(2015, 6, 1), max_value=datetime(2040, 12, 31), timezones=st.just(UTC)
).map(lambda m: m.replace(microsecond=0))
sources = st.sampled_from([s for s in CONSENT_SOURCES if s != "HS_2015"])


def business_days_between(older: datetime, newer: datetime) -> int:
    """Business days (in GMT+3) passed going back from ``newer`` to ``older``, a day at a
    time."""
    days, moment = 0, newer.astimezone(GMT3)
    while moment - timedelta(days=1) >= older:
        moment -= timedelta(days=1)
        days += is_business_day(moment.date())
    return days


def test_the_sources_are_iys_list_of_thirteen() -> None:
    assert CONSENT_SOURCES == (
        "HS_FIZIKSEL_ORTAM", "HS_ISLAK_IMZA", "HS_WEB", "HS_CAGRI_MERKEZI", "HS_SOSYAL_MEDYA",
        "HS_EPOSTA", "HS_MESAJ", "HS_MOBIL", "HS_EORTAM", "HS_ETKINLIK", "HS_2015", "HS_ATM",
        "HS_KARAR",
    )  # fmt: skip


@settings(deadline=None)
@given(now=moments)
def test_the_earliest_date_is_three_weekdays_back_at_the_same_time_of_day(now: datetime) -> None:
    earliest = earliest_consent_date(now)

    assert earliest.astimezone(GMT3).time() == now.astimezone(GMT3).time()
    assert is_business_day(earliest.astimezone(GMT3).date())
    assert earliest.astimezone(GMT3).weekday() < 5
    assert business_days_between(earliest, now) == 3
    # A weekend, and at most a Kurban Bayramı with its eve and the weekends around it, next to
    # other holidays: on 2 May 2029 the three days back are 30 April, 20 and 19 April (23 Nisan,
    # the Bayram and 1 Mayıs between), 13 days.
    assert timedelta(days=3) <= now - earliest <= timedelta(days=14)


@pytest.mark.parametrize(
    ("now", "earliest"),
    [
        # Ramazan Bayramı 2026 is Friday 20 March, its eve Thursday 19 March (afternoon).
        ("2026-03-23 10:00:00", "2026-03-16 10:00:00"),
        # 15 July 2026, a Wednesday.
        ("2026-07-17 10:00:00", "2026-07-13 10:00:00"),
        # Kurban Bayramı 2026: Wednesday 27 to Saturday 30 May; its eve Tuesday 26 May.
        ("2026-06-01 09:00:00", "2026-05-21 09:00:00"),
        # 29 October 2025, a Wednesday, and the afternoon of the 28th.
        ("2025-10-30 12:00:00", "2025-10-23 12:00:00"),
        # 1 January 2027 is a Friday.
        ("2027-01-04 08:00:00", "2026-12-29 08:00:00"),
        # An ordinary week: Wednesday back to the Friday before.
        ("2026-12-02 10:00:00", "2026-11-27 10:00:00"),
    ],
)
def test_official_holidays_are_not_business_days(now: str, earliest: str) -> None:
    moment = datetime.strptime(now, "%Y-%m-%d %H:%M:%S").replace(tzinfo=GMT3)
    assert iys_date(earliest_consent_date(moment)) == earliest


def test_the_religious_holidays_are_known_through_2032() -> None:
    assert LAST_KNOWN_YEAR == 2032
    assert not is_business_day(date(2032, 1, 14))  # Ramazan Bayramı 2032
    assert not is_business_day(date(2032, 3, 23))  # Kurban Bayramı 2032, its second day
    assert is_business_day(date(2033, 1, 3))  # past the table: weekdays and fixed days


@settings(deadline=None)
@given(now=moments, back=st.integers(min_value=0, max_value=10 * 86400), source=sources)
def test_a_date_is_accepted_exactly_when_it_is_within_three_business_days(
    now: datetime, back: int, source: str
) -> None:
    date = now - timedelta(seconds=back)
    if date >= earliest_consent_date(now):
        check_change(None, None, "ONAY", source, date, now)  # type: ignore[arg-type]
    else:
        with pytest.raises(ConsentDateTooOld):
            check_change(None, None, "ONAY", source, date, now)  # type: ignore[arg-type]


@settings(deadline=None)
@given(now=moments, ahead=st.integers(min_value=1, max_value=10**8), source=sources)
def test_a_date_in_the_future_is_refused(now: datetime, ahead: int, source: str) -> None:
    with pytest.raises(ConsentDateInFuture):
        check_change(None, None, "ONAY", source, now + timedelta(seconds=ahead), now)  # type: ignore[arg-type]


@settings(deadline=None)
@given(now=moments, before=st.integers(min_value=1, max_value=10**9))
def test_nothing_is_older_than_iys_start_not_even_hs_2015(now: datetime, before: int) -> None:
    date = IYS_START - timedelta(seconds=before)
    for source in ("HS_2015", "HS_WEB"):
        with pytest.raises(ConsentDateTooEarly):
            check_change(None, None, "ONAY", source, date, now)  # type: ignore[arg-type]


@settings(deadline=None)
@given(now=moments, date=moments)
def test_hs_2015_takes_2015_05_01_midnight_and_nothing_else(now: datetime, date: datetime) -> None:
    check_change(None, None, "ONAY", "HS_2015", IYS_START, now)
    if date != IYS_START and date <= now:
        with pytest.raises(Hs2015DateOnly):
            check_change(None, None, "ONAY", "HS_2015", date, now)


@settings(deadline=None)
@given(now=moments, gap=st.integers(min_value=-86400, max_value=0))
def test_a_change_must_be_dated_after_the_record_it_changes(now: datetime, gap: int) -> None:
    current = now - timedelta(hours=1)
    with pytest.raises(ConsentDateNotAfterCurrent):
        check_change("ONAY", current, "RET", "HS_WEB", current + timedelta(seconds=gap), now)
    check_change("ONAY", current, "RET", "HS_WEB", current + timedelta(seconds=1), now)


def test_the_status_rules() -> None:
    now = datetime(2026, 12, 2, 7, 0, tzinfo=UTC)
    with pytest.raises(FirstConsentIsRet):
        check_change(None, None, "RET", "HS_WEB", now, now)
    with pytest.raises(ConsentUnchanged):
        check_change("ONAY", None, "ONAY", "HS_WEB", now, now)
    with pytest.raises(ConsentUnchanged):
        check_change("RET", None, "RET", "HS_WEB", now, now)
    check_change("RET", None, "ONAY", None, None, now)  # TACIR: no date, no source


def test_dates_are_rendered_for_ismail_in_gmt3_to_the_second() -> None:
    assert iys_date(datetime(2026, 12, 1, 21, 30, 5, 999, tzinfo=UTC)) == "2026-12-02 00:30:05"
    assert in_gmt3(datetime(2026, 12, 1, 10, 0, 0, 500)) == datetime(2026, 12, 1, 10, tzinfo=GMT3)
