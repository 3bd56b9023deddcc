"""The delivery rate as ``stats`` prints it: never an end that was not reached."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from unified_messaging._figures import percent


def test_the_ends_and_a_third() -> None:
    assert (percent(0.0), percent(1.0), percent(1 / 3)) == ("0.0%", "100.0%", "33.3%")
    assert percent(1999 / 2000) == "99.9%"
    assert percent(1 / 2000) == "0.1%"


@given(st.integers(min_value=2, max_value=10**7).flatmap(
    lambda n: st.tuples(st.integers(min_value=1, max_value=n - 1), st.just(n))))  # fmt: skip
def test_a_rate_between_the_ends_is_shown_between_them(fraction: tuple[int, int]) -> None:
    done, total = fraction
    shown = float(percent(done / total).rstrip("%"))
    assert 0.0 < shown < 100.0
    assert abs(shown - 100 * done / total) <= 0.1 + 1e-9


def test_the_dashboard_shows_a_rate_by_the_same_rule() -> None:
    from unified_messaging.dashboard._ui import Templates

    rendered = Templates()._env.from_string("{{ rate|percent }}").render(rate=1999 / 2000)
    assert rendered == "99.9%"
