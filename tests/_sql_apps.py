"""A testbed on each SQL backend, for tests of what hostile text does to real databases.

SQLite gets a file under the test's ``tmp_path``; PostgreSQL (only when
``UM_TEST_POSTGRES_URL`` is set) a schema of its own, dropped afterwards. Not a fixture
module: the REST, MCP and fuzz tests each build their own fixtures on :func:`sql_testbed`.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Final

import asyncpg
import pytest
from sqlalchemy.engine import make_url
from starlette.applications import Starlette

from unified_messaging import ManualClock, Messenger, Vault
from unified_messaging.store.sql import SqlStore
from unified_messaging.testing import TestBed, create_testbed

__all__ = ["BACKENDS", "lifespan_running", "postgres_url", "sql_store", "sql_testbed"]

POSTGRES_ENV: Final = "UM_TEST_POSTGRES_URL"
#: ``pytest.mark.parametrize("backend", BACKENDS)``: SQLite always, PostgreSQL when it can.
BACKENDS: Final = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


def postgres_url() -> str | None:
    return os.environ.get(POSTGRES_ENV) or None


def _dsn(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


@asynccontextmanager
async def _postgres_schema(url: str) -> AsyncIterator[str]:
    schema = f"um_hostile_{os.getpid()}_{uuid.uuid4().hex[:10]}"
    connection = await asyncpg.connect(_dsn(url))
    try:
        await connection.execute(f'CREATE SCHEMA "{schema}"')
        yield schema
    finally:
        await connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        await connection.close()


@asynccontextmanager
async def _store(backend: str, directory: Path) -> AsyncIterator[SqlStore]:
    if backend == "sqlite":
        yield SqlStore(f"sqlite+aiosqlite:///{directory / 'hostile.db'}")
        return
    url = postgres_url()
    if url is None:
        pytest.skip(f"PostgreSQL tests need a server: set {POSTGRES_ENV}")
    async with _postgres_schema(url) as schema:
        yield SqlStore(url, connect_args={"server_settings": {"search_path": schema}})


#: A fresh, empty SQL store on ``backend`` (SQLite in ``directory``; PostgreSQL in a schema).
sql_store = _store


@asynccontextmanager
async def sql_testbed(backend: str, directory: Path) -> AsyncIterator[TestBed]:
    """A testbed whose messenger keeps everything in a fresh ``backend`` database."""
    async with _store(backend, directory) as store:
        messenger = Messenger(store, clock=ManualClock(), vault=Vault.generate())
        bed = await create_testbed(messenger=messenger)
        try:
            yield bed
        finally:
            await messenger.aclose()


@asynccontextmanager
async def lifespan_running(app: Starlette) -> AsyncIterator[Starlette]:
    """Run ``app``'s own lifespan (MCP's session manager included) while the context lasts.

    In a task of its own: the lifespan holds the SDK's task group, which must be left in the
    task that entered it, and pytest-asyncio sets fixtures up and tears them down in two.
    """
    ready, stop = asyncio.Event(), asyncio.Event()

    async def run() -> None:
        async with app.router.lifespan_context(app):
            ready.set()
            await stop.wait()

    task = asyncio.create_task(run())
    waiter = asyncio.create_task(ready.wait())
    await asyncio.wait([task, waiter], return_when=asyncio.FIRST_COMPLETED)
    if task.done():
        waiter.cancel()
        task.result()  # startup failed: raise why
    try:
        yield app
    finally:
        stop.set()
        await task
