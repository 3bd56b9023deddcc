"""The per-recipient flood guard (D28) through its real entry points.

The library (``Messenger.send``/``send_bulk``, with the test keys host applications use),
and the setting's text form, whose input space hypothesis walks. The REST app over a socket
is in ``asgi/test_rest_flood_guard.py``, the CLI in ``cli/test_cli_flood_guard.py``, the
count on every store in ``store/test_store_flood_guard.py``.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from unified_messaging import (
    ManualClock,
    RecipientLimit,
    RecipientRateLimited,
    RequestInvalid,
)
from unified_messaging._access.flood_guard import (
    DEFAULT_RECIPIENT_LIMIT,
    MAX_LIMIT,
    MAX_WINDOW,
    parse_recipient_limit,
)
from unified_messaging.testing import TestBed, create_testbed

TO = "+905321234567"
OTHER = "+905321234568"


# ------------------------------------------------------------------ the setting's text


@given(
    limit=st.integers(1, MAX_LIMIT),
    seconds=st.integers(1, int(MAX_WINDOW.total_seconds())),
)
def test_the_text_form_reads_back_as_the_same_limit(limit: int, seconds: int) -> None:
    setting = RecipientLimit(limit, timedelta(seconds=seconds))
    assert parse_recipient_limit(str(setting)) == setting


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("10/1h", RecipientLimit(10, timedelta(hours=1))),
        (" 5 / 10m ", RecipientLimit(5, timedelta(minutes=10))),
        ("3/90", RecipientLimit(3, timedelta(seconds=90))),
        ("20/7D", RecipientLimit(20, timedelta(days=7))),
        ("off", None),
        ("None", None),
    ],
)
def test_the_text_forms_people_type(text: str, expected: RecipientLimit | None) -> None:
    assert parse_recipient_limit(text) == expected


@pytest.mark.parametrize(
    "text",
    ["", "10", "0/1h", "-1/1h", "10/0s", "10/8d", "10/1w", "ten/1h", "10/1h; DROP TABLE",
     "10001/1h", "1e3/1h", "١٠/1h", "10/1h/2", "9" * 40 + "/1h"],
)  # fmt: skip
def test_bad_text_is_refused_naming_the_field(text: str) -> None:
    with pytest.raises(RequestInvalid) as refused:
        parse_recipient_limit(text)
    assert refused.value.details[0].field == "recipient_limit"


@pytest.mark.parametrize(
    ("limit", "window"),
    [(0, timedelta(hours=1)), (-5, timedelta(hours=1)), (True, timedelta(hours=1)),
     (MAX_LIMIT + 1, timedelta(hours=1)), (10, timedelta(0)), (10, timedelta(days=8)),
     (10, timedelta(seconds=-1))],
)  # fmt: skip
def test_bad_values_are_refused_when_made(limit: Any, window: timedelta) -> None:
    with pytest.raises(RequestInvalid):
        RecipientLimit(limit, window)


# ------------------------------------------------------------------ the library


async def guarded_bed(limit: RecipientLimit | None) -> TestBed:
    return await create_testbed(clock=ManualClock(), recipient_limit=limit)


async def test_every_workspace_gets_the_default_guard() -> None:
    bed = await create_testbed()
    assert (
        bed.workspace.recipient_limit
        == DEFAULT_RECIPIENT_LIMIT
        == RecipientLimit(10, timedelta(hours=1))
    )
    for _ in range(10):
        await bed.messenger.send(bed.principal, {"to": TO, "body": "kod"})
    with pytest.raises(RecipientRateLimited):
        await bed.messenger.send(bed.principal, {"to": TO, "body": "kod"})


async def test_a_send_past_the_limit_is_429_stores_nothing_and_sends_nothing() -> None:
    bed = await guarded_bed(RecipientLimit(2, timedelta(minutes=10)))
    for _ in range(2):
        await bed.messenger.send(bed.principal, {"to": TO, "body": "kod"})
    bed.clock.advance(timedelta(minutes=3))  # type: ignore[attr-defined]

    with pytest.raises(RecipientRateLimited) as refused:
        await bed.messenger.send(bed.principal, {"to": "0532 123 45 67", "body": "kod"})

    assert (refused.value.http_status, refused.value.code) == (429, "RECIPIENT_RATE_LIMITED")
    assert refused.value.retry_after == pytest.approx(7 * 60)
    assert len(bed.outbox) == 2
    assert len((await bed.messenger.list_messages(bed.principal, {"to": TO})).data) == 2
    # Another recipient is not affected, and the window lets one more in when it slides.
    await bed.messenger.send(bed.principal, {"to": OTHER, "body": "kod"})
    bed.clock.advance(timedelta(minutes=7, seconds=1))  # type: ignore[attr-defined]
    await bed.messenger.send(bed.principal, {"to": TO, "body": "kod"})


async def test_in_a_bulk_only_the_items_past_the_limit_fail() -> None:
    bed = await guarded_bed(RecipientLimit(2, timedelta(hours=1)))
    await bed.messenger.send(bed.principal, {"to": TO, "body": "before"})
    items = [{"to": TO, "body": f"to {i}"} for i in range(3)] + [{"to": OTHER, "body": "other"}]

    response = await bed.messenger.send_bulk(bed.principal, {"items": items})

    assert [(r.status, r.error.code if r.error else None) for r in response.results] == [
        ("sent", None),
        ("failed", "RECIPIENT_RATE_LIMITED"),
        ("failed", "RECIPIENT_RATE_LIMITED"),
        ("sent", None),
    ]
    assert (response.total, response.sent, response.failed) == (4, 2, 2)
    assert [s.to for s in bed.outbox] == [TO, TO, OTHER]
    # The refused items are stored, readable by job id, and do not count against the limit.
    refused = await bed.messenger.get_message(bed.principal, response.results[1].job_id)
    assert refused.status == "failed"
    assert refused.error is not None and refused.error.code == "RECIPIENT_RATE_LIMITED"


async def test_a_workspace_can_change_or_turn_off_its_guard() -> None:
    bed = await guarded_bed(RecipientLimit(1, timedelta(hours=1)))
    await bed.messenger.send(bed.principal, {"to": TO, "body": "one"})

    updated = await bed.messenger.workspaces.set_recipient_limit(bed.workspace.id, "off")
    assert updated.recipient_limit is None
    principal = await bed.messenger.authenticate(bed.api_key)
    for _ in range(15):
        await bed.messenger.send(principal, {"to": TO, "body": "many"})

    updated = await bed.messenger.workspaces.set_recipient_limit(bed.workspace.id, "20/1h")
    principal = await bed.messenger.authenticate(bed.api_key)
    await bed.messenger.send(principal, {"to": TO, "body": "17th"})
    await bed.messenger.send(principal, {"to": TO, "body": "18th"})
    await bed.messenger.send(principal, {"to": TO, "body": "19th"})
    await bed.messenger.send(principal, {"to": TO, "body": "20th"})
    with pytest.raises(RecipientRateLimited):  # the messages sent while it was off count
        await bed.messenger.send(principal, {"to": TO, "body": "21st"})

    with pytest.raises(RequestInvalid):
        await bed.messenger.workspaces.set_recipient_limit(bed.workspace.id, "0/1h")
    with pytest.raises(RequestInvalid):
        await bed.messenger.workspaces.set_recipient_limit(bed.workspace.id, 10)  # type: ignore[arg-type]
