"""What the command line imports before it knows what to do.

Every ``unified-messaging`` call used to import the whole library, the web stack and the SQL
toolkit (about a second) before reading its arguments. Building the parser and printing help
now import none of that: each command imports what it needs when it runs. Checked through
``sys.modules`` in a fresh interpreter, so the answer never depends on the machine's speed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from _cli_support import TIMEOUT

import unified_messaging
from unified_messaging._vault import generate_key_spec

#: Third-party packages (and asyncio) that cost tens to hundreds of milliseconds to import
#: and that no help text needs.
HEAVY = (
    "aiosqlite",
    "alembic",
    "anyio",
    "asyncio",
    "asyncpg",
    "cryptography",
    "h11",
    "httpcore",
    "httpx",
    "mcp",
    "phonenumbers",
    "pydantic",
    "pydantic_core",
    "redis",
    "sqlalchemy",
    "starlette",
    "tenacity",
    "uvicorn",
)

_PROBE = """
import json, sys
heavy = {heavy!r}
{code}
loaded = sorted({{name.split(".")[0] for name in sys.modules}} & set(heavy))
print(json.dumps(loaded))
"""


def heavy_modules_after(code: str) -> list[str]:
    """The heavy packages a fresh interpreter holds after running ``code``."""
    probe = _PROBE.format(heavy=HEAVY, code=code)
    proc = subprocess.run(  # noqa: S603 - our own interpreter and fixed code
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=True,
    )
    loaded: list[str] = json.loads(proc.stdout.splitlines()[-1])
    return loaded


def test_the_probe_sees_a_heavy_import() -> None:
    # Without this, a probe that never saw anything would pass every test below.
    loaded = heavy_modules_after("import unified_messaging.cli._serve_http")
    assert {"h11", "uvicorn"} <= set(loaded)


def test_importing_the_package_imports_nothing_heavy() -> None:
    assert heavy_modules_after("import unified_messaging") == []


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["--version"],
        ["keys", "--help"],
        ["serve", "--help"],
        ["worker", "--help"],
        ["webhooks", "add", "--help"],
        ["connections", "add", "--help"],
    ],
)
def test_help_imports_nothing_heavy(argv: list[str]) -> None:
    code = f"""
import contextlib, io
from unified_messaging.__main__ import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
    main({argv!r})
"""
    assert heavy_modules_after(code) == []


def test_a_usage_error_imports_nothing_heavy() -> None:
    code = """
import contextlib, io
from unified_messaging.__main__ import main
with contextlib.redirect_stderr(io.StringIO()), contextlib.suppress(SystemExit):
    main(["keys", "list"])  # --workspace missing
"""
    assert heavy_modules_after(code) == []


def test_an_admin_command_on_sqlite_does_not_import_the_web_stack(tmp_path: Path) -> None:
    # It needs the library and SQLAlchemy, but not the server, MCP, PostgreSQL or Redis.
    code = f"""
import contextlib, io, os
os.environ["UM_DATABASE_URL"] = {f"sqlite+aiosqlite:///{tmp_path / 'um.db'}"!r}
os.environ["UM_MASTER_KEYS"] = {generate_key_spec("k1")!r}
from unified_messaging.__main__ import main
with contextlib.redirect_stdout(io.StringIO()):
    assert main(["workspaces", "list"]) == 0
"""
    loaded = heavy_modules_after(code)
    assert "sqlalchemy" in loaded
    assert not {"asyncpg", "mcp", "redis", "starlette", "uvicorn"} & set(loaded)


def test_every_public_name_is_a_lazy_export_and_nothing_else_is() -> None:
    lazy = set(unified_messaging._MODULE_OF)
    assert lazy | {"__version__"} == set(unified_messaging.__all__)
    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        _ = unified_messaging.Nope
    assert set(unified_messaging.__all__) <= set(dir(unified_messaging))
