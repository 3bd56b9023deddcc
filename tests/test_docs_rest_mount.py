"""docs/rest.md's "Running and mounting it" snippet runs as written, with the workspace and
key the page says to make on the command line (it once used an undefined ``store``, met
``MasterKeyError`` first, and never said where a workspace and key come from)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Final

from unified_messaging.vault._core import generate_key_spec

ROOT: Final = Path(__file__).resolve().parent.parent
SECTION: Final = (
    (ROOT / "docs" / "rest.md").read_text("utf-8").split("## Running and mounting it\n", 1)[1]
)
_SEND: Final = """
import asyncio, httpx, sys
from unified_messaging.asgi import app_lifespan

async def check() -> None:
    async with app_lifespan(app)(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://docs") as client:
            answer = await client.post("/v1/messages", json={"to": "+905551234567", "body": "hi"},
                                       headers={"Authorization": f"Bearer {sys.argv[1]}"})
    print(answer.status_code, answer.json()["status"])

asyncio.run(check())
"""


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(  # noqa: S603 - our own interpreter, the page's commands
        [sys.executable, *argv], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_mount_snippet_serves_the_key_the_page_says_to_make(tmp_path: Path) -> None:
    snippet = re.search(r"```python\n(.*?)```", SECTION, re.DOTALL)
    commands = re.search(r"```console\n(.*?)```", SECTION, re.DOTALL)
    assert snippet is not None and commands is not None
    env = {k: v for k, v in os.environ.items() if not k.startswith("UM_")}
    env["UM_MASTER_KEYS"] = generate_key_spec("k1")
    ids: dict[str, str] = {}
    for line in commands.group(1).splitlines():
        argv = line.removeprefix("$ ").split("#")[0].split()
        assert argv[0] == "unified-messaging"
        argv = [ids.get(arg, arg) for arg in argv[1:]]
        printed = json.loads(_run(["-m", "unified_messaging", *argv, "--json"], tmp_path, env))
        if argv[:2] == ["workspaces", "create"]:
            ids["ws_…"] = printed["id"]
        if argv[:2] == ["keys", "create"]:
            ids["key"] = printed["api_key"]

    answer = _run(["-c", snippet.group(1) + _SEND, ids["key"]], tmp_path, env)
    assert answer.split() == ["201", "sent"]
