"""``client.verifications`` against the real ``serve --demo`` (D34): start, read the code from
the test-mode message's ``body``, check; the library's exceptions for the refusals."""

from __future__ import annotations

import re

import pytest
from _served import Served

from unified_messaging import AsyncClient, Client
from unified_messaging.verifications import (
    CheckResponse,
    VerificationAlreadyApproved,
    VerificationNotFound,
    VerificationOut,
    VerificationRateLimited,
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
