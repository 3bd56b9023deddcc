"""Fixtures of the MCP edge's tests: the app over a testbed, started, and a harness to reach it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from _mcp_support import Harness, started
from starlette.applications import Starlette

from unified_messaging.asgi import create_app
from unified_messaging.testing import TestBed


@pytest.fixture
def app(bed: TestBed) -> Starlette:
    return create_app(bed.messenger)


@pytest.fixture
async def mcp(app: Starlette, bed: TestBed) -> AsyncIterator[Harness]:
    """The app, its lifespan running, reached in process at ``http://testserver/mcp``."""
    async with started(app):
        yield Harness(bed, "http://testserver", app)
