"""Fixtures of the crash tests: the database each real process under test works on."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from _crash_support import POSTGRES_ENV, postgres_database

POSTGRES_SKIP_REASON = (
    f"PostgreSQL crash tests need a server: set {POSTGRES_ENV}, "
    "e.g. postgresql+asyncpg://postgres@127.0.0.1:5432/test (.ci/run sets it)"
)


@pytest.fixture
def postgres_server() -> str:
    """The PostgreSQL server of ``UM_TEST_POSTGRES_URL``; the test is skipped, saying why,
    without it."""
    server = os.environ.get(POSTGRES_ENV) or None
    if server is None:
        print(POSTGRES_SKIP_REASON)
        pytest.skip(POSTGRES_SKIP_REASON)
    return server


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """A fresh database of each dialect: a SQLite file, or a PostgreSQL database of its own
    (a process under test takes only a URL, so the URL alone must name an isolated place)."""
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'crash.db'}"
        return
    server = request.getfixturevalue("postgres_server")
    async with postgres_database(server) as url:
        yield url
