"""The Overview's delivery charts over real loopback HTTP, on the memory store, SQLite and
PostgreSQL: known traffic (``_stats_traffic``) drawn and tabled as ``messenger.stats`` counts
it, in Istanbul's time, each window; a window not known is a 400; live data is separate; and
every label is escaped."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from _dash_support import Console
from _sql_apps import BACKENDS
from _stats_traffic import send_traffic, stats_bed

from unified_messaging.testing import TestBed


@pytest.fixture(params=["memory", *BACKENDS])
async def bed(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[TestBed]:
    async with stats_bed(request.param, tmp_path) as bed:
        await send_traffic(bed)
        yield bed


def svgs(page: str, cls: str) -> list[str]:
    return re.findall(rf'<svg class="{cls}".*?</svg>', page, flags=re.S)


def value_of(page: str, label: str) -> str:
    found = re.search(rf'<div class="value">([^<]+)</div><div class="label">{label}', page)
    assert found, label
    return found.group(1)


async def test_the_last_24_hours_drawn_hour_by_hour_in_istanbul(signed_in: Console) -> None:
    page = (await signed_in.get("/")).text

    assert "Times in Europe/Istanbul (UTC+03:00)" in page
    assert value_of(page, "messages") == "8"
    assert value_of(page, "delivered") == "6"
    assert value_of(page, "failed or rejected") == "1"
    assert value_of(page, "fell back") == "12.5%"
    assert value_of(page, "of one-time codes approved") == "50.0%"
    volume, rates, times = svgs(page, "wide")
    assert len(svgs(page, "narrow")) == 3
    assert 'role="img"' in volume and "<title id=" in volume
    # 24 hourly slots; the newest labelled with its Istanbul hour; the busy hours' bars.
    assert ">09:00</text>" in volume and ">Hour (Europe/Istanbul)</text>" in volume
    tips = re.findall(r"<title>([^<]+)</title></rect>", volume)
    assert "Mon 2 Mar, 09:00–10:00: 2 delivered of 2" in tips
    assert "Mon 2 Mar, 08:00–09:00: 1 failed of 3" in tips
    assert "Mon 2 Mar, 06:00–07:00: 3 delivered of 3" in tips
    assert "sms_a · NetGSM: 62.5% delivered (5 of 8 settled)" in rates
    assert "sms_b · İletimerkezi: half within 4 s, 95% within 4 s" in times


async def test_the_legend_names_the_statuses_the_window_has(signed_in: Console) -> None:
    page = (await signed_in.get("/")).text

    legend = re.search(r'<ul class="legend">(.*?)</ul>', page, flags=re.S)
    assert legend is not None
    names = re.findall(r"</svg> (\w+)</li>", legend.group(1))
    assert names == ["delivered", "expired", "failed"]


async def test_the_figures_are_also_tables(signed_in: Console) -> None:
    page = (await signed_in.get("/")).text

    table = re.search(r"<summary>The figures as a table</summary>(.*?)</details>", page, re.S)
    assert table is not None
    rows = re.findall(r"<tr><td>([^<]+)</td><td class=\"num\">(\d+)</td>", table.group(1))
    assert rows == [
        ("Mon 2 Mar, 09:00–10:00", "2"),
        ("Mon 2 Mar, 08:00–09:00", "3"),
        ("Mon 2 Mar, 06:00–07:00", "3"),
    ]
    assert re.search(r'<td>sms_a · NetGSM</td><td class="num">8</td><td class="num">6</td>', page)
    assert "62.5%" in page


@pytest.mark.parametrize(
    ("window", "bars", "heading"),
    [("7d", 7, "Messages per day, by status"), ("30d", 30, "Messages per day, by status")],
)
async def test_the_day_windows_draw_one_bar_per_istanbul_day(
    signed_in: Console, window: str, bars: int, heading: str
) -> None:
    answer = await signed_in.get("/", params={"window": window})
    page = answer.text

    assert answer.status_code == 200 and heading in page
    assert re.search(rf'href="\?window={window}" aria-current="page"', page)
    volume = svgs(page, "wide")[0]
    assert f"in {bars} bars" in volume  # the description says how many
    tips = re.findall(r"<title>([^<]+)</title></rect>", volume)
    assert "Sat 28 Feb: 2 delivered of 2" in tips
    assert "Mon 2 Mar: 6 delivered of 8" in tips
    assert value_of(page, "messages") == "10"


@pytest.mark.parametrize("window", ["1y", "", "<script>alert(1)</script>"])
async def test_a_window_not_known_is_a_400_page(signed_in: Console, window: str) -> None:
    answer = await signed_in.get("/", params={"window": window})

    assert answer.status_code == 400
    assert "<script>alert" not in answer.text
    assert "window" in answer.text


async def test_live_data_has_none_of_the_test_traffic(signed_in: Console) -> None:
    switched = await signed_in.post("/view", {"livemode": "live"})
    assert switched.status_code == 303
    page = (await signed_in.get("/")).text

    assert value_of(page, "messages") == "0"
    assert "No messages in this window" in svgs(page, "wide")[0]
    assert "No attempts in this window" in svgs(page, "narrow")[1]


async def test_a_hostile_workspace_name_is_shown_as_text(signed_in: Console, bed: TestBed) -> None:
    hostile = '<svg onload=alert(1)>"&'
    workspace = await bed.messenger.workspaces.create(hostile)
    assert (await signed_in.post("/view", {"workspace_id": workspace.id})).status_code == 303

    page = (await signed_in.get("/")).text

    assert "&lt;svg onload=alert(1)&gt;&#34;&amp;" in page
    assert "<svg onload" not in page
