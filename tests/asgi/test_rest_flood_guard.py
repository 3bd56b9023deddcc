"""The flood guard (D28) over a real socket: 429 ``RECIPIENT_RATE_LIMITED`` with
``Retry-After`` in whole seconds, and a bulk in which only the item past the limit fails."""

from __future__ import annotations

from datetime import timedelta

import httpx
from test_rest_uvicorn import serving

from unified_messaging import RecipientLimit
from unified_messaging.asgi import create_app
from unified_messaging.testing import create_testbed

TO = "+905321234567"
OTHER = "+905321234568"


async def test_rest_answers_429_with_retry_after_and_a_bulk_fails_per_item() -> None:
    bed = await create_testbed(recipient_limit=RecipientLimit(1, timedelta(seconds=90)))
    headers = {"Authorization": f"Bearer {bed.api_key}"}
    async with (
        serving(create_app(bed.messenger)) as base_url,
        httpx.AsyncClient(base_url=base_url, headers=headers) as http,
    ):
        first = await http.post("/v1/messages", json={"to": TO, "body": "kod"})
        refused = await http.post("/v1/messages", json={"to": TO, "body": "kod"})
        bulk = await http.post(
            "/v1/messages/bulk",
            json={"items": [{"to": TO, "body": "a"}, {"to": OTHER, "body": "b"}]},
        )

    assert first.status_code == 201
    assert refused.status_code == 429
    assert refused.json()["error"]["code"] == "RECIPIENT_RATE_LIMITED"
    assert refused.headers["retry-after"] == "90"
    assert bulk.status_code == 201
    results = bulk.json()["results"]
    assert [r["status"] for r in results] == ["failed", "sent"]
    assert results[0]["error"]["code"] == "RECIPIENT_RATE_LIMITED"
