"""Our operations in a FastAPI host's OpenAPI document and ``/docs`` (``add_to_openapi``),
over real uvicorn: the host's own route and ours side by side, ours under the mount's prefix
with our schemas and Bearer scheme; a send through the path the document names works; a
schema name the host already uses is renamed, our references following it; every reference
in the merged document resolves."""

from __future__ import annotations

from typing import Any

import httpx
from fastapi import FastAPI
from pydantic import BaseModel
from test_mounting import serving

from unified_messaging import Messenger
from unified_messaging.asgi import add_to_openapi, create_app, merged_openapi, openapi_document
from unified_messaging.testing import create_testbed


class Order(BaseModel):
    id: int


class SendRequest(BaseModel):  # the host's own model, named as one of ours
    shop: str


def _refs(value: Any) -> list[str]:
    if isinstance(value, dict):
        found = [value["$ref"]] if isinstance(value.get("$ref"), str) else []
        return found + [r for item in value.values() for r in _refs(item)]
    if isinstance(value, list):
        return [r for item in value for r in _refs(item)]
    return []


def _resolves(document: dict[str, Any], ref: str) -> bool:
    node: Any = document
    for part in ref.removeprefix("#/").split("/"):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


async def test_a_fastapi_host_lists_our_operations_in_its_docs_and_they_work() -> None:
    bed = await create_testbed(messenger=Messenger())
    messaging = create_app(bed.messenger, mcp=False, worker=False)
    api = FastAPI(title="Shop")

    @api.post("/orders")
    async def create_order(order: Order, request: SendRequest) -> Order:
        return order

    api.mount("/messaging", messaging)
    add_to_openapi(api, prefix="/messaging")

    async with serving(api) as base, httpx.AsyncClient(base_url=base) as http:
        document = (await http.get("/openapi.json")).json()
        docs = await http.get("/docs")
        send = await http.post(
            "/messaging/v1/messages",
            json={"to": "+905551234567", "body": "Merhaba"},
            headers={"Authorization": f"Bearer {bed.api_key}"},
        )
    await bed.messenger.aclose()

    assert document["info"]["title"] == "Shop"
    assert "/orders" in document["paths"] and "/messaging/v1/messages" in document["paths"]
    assert "/v1/messages" not in document["paths"]
    ours = openapi_document()
    assert {p.removeprefix("/messaging") for p in document["paths"] if p.startswith("/messaging")} \
        == set(ours["paths"])  # fmt: skip
    operation = document["paths"]["/messaging/v1/messages"]["post"]
    assert operation["security"] == [{"bearerAuth": []}]
    assert "bearerAuth" in document["components"]["securitySchemes"]
    # The host's SendRequest stays the host's; ours is renamed and our references follow.
    assert document["components"]["schemas"]["SendRequest"]["properties"] == {
        "shop": {"title": "Shop", "type": "string"}
    }
    assert "UnifiedMessagingSendRequest" in document["components"]["schemas"]
    assert "UnifiedMessagingSendRequest" in str(operation["requestBody"])
    assert [r for r in _refs(document) if not _resolves(document, r)] == []
    assert docs.status_code == 200 and "/openapi.json" in docs.text
    assert send.status_code == 201, send.text
    assert "/messaging/v1/messages" in document["paths"]


def test_merging_leaves_the_host_document_as_it_was() -> None:
    host = {"openapi": "3.1.0", "info": {"title": "H", "version": "1"}, "paths": {"/x": {}}}
    merged = merged_openapi(host, prefix="/m/")
    assert host == {"openapi": "3.1.0", "info": {"title": "H", "version": "1"}, "paths": {"/x": {}}}
    assert "/m/v1/messages" in merged["paths"] and "/x" in merged["paths"]
    assert [r for r in _refs(merged) if not _resolves(merged, r)] == []
    at_root = merged_openapi(host, prefix="")
    assert "/v1/messages" in at_root["paths"]
