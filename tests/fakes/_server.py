"""Run a fake provider's ASGI app on real loopback HTTP, for the tests that need a socket."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import uvicorn

__all__ = ["serve"]


@contextlib.asynccontextmanager
async def serve(app: Any) -> AsyncIterator[str]:
    """Run ``app`` under uvicorn in this event loop on a free loopback port; yields its base URL."""
    config = uvicorn.Config(
        app, host="127.0.0.1", port=0, log_level="warning", lifespan="off", ws="none"
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    try:
        while not server.started:
            if task.done():
                task.result()  # startup failed: raise its error
            await asyncio.sleep(0.005)
        port = server.servers[0].sockets[0].getsockname()[1]
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task
