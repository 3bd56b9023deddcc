"""``client.consents`` (D33) against the real ``serve --demo``: ``Client`` and ``AsyncClient``
record, page through and read consents; İYS's refusals come back as the library's classes."""

from __future__ import annotations

import pytest
from _served import Served

from unified_messaging import AsyncClient, Client, RequestInvalid
from unified_messaging.consents import ConsentNotFound, ConsentUnchanged, FirstConsentIsRet


def test_a_consent_through_the_client(demo: Served) -> None:
    with Client(demo.url, demo.started["api_key"]) as client:
        created = client.consents.create("0532 200 00 01", "ONAY", source="HS_WEB")
        with pytest.raises(ConsentUnchanged):
            client.consents.create("+905322000001", "ONAY", source="HS_WEB")
        with pytest.raises(FirstConsentIsRet):
            client.consents.create("+905322000002", "RET", source="HS_WEB")
        with pytest.raises(RequestInvalid):
            client.consents.create("+905322000002", "ONAY", source="HS_BROSUR")  # not sent
        detail = client.consents.get(created.id)
        with pytest.raises(ConsentNotFound):
            client.consents.get("cns_nope")

    assert (created.recipient, created.status, created.iys_state) == (
        "+905322000001", "ONAY", "pending"
    )  # fmt: skip
    assert [h.status for h in detail.history] == ["ONAY"]


async def test_the_async_client_pages_through_consents(demo: Served) -> None:
    async with AsyncClient(demo.url, demo.started["api_key"]) as client:
        made = [
            await client.consents.create(f"+90532300000{n}", "ONAY", recipient_type="TACIR")
            for n in range(3)
        ]
        listed = [c async for c in client.consents.list(limit=2)]
        one = [c async for c in client.consents.list(recipient="0532 300 00 01")]

    ids = [c.id for c in made]
    assert [c.id for c in listed if c.id in ids] == ids[::-1]
    assert [c.id for c in one] == [ids[1]]
