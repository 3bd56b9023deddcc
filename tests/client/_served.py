"""The real ``unified-messaging serve`` as a subprocess on a port the test chooses, so a test can
kill it and start it again at the same address (a deployed server, as a ``Client`` meets it)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class Served:
    proc: subprocess.Popen[str]
    url: str
    started: dict[str, Any]


@contextmanager
def serving(
    cwd: Path, port: int, master_keys: str, *args: str, env: dict[str, str] | None = None
) -> Iterator[Served]:
    """``serve --json --port PORT *args`` in ``cwd`` (its SQLite database lives there)."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("UM_")}
    environ |= {"UM_MASTER_KEYS": master_keys, **(env or {})}
    argv: Sequence[str] = ["serve", "--port", str(port), "--json", *args]
    log = (cwd / "serve.log").open("a")
    proc = subprocess.Popen(  # noqa: S603 - our own interpreter and fixed arguments
        [sys.executable, "-m", "unified_messaging", *argv],
        cwd=cwd, env=environ, stdout=subprocess.PIPE, stderr=log, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line, (cwd / "serve.log").read_text()
        yield Served(proc, f"http://127.0.0.1:{port}", json.loads(line))
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(30)
        assert proc.stdout is not None
        proc.stdout.close()
        log.close()
