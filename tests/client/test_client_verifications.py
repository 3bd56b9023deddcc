"""``client.verifications`` against the real ``serve --demo`` (D34): start, read the code from
the test-mode message's ``body``, check; the library's exceptions for the refusals."""

from __future__ import annotations

import re

import pytest
from _served import Served

from unified_messaging import AsyncClient, Client, RequestInvalid
from unified_messaging.verifications import (
    CheckResponse,
    VerificationAlreadyApproved,
    VerificationFraudSuspected,
    VerificationNotFound,
    VerificationOut,
    VerificationRateLimited,
    VerificationStats,
)

_CODE = re.compile(r"[0-9]{4,10}")


def _code(client: Client, started: VerificationOut) -> str:
    body = client.get_message(started.sends[-1].job_id).body
    assert body is not None
    found = _CODE.search(body)
    assert found is not None
    return found[0]


def test_a_service_starts_and_checks_a_code_through_client(demo: Served) -> None:
    with Client(demo.url, demo.started["api_key"]) as client:
        started = client.verifications.start({"to": "0555 300 00 01"})
        checked = client.verifications.check(started.id, _code(client, started))
        found = client.verifications.get(started.id)
        with pytest.raises(VerificationAlreadyApproved):
            client.verifications.check(started.id, _code(client, started))

    assert isinstance(started, VerificationOut) and started.to == "+905553000001"
    assert isinstance(checked, CheckResponse) and checked.status == "approved"
    assert found.status == "approved"


def test_the_refusals_are_the_librarys_exceptions(demo: Served) -> None:
    with Client(demo.url, demo.started["api_key"]) as client:
        started = client.verifications.start({"to": "+905553000002", "code_length": 4})
        with pytest.raises(VerificationRateLimited) as refused:
            client.verifications.start({"to": "+905553000002"})
        with pytest.raises(VerificationNotFound):
            client.verifications.get("ver_nothing")
        canceled = client.verifications.cancel(started.id)

    assert refused.value.retry_after == 30
    assert canceled.status == "canceled"


async def test_async_client_starts_and_checks(demo: Served) -> None:
    async with AsyncClient(demo.url, demo.started["api_key"]) as client:
        started = await client.verifications.start({"to": "+905553000003", "locale": "en"})
        record = await client.get_message(started.sends[0].job_id)
        assert record.body is not None and record.body.startswith("Your verification code is")
        found = _CODE.search(record.body)
        assert found is not None
        checked = await client.verifications.check(started.id, found[0])

    assert checked.status == "approved"


def test_stats_and_a_pumping_refusal_through_client(demo: Served) -> None:
    with Client(demo.url, demo.started["api_key"]) as client:
        # The default guard: 10 starts per client address in 10 minutes.
        for n in range(10):
            client.verifications.start({"to": f"+90532{n:03d}9999", "client_ip": "198.51.100.9"})
        with pytest.raises(VerificationRateLimited) as refused:
            client.verifications.start({"to": "+905420009999", "client_ip": "198.51.100.9"})
        stats = client.verifications.stats(hours=1)
        with pytest.raises(RequestInvalid):
            client.verifications.stats(hours=0)  # refused before it leaves

    assert isinstance(refused.value, VerificationFraudSuspected)
    assert refused.value.code == "VERIFICATION_FRAUD_SUSPECTED"
    assert 1 <= refused.value.retry_after <= 60  # 10 per 10 minutes: one more a minute
    assert isinstance(stats, VerificationStats)
    assert stats.hours == 1 and stats.livemode is False
    assert sum(t.started for t in stats.totals) >= 10


async def test_async_client_reads_stats(demo: Served) -> None:
    async with AsyncClient(demo.url, demo.started["api_key"]) as client:
        stats = await client.verifications.stats()

    assert stats.hours == 24
