"""A webhook receiver: a few lines of Starlette around ``unified_messaging.webhooks.verify``.

    scripts/example webhook_receiver    (or: .venv/bin/python examples/webhook_receiver.py)

The script starts the receiver on a free loopback port, posts itself one signed event (the
headers and body unified-messaging sends), and a tampered copy, prints what the receiver made
of each, and exits. In your own app keep ``receive`` and ``app``, take the secret from the
endpoint you created (it is shown once), and run ``app`` under uvicorn.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
from datetime import UTC, datetime

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from unified_messaging import StatusRecord
from unified_messaging.webhooks import (
    WebhookVerificationError,
    generate_secret,
    generate_test_headers,
    verify,
)

SECRET = os.environ.get("WEBHOOK_SECRET") or generate_secret()
seen: set[str] = set()


async def receive(request: Request) -> Response:
    try:
        # The raw bytes, not request.json(): re-serialized JSON no longer matches the signature.
        event = verify(await request.body(), request.headers, SECRET)
    except WebhookVerificationError as error:
        return Response(f"rejected: {error.reason}", status_code=400)
    # Retries of one event share a webhook-id: handle each event once, acknowledge repeats.
    if request.headers["webhook-id"] not in seen:
        seen.add(request.headers["webhook-id"])
        data = event["data"]
        assert isinstance(data, dict)
        print(f"verified {event['type']} for {data['job_id']} (livemode={data['livemode']})")
    return Response(status_code=204)  # any 2xx within 15 s is success


app = Starlette(routes=[Route("/webhooks", receive, methods=["POST"])])


def sample_event() -> bytes:
    """An event body as unified-messaging builds it: compact JSON, UTF-8."""
    now = datetime.now(UTC)
    record = StatusRecord(
        job_id="msg_01JEXAMPLEEXAMPLEEXAMPLE00",
        status="delivered",
        to="+905551234567",
        channel="sms",
        provider="sms_a",
        sender="ÖRNEK",
        template=None,
        template_key=None,
        created_at=now,
        updated_at=now,
        sent_at=now,
        final_at=now,
        error=None,
        attempts=[],
        dlr=None,
        segments=1,
        encoding="gsm7_turkish",
        livemode=False,
    )
    event = {
        "type": "message.delivered",
        "timestamp": now.isoformat().replace("+00:00", "Z"),
        "data": record.to_dict(),
    }
    return json.dumps(event, ensure_ascii=False, separators=(",", ":")).encode()


async def main() -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    config = uvicorn.Config(app, lifespan="off", log_config=None, access_log=False, ws="none")
    server = uvicorn.Server(config)
    serving = asyncio.create_task(server.serve(sockets=[listener]))
    try:
        body = sample_event()
        headers = generate_test_headers(body, SECRET)
        url = f"http://127.0.0.1:{port}/webhooks"
        async with httpx.AsyncClient(timeout=15) as client:
            genuine = await client.post(url, content=body, headers=headers)
            tampered = await client.post(
                url, content=body.replace(b"sms_a", b"sms_b"), headers=headers
            )
        print(f"genuine: {genuine.status_code}; tampered: {tampered.status_code} {tampered.text}")
    finally:
        server.should_exit = True
        await serving
        listener.close()


if __name__ == "__main__":
    asyncio.run(main())
