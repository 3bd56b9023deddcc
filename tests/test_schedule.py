"""The rules of ``_schedule``: the ``send_at`` window and quiet hours, as pure
functions of a moment (no clock, no store)."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from unified_messaging import QuietHours, RequestInvalid, SendAtOutOfRange, parse_quiet_hours
from unified_messaging._schedule import check_send_at, hand_over_at

ISTANBUL = ZoneInfo("Europe/Istanbul")
NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
NIGHT = parse_quiet_hours("21:00-09:00")  # Istanbul, commercial sends


def istanbul(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 3, day, hour, minute, tzinfo=ISTANBUL)


def test_send_at_is_from_now_up_to_thirty_days_ahead() -> None:
    assert check_send_at(NOW, NOW) == NOW
    assert check_send_at(NOW + timedelta(days=30), NOW) == NOW + timedelta(days=30)
    for refused in (NOW - timedelta(microseconds=1), NOW + timedelta(days=30, seconds=1)):
        with pytest.raises(SendAtOutOfRange):
            check_send_at(refused, NOW)


@pytest.mark.parametrize(
    ("moment", "opens"),
    [
        (istanbul(2, 20, 59), None),
        (istanbul(2, 21, 0), istanbul(3, 9)),  # the start is inside
        (istanbul(2, 23, 30), istanbul(3, 9)),  # over midnight: the next morning
        (istanbul(3, 3, 0), istanbul(3, 9)),  # after midnight: this morning
        (istanbul(3, 9, 0), None),  # the end is outside
    ],
)
def test_a_window_over_midnight(moment: datetime, opens: datetime | None) -> None:
    assert NIGHT.opens_at(moment) == opens


def test_a_window_within_a_day_and_in_another_zone() -> None:
    lunch = QuietHours(time(12), time(13, 30), zone="UTC", scope="all")
    assert lunch.opens_at(datetime(2026, 3, 2, 11, 59, tzinfo=UTC)) is None
    assert lunch.opens_at(datetime(2026, 3, 2, 12, 10, tzinfo=UTC)) == datetime(
        2026, 3, 2, 13, 30, tzinfo=UTC
    )
    # 12:10 in Istanbul (UTC+3) is 09:10 UTC: outside a UTC lunch break.
    assert lunch.opens_at(istanbul(2, 12, 10)) is None


def test_the_scope_decides_which_sends_wait() -> None:
    inside = istanbul(2, 23)
    assert hand_over_at(inside, NIGHT, "commercial_individual") == istanbul(3, 9)
    assert hand_over_at(inside, NIGHT, "commercial_merchant") == istanbul(3, 9)
    assert hand_over_at(inside, NIGHT, "informational") == inside
    everything = parse_quiet_hours("21:00-09:00", scope="all")
    assert hand_over_at(inside, everything, "informational") == istanbul(3, 9)
    assert hand_over_at(inside, everything, "informational", ignore_quiet_hours=True) == inside
    assert hand_over_at(inside, None, "commercial_individual") == inside


def test_a_daylight_saving_change_never_moves_a_send_back() -> None:
    # Berlin springs forward on 2026-03-29 at 02:00 (to 03:00): 02:30 does not exist.
    early = QuietHours(time(0), time(2, 30), zone="Europe/Berlin", scope="all")
    moment = datetime(2026, 3, 29, 0, 30, tzinfo=UTC)  # 01:30 in Berlin, inside
    opens = early.opens_at(moment)
    assert opens is not None and opens >= moment


@pytest.mark.parametrize(
    ("moment", "opens"),
    [
        # New York falls back on 2026-11-01 at 02:00 EDT to 01:00 EST: 01:00-02:00 comes
        # twice. A window ending 01:30 ends at each 01:30 its moment is before.
        (datetime(2026, 11, 1, 5, 10, tzinfo=UTC), datetime(2026, 11, 1, 5, 30, tzinfo=UTC)),
        (datetime(2026, 11, 1, 6, 10, tzinfo=UTC), datetime(2026, 11, 1, 6, 30, tzinfo=UTC)),
    ],
    ids=["first 01:10 (EDT)", "second 01:10 (EST)"],
)
def test_a_fall_back_night_holds_the_repeated_hour_by_its_own_clock(
    moment: datetime, opens: datetime
) -> None:
    night = QuietHours(time(0), time(1, 30), zone="America/New_York", scope="all")
    held = night.opens_at(moment)
    assert held is not None
    assert held.astimezone(UTC) == opens
    assert night.opens_at(opens) is None  # 01:30 is outside again


@pytest.mark.parametrize(
    ("window", "zone", "scope"),
    [
        ("25:00-09:00", "Europe/Istanbul", "commercial"),
        ("21:00-09:60", "Europe/Istanbul", "commercial"),
        ("9:00-10:00", "Europe/Istanbul", "commercial"),
        ("21:00", "Europe/Istanbul", "commercial"),
        ("09:00-09:00", "Europe/Istanbul", "commercial"),  # empty
        ("21:00-09:00", "Mars/Olympus", "commercial"),
        ("21:00-09:00", "../../etc/passwd", "commercial"),
        ("21:00-09:00", "", "commercial"),
        ("21:00-09:00", "x" * 1000, "commercial"),
        ("21:00-09:00", "Europe/Istanbul", "some"),
    ],
)
def test_bad_settings_name_the_field(window: str, zone: str, scope: str) -> None:
    with pytest.raises(RequestInvalid) as refused:
        parse_quiet_hours(window, zone=zone, scope=scope)
    assert refused.value.details[0].field == "quiet_hours"


def test_the_stored_form_reads_back() -> None:
    quiet = parse_quiet_hours("22:30-07:15", zone="UTC", scope="all")
    assert QuietHours.from_json(quiet.to_json()) == quiet
    assert quiet.to_json() == {"window": "22:30-07:15", "zone": "UTC", "scope": "all"}


@given(
    moment=st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2035, 1, 1),
                        timezones=st.just(UTC)),
    start=st.times(), end=st.times(),
    zone=st.sampled_from(["Europe/Istanbul", "UTC", "Europe/Berlin", "America/New_York"]),
)  # fmt: skip
def test_a_send_waits_exactly_while_the_window_holds_it(
    moment: datetime, start: time, end: time, zone: str
) -> None:
    start, end = start.replace(second=0, microsecond=0), end.replace(second=0, microsecond=0)
    if start == end:
        return
    quiet = QuietHours(start, end, zone=zone, scope="all")
    local = moment.astimezone(ZoneInfo(zone)).time().replace(tzinfo=None)
    inside = start <= local < end if start < end else (local >= start or local < end)

    opens = quiet.opens_at(moment)

    assert (opens is not None) == inside
    if opens is not None:
        assert moment <= opens <= moment + timedelta(hours=25)
        assert quiet.opens_at(opens) is None or opens == moment
        if opens != moment:  # it opens when the local clock reads the window's end
            assert opens.astimezone(ZoneInfo(zone)).time().replace(tzinfo=None) == end
            halfway = moment + (opens - moment) / 2
            assert quiet.opens_at(halfway) == opens  # held the whole way, to the same end
