"""Time the REST edge in process: ``python benchmarks/bench_http.py``.

Requests go through httpx's ASGI transport (no sockets), so the numbers are the app's own
cost: routing, auth, the rate limiter, body parsing, validation, rendering, and the test-mode
send behind it. Compare ``health`` (no auth, no I/O) with the authenticated endpoints to see
what the frame costs.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import httpx

from unified_messaging import ManualClock, Messenger
from unified_messaging.asgi import create_app
from unified_messaging.testing import create_testbed

Call = Callable[[httpx.AsyncClient, int], Awaitable[httpx.Response]]


async def measure(client: httpx.AsyncClient, name: str, call: Call, count: int) -> None:
    start = time.perf_counter()
    for n in range(count):
        response = await call(client, n)
        assert response.status_code < 300, response.text
    elapsed = time.perf_counter() - start
    print(f"{name:28} {count / elapsed:9,.0f} req/s  {elapsed / count * 1e6:8.1f} µs/req")


async def main() -> None:
    messenger = Messenger(clock=ManualClock())
    bed = await create_testbed(messenger=messenger, recipient_limit=None)  # no D28 guard
    # The clock never moves in a benchmark: give the key a bucket that never runs dry.
    key = await messenger.keys.create(bed.workspace.id, rate_limit=1e9, rate_burst=10**9)
    transport = httpx.ASGITransport(app=create_app(messenger))
    headers = {"Authorization": f"Bearer {key.secret}"}
    async with httpx.AsyncClient(transport=transport, base_url="http://b", headers=headers) as c:
        sent = await c.post("/v1/messages", json={"to": "+905551234567", "body": "x"})
        job_id = sent.json()["job_id"]
        items = [{"to": "+905551234567", "body": f"item {n}"} for n in range(200)]
        cases: list[tuple[str, Call, int]] = [
            ("GET /v1/health", lambda c, n: c.get("/v1/health"), 5_000),
            ("GET /v1/messages/{id}", lambda c, n: c.get(f"/v1/messages/{job_id}"), 5_000),
            (
                "POST /v1/messages",
                lambda c, n: c.post("/v1/messages", json={"to": "+905551234567", "body": "x"}),
                3_000,
            ),
            (
                "POST /v1/messages + key",
                lambda c, n: c.post(
                    "/v1/messages",
                    json={"to": "+905551234567", "body": "x"},
                    headers={"Idempotency-Key": f"k-{n}"},
                ),
                3_000,
            ),
            (
                "POST bulk (200 items)",
                lambda c, n: c.post("/v1/messages/bulk", json={"items": items}),
                50,
            ),
        ]
        for name, call, count in cases:
            await measure(c, name, call, count)


if __name__ == "__main__":
    asyncio.run(main())
