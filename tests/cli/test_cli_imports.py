"""What the command line imports before it knows what to do.

Every ``unified-messaging`` call used to import the whole library, the web stack and the SQL
toolkit (about a second) before reading its arguments. Building the parser and printing help
now import none of that: each command imports what it needs when it runs. Checked through
``sys.modules`` in a fresh interpreter, so the answer never depends on the machine's speed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _cli_support import TIMEOUT, Cli

import unified_messaging
from unified_messaging.vault._core import generate_key_spec

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


# --------------------------------------------------------------------------- admin commands

#: What a one-shot admin command on SQLite never needs: the provider adapters
#: and their HTTP stack (a live send loads them), the webhook transport (a delivery does),
#: phone number parsing (a send does), the PostgreSQL driver, the server, MCP and Redis.
#: (SQLAlchemy's PostgreSQL dialect is loaded: the schema's partial index names its
#: ``postgresql_where``.)
NOT_FOR_ADMIN = (
    "httpx",
    "httpcore",
    "h11",
    "anyio",
    "tenacity",
    "mcp",
    "starlette",
    "uvicorn",
    "redis",
    "asyncpg",
    "alembic",
    "phonenumbers",
    "unified_messaging.providers._http",
    "unified_messaging.providers.registry",
    "unified_messaging.providers.netgsm",
    "unified_messaging.providers.iletimerkezi",
    "unified_messaging.providers.verimor",
    "unified_messaging.providers.mutlucell",
    "unified_messaging.providers.kannel",
    "unified_messaging.providers.jasmin",
    "unified_messaging.providers.telegram",
    "unified_messaging.providers.whatsapp",
    "unified_messaging.webhooks._transport",
    "unified_messaging.webhooks._http11",
)

_COMMAND_PROBE = """
import contextlib, io, json, sys
from unified_messaging.__main__ import main
with contextlib.redirect_stdout(io.StringIO()):
    status = main({argv!r})
print(json.dumps({{"status": status, "modules": sorted(sys.modules)}}))
"""


def modules_after_command(cli: Cli, argv: list[str]) -> set[str]:
    """Every module a fresh interpreter holds after running the command ``argv``."""
    proc = subprocess.run(  # noqa: S603 - our own interpreter and fixed code
        [sys.executable, "-c", _COMMAND_PROBE.format(argv=argv)],
        cwd=cli.cwd,
        env=cli.environ(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=True,
    )
    found = json.loads(proc.stdout.splitlines()[-1])
    assert found["status"] == 0, proc.stderr
    return set(found["modules"])


def loaded(modules: set[str], names: tuple[str, ...]) -> list[str]:
    """Which of ``names`` (a package counts with its submodules) are among ``modules``."""
    return sorted(n for n in names if any(m == n or m.startswith(f"{n}.") for m in modules))


@pytest.fixture(scope="module")
def master_keys() -> str:
    """One master key for the module: the stocked database below is sealed with it once."""
    return generate_key_spec("k1")


@pytest.fixture(scope="module")
def stocked_template(
    tmp_path_factory: pytest.TempPathFactory, master_keys: str
) -> tuple[Path, str]:
    """A database with a workspace with something in every list (a key, a live connection,
    an endpoint), made once by the command line; its directory and the workspace's id."""
    directory = tmp_path_factory.mktemp("stocked")
    cli = Cli(
        directory,
        {
            "UM_DATABASE_URL": f"sqlite+aiosqlite:///{directory / 'um.db'}",
            "UM_MASTER_KEYS": master_keys,
        },
    )
    workspace_id = str(cli("workspaces", "create", "Acme", "--json").json()["id"])
    ws = ("--workspace", workspace_id)
    cli("keys", "create", *ws, "--name", "ci").ok()
    cli("connections", "add", *ws, "sms_a", "--default-sender", "ACME",
        "--credential", "usercode=acme", "--credential", "password=pw").ok()  # fmt: skip
    cli("webhooks", "add", *ws, "https://example.com/hooks").ok()
    return directory, workspace_id


@pytest.fixture
def stocked(cli: Cli, database_url: str, stocked_template: tuple[Path, str]) -> str:
    """The stocked database, copied as the test's own (each command may write to it)."""
    directory, workspace_id = stocked_template
    target = Path(database_url.removeprefix("sqlite+aiosqlite:///"))
    for source in directory.glob("um.db*"):  # with its WAL, should one be left
        shutil.copyfile(source, target.with_name(source.name))
    return workspace_id


@pytest.mark.parametrize(
    "argv",
    [
        ["workspaces", "list"],
        ["workspaces", "create", "Beta"],
        ["keys", "list", "--workspace", "{ws}"],
        ["keys", "create", "--workspace", "{ws}", "--test"],
        ["connections", "list", "--workspace", "{ws}"],
        ["webhooks", "list", "--workspace", "{ws}"],
        ["templates", "list", "--workspace", "{ws}"],
    ],
    ids=" ".join,
)
def test_an_admin_command_on_sqlite_imports_no_adapter_http_or_other_dialect(
    cli: Cli, stocked: str, argv: list[str]
) -> None:
    modules = modules_after_command(cli, [arg.format(ws=stocked) for arg in argv])
    assert "sqlalchemy.dialects.sqlite" in modules  # it did open the store
    assert loaded(modules, NOT_FOR_ADMIN) == []


#: What a command that only reads a SQLite store never needs on top: the async engine
#: (aiosqlite, and ``sqlalchemy.ext.asyncio`` with the ORM), made by the first write.
NOT_FOR_READING = ("aiosqlite", "sqlalchemy.ext.asyncio", "sqlalchemy.orm")


@pytest.mark.parametrize(
    "argv",
    [
        ["workspaces", "list"],
        ["keys", "list", "--workspace", "{ws}"],
        ["connections", "list", "--workspace", "{ws}"],
        ["webhooks", "list", "--workspace", "{ws}"],
    ],
    ids=" ".join,
)
def test_a_command_that_only_reads_sqlite_makes_no_async_engine(
    cli: Cli, stocked: str, argv: list[str]
) -> None:
    modules = modules_after_command(cli, [arg.format(ws=stocked) for arg in argv])
    assert loaded(modules, NOT_FOR_READING) == []


def test_a_command_that_writes_makes_the_async_engine(cli: Cli) -> None:
    # Admin writes go through aiosqlite: the probe above would see it.
    modules = modules_after_command(cli, ["workspaces", "create", "Gamma"])
    assert loaded(modules, NOT_FOR_READING) == list(NOT_FOR_READING)


def test_the_adapters_are_still_loaded_when_a_command_needs_them(
    cli: Cli, workspace_id: str
) -> None:
    # Checking credentials needs the provider's schema, which lives with its adapter: the
    # probe above would see them, and the lazy registry does load them when asked.
    add = ["connections", "add", "--workspace", workspace_id, "sms_b",
           "--credential", "api_key=k", "--credential", "api_hash=h"]  # fmt: skip
    modules = modules_after_command(cli, add)
    assert {"unified_messaging.providers.registry", "httpx"} <= modules
    assert "unified_messaging.webhooks._transport" not in modules
    assert "unified_messaging.webhooks._http11" not in modules
