"""What README.md and docs/testing.md show runs as shown.

The README's two tour snippets run as scripts (the sync one once used an undefined
``api_key``); its quick start waits long enough for the simulated report (it once said two
seconds, and the report lands 2-2.5 s after the send); docs/testing.md's ``ManualClock``
snippet runs with the imports it gives, and its advice for testing the app in process holds.
"""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
from pathlib import Path
from typing import Final

import httpx

from unified_messaging import Messenger
from unified_messaging._lifecycle.worker import Worker
from unified_messaging.asgi import create_app
from unified_messaging.providers.simulator import SimulatorSettings
from unified_messaging.testing import TestBed

ROOT: Final = Path(__file__).resolve().parent.parent
README: Final = (ROOT / "README.md").read_text(encoding="utf-8")
TESTING: Final = (ROOT / "docs" / "testing.md").read_text(encoding="utf-8")
_PYTHON = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
_NUMBERS: Final = {"two": 2, "three": 3, "four": 4, "five": 5}


def section(text: str, heading: str) -> str:
    return text.split(f"{heading}\n", 1)[1].split("\n#", 1)[0]


def run_python(code: str) -> str:
    result = subprocess.run(  # noqa: S603 - our own interpreter and the page's code
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_the_async_tour_snippet_runs() -> None:
    (code,) = _PYTHON.findall(section(README, "### Async: `Messenger`"))
    output = run_python(code)
    assert "sent msg_" in output
    assert "422 INVALID_RECIPIENT" in output


def test_the_consent_and_code_snippet_runs() -> None:
    (code,) = _PYTHON.findall(section(README, "### Consent and one-time codes"))
    lines = run_python(code).splitlines()
    assert lines[0] == "sent failed IYS_CONSENT_MISSING"
    assert lines[1].startswith("Doğrulama kodunuz: ")
    assert lines[2] == "approved"


def test_the_magic_number_fallback_snippet_runs_as_written() -> None:
    # 11-13 fall back only when the request names a fallback list; the snippet once had none.
    (code,) = _PYTHON.findall(section(README, "## Test mode: magic numbers"))
    output = run_python(code).splitlines()
    assert output == ["sent sms_c", "failed PROVIDER_REJECTED"]


def test_the_sync_tour_snippet_runs() -> None:
    (code,) = _PYTHON.findall(section(README, "### Sync: `SyncMessenger`"))
    output = run_python(code)
    assert "sent msg_" in output
    assert output.splitlines()[-1] == "delivered"  # the worker the snippet runs delivered it


def test_the_quick_start_commands_are_on_the_path_scripts_demo_made() -> None:
    # scripts/demo installs into .venv and never activates it: a bare `unified-messaging`
    # after it is "command not found" in the reader's shell.
    quick_start = section(README, "## Quick start")
    named = re.findall(r"(\S*)unified-messaging (?:workspaces|keys|connections|demo|messages)",
                       quick_start)  # fmt: skip
    assert named
    assert all(prefix.endswith(".venv/bin/") for prefix in named), named


def test_the_quick_start_waits_longer_than_the_report_takes() -> None:
    quick_start = section(README, "## Quick start")
    found = re.search(r"(\w+) seconds later", quick_start, re.IGNORECASE)
    assert found is not None
    waited = _NUMBERS[found.group(1).lower()]
    # Due report_delay after the send, picked up within one idle interval of the worker.
    idle = inspect.signature(Worker).parameters["idle_interval"].default
    latest = SimulatorSettings().report_delay.total_seconds() + idle
    assert waited > latest


def test_the_manual_clock_snippet_runs_with_its_imports() -> None:
    (code,) = _PYTHON.findall(section(TESTING, "## `ManualClock`"))
    run_python(code)


async def test_the_app_over_the_testbed_as_testing_md_says(
    um_messenger: Messenger, um_api_key: str, um_testbed: TestBed
) -> None:
    app = create_app(um_messenger, worker=False)
    transport = httpx.ASGITransport(app=app)
    headers = {"Authorization": f"Bearer {um_api_key}"}
    async with httpx.AsyncClient(transport=transport, base_url="http://t", headers=headers) as c:
        sent = await c.post("/v1/messages", json={"to": "05551234567", "body": "Merhaba"})
        assert sent.status_code == 201, sent.text
        job = f"/v1/messages/{sent.json()['job_id']}"
        assert (await c.get(job)).json()["status"] == "sent"
        await um_testbed.settle()
        assert (await c.get(job)).json()["status"] == "delivered"
