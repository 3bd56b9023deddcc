"""docs/client.md's example runs as written against the real ``serve --demo``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from _served import Served

PAGE = Path(__file__).resolve().parents[2] / "docs" / "client.md"


def test_the_pages_example_runs(demo: Served) -> None:
    (code,) = re.findall(r"```python\n(.*?)```", PAGE.read_text("utf-8"), re.DOTALL)
    env = {**os.environ, "UM_BASE_URL": demo.url, "UM_API_KEY": demo.started["api_key"]}
    done = subprocess.run(  # noqa: S603 - our own interpreter and the page's code
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60,
        check=False,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("sent msg_")
    assert lines[1] == "2 0"
    assert re.fullmatch(r"422 INVALID_RECIPIENT req_\S+", lines[-2]), lines
