"""``client.stats`` against the real ``serve --demo`` (SQLite, its worker folding the counts
beside it): a message sent through the Client shows in the figures, and a bad window or zone
is the library's ``RequestInvalid`` before any request."""

from __future__ import annotations

import time

import pytest
from _served import Served

from unified_messaging import Client
from unified_messaging._errors import RequestInvalid
from unified_messaging.stats import StatsOverview


def _delivered(client: Client, job_id: str) -> None:
    """Wait for the demo's worker to apply the simulated report (about 2 s)."""
    for _ in range(300):
        if client.get_message(job_id).status == "delivered":
            return
        time.sleep(0.05)
    raise AssertionError("not delivered")


def test_a_message_sent_shows_in_the_figures(demo: Served) -> None:
    with Client(demo.url, demo.started["api_key"]) as client:
        before = client.stats.overview(window="7d", time_zone="Europe/Istanbul")
        sent = client.send({"to": "+905554440001", "body": "İstatistik"})
        _delivered(client, sent.job_id)
        after = client.stats.overview(window="7d", time_zone="Europe/Istanbul")

    assert isinstance(after, StatsOverview)
    assert (after.window, after.time_zone, after.unit, len(after.series)) == (
        "7d", "Europe/Istanbul", "day", 7,
    )  # fmt: skip
    assert after.messages == before.messages + 1
    assert after.by_status.delivered == before.by_status.delivered + 1
    assert sum(bucket.total for bucket in after.series) == after.messages
    delivered = {p.provider: p.delivered for p in after.providers}
    assert sum(delivered.values()) >= after.by_status.delivered


def test_a_bad_window_or_zone_is_refused_before_any_request(demo: Served) -> None:
    with Client(demo.url, demo.started["api_key"]) as client:
        with pytest.raises(RequestInvalid):
            client.stats.overview(window="1y")  # type: ignore[arg-type]
        with pytest.raises(RequestInvalid):
            client.stats.overview(time_zone="Europe/Nowhere")
