"""Every script in examples/ runs as a reader would run it, and prints what it promises."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

#: Each script and a line fragment its output must contain.
SCRIPTS = {
    "send_single.py": "via sms_a",
    "send_bulk_template.py": "bulk: total 4, sent 2, failed 2",
    "mcp_agent_client.py": 'a landline: is_error "INVALID_RECIPIENT"',
    "fallback.py": "two rejections: sent via sms_c [sms_a rejected, sms_b rejected, sms_c acc",
    "sync_django_style.py": "401 {'error': {'code': 'UNAUTHORIZED'",
    "webhook_receiver.py": "genuine: 204; tampered: 400 rejected: no_matching_signature",
}


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - our own interpreter and fixed arguments
        [sys.executable, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
        check=False,
    )


def test_every_example_script_is_covered() -> None:
    scripts = {path.name for path in EXAMPLES.glob("*.py")}
    assert scripts == {*SCRIPTS, "pytest_outbox_example.py"}


@pytest.mark.parametrize(("script", "expected"), sorted(SCRIPTS.items()))
def test_example_runs_and_prints_its_key_line(script: str, expected: str) -> None:
    result = run(str(EXAMPLES / script))

    assert result.returncode == 0, result.stderr
    assert expected in result.stdout


def test_pytest_example_passes_under_pytest() -> None:
    result = run(
        "-m", "pytest", "examples/pytest_outbox_example.py", "-q", "-p", "no:cacheprovider"
    )

    assert result.returncode == 0, result.stdout + result.stderr
    assert "5 passed" in result.stdout
