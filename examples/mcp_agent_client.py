"""An AI agent's view: the official MCP client talks to /mcp of a real server on loopback.

    scripts/example mcp_agent_client    (or: .venv/bin/python examples/mcp_agent_client.py)

Needs the server and mcp extras (``scripts/example`` installs them). The server runs in this
process under uvicorn on a free port, with a test key, so nothing is sent for real.
"""

from __future__ import annotations

import asyncio
import json

import uvicorn
from mcp.client import ClientSession
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

from unified_messaging import Messenger
from unified_messaging.asgi import create_app


async def main() -> None:
    messenger = Messenger()  # in-memory store; the app's lifespan opens and closes it
    workspace = await messenger.workspaces.create("Acme")
    await messenger.connections.add(workspace.id, "sms_a", default_sender="ACME")
    await messenger.templates.set(workspace.id, "otp", "Kodunuz: {{ code }}")
    key = await messenger.keys.create(workspace.id, livemode=False)

    server = uvicorn.Server(
        uvicorn.Config(create_app(messenger), host="127.0.0.1", port=0, log_level="warning")
    )
    serving = asyncio.create_task(server.serve())
    while not server.started:
        if serving.done():
            serving.result()  # the server could not start: raise its error
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]

    # What an agent host does with {"url": ..., "headers": {"Authorization": ...}}.
    headers = {"Authorization": f"Bearer {key.secret}"}
    async with (
        create_mcp_http_client(headers=headers) as http,
        streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http) as streams,
        ClientSession(*streams) as session,
    ):
        await session.initialize()
        tools = await session.list_tools()
        print("tools:", ", ".join(tool.name for tool in tools.tools))

        sent = await session.call_tool(
            "send_message",
            {"to": "0555 123 45 67", "template": "otp", "variables": {"code": "4821"}},
        )
        job = sent.structured_content or {}
        print("send_message:", job["status"], job["to"], "via", job["provider"])

        record = await session.call_tool("get_message", {"job_id": job["job_id"]})
        print("get_message:", (record.structured_content or {})["status"])

        refused = await session.call_tool("send_message", {"to": "0212 555 12 34", "body": "x"})
        error = (refused.structured_content or {})["error"]
        print("a landline:", "is_error" if refused.is_error else "ok", json.dumps(error["code"]))

    server.should_exit = True
    await serving


if __name__ == "__main__":
    asyncio.run(main())
