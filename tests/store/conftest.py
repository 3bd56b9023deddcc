"""Backend fixtures for the store tests.

``store`` runs a test once per backend: memory, SQLite and PostgreSQL, each empty and at the
latest revision. SQLite gets a fresh file per test (a copy of one migrated once per run);
PostgreSQL gets this run's own schema, created and migrated once, emptied before each test
and dropped at the end, so parallel runs never see each other's rows.

``sql_database`` gives a fresh, never migrated database of each SQL dialect (for migration
and multi-process tests). PostgreSQL runs only when ``UM_TEST_POSTGRES_URL`` is set;
otherwise those cases are skipped with the reason printed.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import asyncpg
import pytest
from _databases import Database
from _store_calls import calls_recorded
from sqlalchemy.engine import make_url

from unified_messaging.store._tables import ALL_TABLES
from unified_messaging.store.base import Store
from unified_messaging.store.memory import MemoryStore
from unified_messaging.store.sql import migrate

POSTGRES_ENV = "UM_TEST_POSTGRES_URL"
POSTGRES_SKIP_REASON = (
    f"PostgreSQL tests need a server: set {POSTGRES_ENV}, "
    "e.g. postgresql+asyncpg://postgres@127.0.0.1:5432/test"
)


def postgres_url() -> str | None:
    return os.environ.get(POSTGRES_ENV) or None


def _asyncpg_dsn(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


async def _create_schema(url: str) -> Database:
    schema = f"um_test_{os.getpid()}_{uuid.uuid4().hex[:10]}"
    connection = await asyncpg.connect(_asyncpg_dsn(url))
    try:
        await connection.execute(f'CREATE SCHEMA "{schema}"')
    finally:
        await connection.close()
    return Database(
        dialect="postgresql",
        url=url,
        schema=schema,
        connect_args={"server_settings": {"search_path": schema}},
    )


async def _drop_schema(database: Database) -> None:
    connection = await asyncpg.connect(_asyncpg_dsn(database.url))
    try:
        await connection.execute(f'DROP SCHEMA IF EXISTS "{database.schema}" CASCADE')
    finally:
        await connection.close()


def _sqlite_database(tmp_path: Path) -> Database:
    return Database(dialect="sqlite", url=f"sqlite+aiosqlite:///{tmp_path / 'store.db'}")


@pytest.fixture
def sqlite_database(tmp_path: Path) -> Database:
    return _sqlite_database(tmp_path)


@pytest.fixture
async def postgres_database() -> AsyncIterator[Database]:
    url = postgres_url()
    if url is None:
        pytest.skip(POSTGRES_SKIP_REASON)
    database = await _create_schema(url)
    try:
        yield database
    finally:
        await _drop_schema(database)


_SQL_PARAMS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(params=_SQL_PARAMS)
async def sql_database(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Database]:
    """A fresh, empty (never migrated) SQL database of each dialect."""
    if request.param == "sqlite":
        yield _sqlite_database(tmp_path)
        return
    url = postgres_url()
    if url is None:
        pytest.skip(POSTGRES_SKIP_REASON)
    database = await _create_schema(url)
    try:
        yield database
    finally:
        await _drop_schema(database)


@pytest.fixture(scope="session")
def migrated_sqlite_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file at the latest revision, migrated once and copied for each test."""
    path = tmp_path_factory.mktemp("template") / "template.db"
    asyncio.run(migrate(f"sqlite+aiosqlite:///{path}"))
    return path


@pytest.fixture(scope="session")
def migrated_postgres_schema() -> Iterator[Database | None]:
    """This run's own PostgreSQL schema at the latest revision, dropped at the end."""
    url = postgres_url()
    if url is None:
        yield None
        return
    database = asyncio.run(_create_schema(url))
    try:
        asyncio.run(migrate(url, connect_args=database.connect_args))
        yield database
    finally:
        asyncio.run(_drop_schema(database))


async def _empty_tables(database: Database) -> None:
    # DELETE beats TRUNCATE on tables this small; children go first for the foreign keys.
    # The table names are our own schema's, not input.
    statements = "; ".join(f"DELETE FROM {t.name}" for t in reversed(ALL_TABLES))  # noqa: S608
    connection = await asyncpg.connect(
        _asyncpg_dsn(database.url), server_settings={"search_path": str(database.schema)}
    )
    try:
        await connection.execute(statements)
    finally:
        await connection.close()


@pytest.fixture(params=["memory", *_SQL_PARAMS])
async def store(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    migrated_sqlite_file: Path,
    migrated_postgres_schema: Database | None,
) -> AsyncIterator[Store]:
    """An opened, empty store of each backend."""
    if request.param == "memory":
        memory = MemoryStore()
        with calls_recorded(memory):
            yield memory
        return
    database = await _empty_database(
        request.param, tmp_path, migrated_sqlite_file, migrated_postgres_schema
    )
    sql_store = database.store()
    await sql_store.open()
    try:
        with calls_recorded(sql_store):
            yield sql_store
    finally:
        await sql_store.close()


@pytest.fixture(params=_SQL_PARAMS)
async def migrated_database(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    migrated_sqlite_file: Path,
    migrated_postgres_schema: Database | None,
) -> Database:
    """An empty SQL database of each dialect at the latest revision (``store``'s)."""
    return await _empty_database(
        request.param, tmp_path, migrated_sqlite_file, migrated_postgres_schema
    )


async def _empty_database(
    dialect: str, tmp_path: Path, sqlite_file: Path, postgres_schema: Database | None
) -> Database:
    if dialect == "sqlite":
        shutil.copyfile(sqlite_file, tmp_path / "store.db")
        return _sqlite_database(tmp_path)
    if postgres_schema is None:
        pytest.skip(POSTGRES_SKIP_REASON)
    await _empty_tables(postgres_schema)
    return postgres_schema
