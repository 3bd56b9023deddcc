"""Fallback after acceptance, over loopback: by DLR time-out (``08``) and by report (``05``,
``06``), through two and through three providers, with the exact attempts list at the end."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import AsyncIterator
from datetime import datetime, timedelta

import pytest
from _support import DLR_TIMEOUT, Loop, attempts_of, check_signed, magic, pmid, running_loop

REPORT_DELAY = timedelta(seconds=1)


@pytest.fixture
async def loop() -> AsyncIterator[Loop]:
    async with running_loop() as value:
        yield value


def relay(providers: int, final: str) -> Counter[str]:
    return Counter(["message.sent"] * providers + ["message.fallback"] * (providers - 1) + [final])


@pytest.mark.parametrize(
    "fallback", [["sms_b"], ["sms_b", "sms_c"]], ids=["two-providers", "three-providers"]
)
async def test_no_report_falls_back_at_each_time_out_then_ends_unknown(
    loop: Loop, fallback: list[str]
) -> None:
    response = await loop.send({"to": magic("08"), "body": "Kod 1", "fallback": fallback})
    assert response.status_code == 201
    job_id = response.json()["job_id"]

    record = await loop.final(job_id)

    chain = ["sms_a", *fallback]
    assert record["status"] == "unknown"
    assert record["error"] is None
    assert record["provider"] == chain[-1]
    assert record["dlr"] is None
    assert attempts_of(record) == [
        (code, "unknown", pmid(code, job_id, index), None) for index, code in enumerate(chain)
    ]
    times = [datetime.fromisoformat(a["at"]) for a in record["attempts"]]
    for earlier, later in itertools.pairwise(times):
        assert later - earlier >= DLR_TIMEOUT  # each hop waited out the previous time-out
    check_signed(loop, await loop.events(job_id, relay(len(chain), "message.unknown")))


@pytest.mark.parametrize(
    ("suffix", "status", "error"),
    [("05", "rejected", "PROVIDER_REJECTED"), ("06", "failed", "RECIPIENT_UNREACHABLE")],
    ids=["05-rejected", "06-failed"],
)
@pytest.mark.parametrize(
    "fallback", [["sms_b"], ["sms_b", "sms_c"]], ids=["two-providers", "three-providers"]
)
async def test_a_failing_report_falls_back_to_each_next_provider(
    loop: Loop, fallback: list[str], suffix: str, status: str, error: str
) -> None:
    response = await loop.send({"to": magic(suffix), "body": "Kod 2", "fallback": fallback})
    assert response.status_code == 201
    job_id = response.json()["job_id"]

    record = await loop.final(job_id)

    chain = ["sms_a", *fallback]
    assert record["status"] == status
    assert record["error"]["code"] == error
    assert record["provider"] == chain[-1]
    assert record["dlr"]["status"] == status
    assert attempts_of(record) == [
        (code, status, pmid(code, job_id, index), error) for index, code in enumerate(chain)
    ]
    times = [datetime.fromisoformat(a["at"]) for a in record["attempts"]]
    for earlier, later in itertools.pairwise(times):
        assert REPORT_DELAY <= later - earlier < DLR_TIMEOUT  # moved on by report, not time-out
    check_signed(loop, await loop.events(job_id, relay(len(chain), f"message.{status}")))
