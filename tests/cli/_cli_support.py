"""The real ``python -m unified_messaging``, run as a subprocess with a test's environment.

Not in ``conftest.py``: every test folder has a ``conftest`` module, so importing names from
one by that name depends on which was loaded first.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
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
        """Run independent commands side by side (each start costs about half a second);
        ``common`` arguments are appended to every one."""
        environ = self.environ(env)
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
