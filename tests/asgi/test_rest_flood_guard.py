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


async def _bulk_then_send(bulk: dict[str, object]) -> tuple[httpx.Response, httpx.Response]:
    """A bulk, then one send to ``TO``, under a limit of 10 an hour (D28)."""
    bed = await create_testbed(recipient_limit=RecipientLimit(10, timedelta(hours=1)))
    await bed.messenger.templates.set(bed.workspace.id, "otp", "Kod: {{ code }}")
    headers = {"Authorization": f"Bearer {bed.api_key}"}
    async with (
        serving(create_app(bed.messenger)) as base_url,
        httpx.AsyncClient(base_url=base_url, headers=headers) as http,
    ):
        answer = await http.post("/v1/messages/bulk", json=bulk)
        after = await http.post("/v1/messages", json={"to": TO, "body": "kod"})
    return answer, after


async def test_a_bulk_of_invalid_numbers_fails_per_item_not_whole_with_429() -> None:
    answer, _ = await _bulk_then_send({"items": [{"to": "12345", "body": "x"}] * 11})

    assert answer.status_code == 201, answer.text
    assert {r["error"]["code"] for r in answer.json()["results"]} == {"INVALID_RECIPIENT"}


async def test_items_missing_a_template_variable_do_not_block_their_number() -> None:
    items = [{"to": TO, "variables": {}}] * 10
    answer, after = await _bulk_then_send({"template": "otp", "items": items})

    assert answer.status_code == 201, answer.text
    codes = {r["error"]["code"] for r in answer.json()["results"]}
    assert codes == {"TEMPLATE_VARIABLE_MISSING"}
    assert (after.status_code, after.json()["status"]) == (201, "sent"), after.text
