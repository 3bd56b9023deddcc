"""Running the real ``python -m unified_messaging`` against a SQLite file of the test's own.

Each test gets a fresh database in ``tmp_path`` and a fresh ``UM_MASTER_KEYS``; commands run
in ``tmp_path`` so a development key file, if one is made, lands there too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _cli_support import Cli

from unified_messaging.vault._core import generate_key_spec


@pytest.fixture
def master_keys() -> str:
    return generate_key_spec("k1")


@pytest.fixture
def database_url(tmp_path: Path) -> str:
    return f"sqlite+aiosqlite:///{tmp_path / 'um.db'}"


@pytest.fixture
def cli(tmp_path: Path, database_url: str, master_keys: str) -> Cli:
    return Cli(tmp_path, {"UM_DATABASE_URL": database_url, "UM_MASTER_KEYS": master_keys})


@pytest.fixture
def workspace_id(cli: Cli) -> str:
    workspace: dict[str, Any] = cli("workspaces", "create", "Acme", "--json").json()
    return str(workspace["id"])
