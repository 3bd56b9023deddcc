"""docs/django.md works for a new user: its settings snippet, added to the settings of a
project ``django-admin startproject`` just made, lets ``manage.py check`` and ``migrate`` run
without ``UM_MASTER_KEYS`` (it once lacked ``import os`` and read the variable with ``[]``),
``um_migrate`` makes the file the page tells the command line to use, every snippet's names
are defined or imported, and the install line names the extras the integration needs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Final

import pytest

pytest.importorskip("django")

ROOT: Final = Path(__file__).resolve().parent.parent
PAGE: Final = (ROOT / "docs" / "django.md").read_text("utf-8")
BLOCKS: Final = re.findall(r"```python\n(.*?)```", PAGE, flags=re.DOTALL)
#: The one name the snippets leave to the reader: the project's own model.
_THE_READERS: Final = ("Order",)


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(  # noqa: S603 - our own interpreter, the page's commands
        [sys.executable, *argv], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def test_the_settings_snippet_in_a_new_project_needs_no_master_keys(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("UM_", "DJANGO_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    _run(["-m", "django", "startproject", "mysite", str(tmp_path)], tmp_path, env)
    snippet = next(block for block in BLOCKS if block.startswith("# settings.py"))
    # "# …" is the project's own apps: kept, as a reader keeps theirs.
    assert "    # …\n" in snippet
    settings = tmp_path / "mysite" / "settings.py"
    settings.write_text(settings.read_text("utf-8") + "\n" + snippet.replace(
        "    # …\n", "    *INSTALLED_APPS,\n"), "utf-8")  # fmt: skip

    checked = _run(["manage.py", "check"], tmp_path, env)
    _run(["manage.py", "migrate", "-v", "0"], tmp_path, env)
    migrated = _run(["manage.py", "um_migrate"], tmp_path, env)

    assert "no issues" in checked.stdout
    assert "latest schema" in migrated.stdout
    told = re.search(r"export UM_DATABASE_URL=sqlite\+aiosqlite:///\$PWD/(\S+)", PAGE)
    assert told is not None
    assert (tmp_path / told.group(1)).is_file()  # where um_migrate put the tables
    assert told.group(1) != "db.sqlite3"  # not Django's own file: one writer per file


@pytest.mark.parametrize("block", BLOCKS, ids=[b.splitlines()[0][:40] for b in BLOCKS])
def test_every_python_snippet_defines_or_imports_its_names(block: str, tmp_path: Path) -> None:
    ruff = Path(sys.executable).with_name("ruff")
    if not ruff.exists():
        pytest.skip("ruff is not installed beside this interpreter")
    snippet = tmp_path / "snippet.py"
    snippet.write_text(block, "utf-8")
    done = subprocess.run(  # noqa: S603 - the venv's ruff on the page's snippet
        [str(ruff), "check", "--isolated", "--select", "F821", "--output-format", "concise",
         str(snippet)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    undefined = set(re.findall(r"Undefined name `(\w+)`", done.stdout)) - set(_THE_READERS)
    assert undefined == set(), done.stdout


def test_the_install_line_names_the_extras_the_integration_needs() -> None:
    lines = re.findall(r"pip install '\.\[([^\]]*)\]'", PAGE)
    assert lines
    for extras in lines:
        assert {"django", "sql"} <= {extra.strip() for extra in extras.split(",")}
