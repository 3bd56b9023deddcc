"""``scripts/example NAME`` runs an example with the project's virtualenv, whatever Python
the shell would pick for ``python``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "example"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    # The virtualenv running these tests is the one to use (CI's lives outside the clone).
    env = {**os.environ, "UM_VENV": sys.prefix}
    return subprocess.run(  # noqa: S603 - our own script and fixed arguments
        [str(SCRIPT), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=300,
        check=False,
    )


def test_it_runs_an_example_by_name() -> None:
    result = run("send_single")

    assert result.returncode == 0, result.stderr
    assert "via sms_a" in result.stdout


def test_it_runs_the_pytest_example_under_pytest() -> None:
    result = run("pytest_outbox_example", "-q")

    assert result.returncode == 0, result.stdout + result.stderr
    assert "5 passed" in result.stdout


def test_an_unknown_name_lists_the_examples() -> None:
    result = run("nope")

    assert result.returncode == 2
    assert "no example named 'nope'" in result.stderr
    assert "send_single" in result.stderr
    assert "webhook_receiver" in result.stderr
