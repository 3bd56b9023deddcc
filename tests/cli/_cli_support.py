"""The real ``python -m unified_messaging``, run as a process of its own with a test's
environment: a fork of a warm interpreter that has imported the library once
(``_fork_server.py``), or a fresh interpreter where the two could differ.

Not in ``conftest.py``: every test folder has a ``conftest`` module, so importing names from
one by that name depends on which was loaded first.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TIMEOUT = 60


@dataclass(frozen=True)
class Result:
    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def json(self) -> Any:
        assert self.returncode == 0, self.stderr
        return json.loads(self.stdout)

    def ok(self) -> Result:
        assert self.returncode == 0, f"{self.args}: {self.stderr}"
        return self


@dataclass
class Cli:
    """The command line, with the test's database and master keys in its environment."""

    cwd: Path
    env: dict[str, str] = field(default_factory=dict)

    def __call__(self, *args: str, stdin: str | None = None, **env: str) -> Result:
        return self.many([args], stdin=stdin, **env)[0]

    def many(
        self,
        argvs: Sequence[Sequence[str]],
        *common: str,
        stdin: str | None = None,
        **env: str,
    ) -> list[Result]:
        """Run independent commands side by side (each fresh start costs about half a
        second); ``common`` arguments are appended to every one."""
        environ = self.environ(env)
        if _warm_can_run(environ):
            return _warm().run([(*argv, *common) for argv in argvs], environ, self.cwd, stdin)
        procs = [
            (
                (*argv, *common),
                subprocess.Popen(  # noqa: S603 - our own interpreter and fixed arguments
                    [sys.executable, "-m", "unified_messaging", *argv, *common],
                    cwd=self.cwd,
                    env=environ,
                    stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                    encoding="utf-8",
                ),
            )
            for argv in argvs
        ]
        results = []
        for argv, proc in procs:
            out, err = proc.communicate(stdin, timeout=TIMEOUT)
            results.append(Result(argv, proc.returncode, out, err))
        return results

    def environ(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """This process's environment without any ``UM_`` setting of the developer's, plus
        the test's; an empty value removes a variable."""
        environ = {k: v for k, v in os.environ.items() if not k.startswith("UM_")}
        environ.update(self.env)
        environ.update(extra or {})
        return {k: v for k, v in environ.items() if v != ""}


#: Set to 1 to run every command in a fresh interpreter, as the tests did before the warm
#: server (a check that the two agree: ``UM_TEST_CLI_FRESH=1 pytest tests/cli``).
FRESH = os.environ.get("UM_TEST_CLI_FRESH") == "1"
#: The environment the warm server starts with (this process's, without ``UM_`` settings).
_SERVER_ENV = {k: v for k, v in os.environ.items() if not k.startswith("UM_")}


def _warm_can_run(environ: Mapping[str, str]) -> bool:
    """Whether a forked warm process is the same as a fresh one for this environment: the
    interpreter reads its ``PYTHON*`` settings at start only, so any difference from the
    server's needs a real start."""
    if FRESH:
        return False
    python = {k: v for k, v in environ.items() if k.startswith("PYTHON")}
    return python == {k: v for k, v in _SERVER_ENV.items() if k.startswith("PYTHON")}


class _WarmServer:
    """``_fork_server.py`` of this test process: each command runs in a fork of it."""

    def __init__(self) -> None:
        self.directory = tempfile.mkdtemp(prefix="um-warm-")
        self.socket_path = os.path.join(self.directory, "cli.sock")
        self.proc = subprocess.Popen(  # noqa: S603 - our own interpreter and fixed arguments
            [sys.executable, str(Path(__file__).with_name("_fork_server.py")), self.socket_path],
            env=_SERVER_ENV,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert self.proc.stdout is not None
        ready = self.proc.stdout.readline()
        assert ready == b"ready\n", f"the warm CLI server did not start: {ready!r}"
        atexit.register(self.stop)

    def run(
        self, argvs: Sequence[tuple[str, ...]], env: dict[str, str], cwd: Path, stdin: str | None
    ) -> list[Result]:
        conns = []
        for argv in argvs:
            conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            conn.settimeout(TIMEOUT)
            conn.connect(self.socket_path)
            request = {"argv": list(argv), "env": env, "cwd": str(cwd), "stdin": stdin}
            conn.sendall(json.dumps(request).encode() + b"\n")
            conns.append((argv, conn))
        results = []
        for argv, conn in conns:
            with conn:
                raw = b""
                while chunk := conn.recv(65536):
                    raw += chunk
            assert raw, f"{argv}: the warm CLI server gave no answer"
            answer = json.loads(raw)
            results.append(Result(argv, answer["returncode"], answer["stdout"], answer["stderr"]))
        return results

    def stop(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()  # its cue to leave
        self.proc.wait(timeout=TIMEOUT)
        assert self.proc.stdout is not None
        # Closed here, not left to the interpreter's exit, where an open pipe is reported as
        # "ResourceWarning: unclosed file <_io.BufferedReader …>".
        self.proc.stdout.close()
        shutil.rmtree(self.directory, ignore_errors=True)


_server: _WarmServer | None = None


def _warm() -> _WarmServer:
    global _server  # one server per test process, started on first use
    if _server is None:
        _server = _WarmServer()
    return _server


def refused_for(stderr: str, field: str) -> bool:
    """``stderr`` is the one-line ``VALIDATION_ERROR`` about ``field``, said as English
    ("The queue TTL must ...", "Invalid quiet hours: ...": ``_errors.field_sentence``)."""
    from unified_messaging._errors import field_sentence

    prefix = "error: VALIDATION_ERROR: "
    message = stderr.removeprefix(prefix)
    openings = (field_sentence(field, "is")[: -len("is")], field_sentence(field, ""))
    return stderr.startswith(prefix) and message.startswith(openings)
