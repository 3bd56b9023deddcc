"""A warm ``python -m unified_messaging`` for the CLI tests: one process per test worker that
has imported the library's heavy dependencies once, and forks a fresh process per command.

Starting the interpreter and importing SQLAlchemy, pydantic, httpx and the rest costs about
half a second per command (seconds on a loaded 2-core machine), which the CLI tests paid
some thousand times. A forked child is still a process of its own: it gets the test's
environment, working directory and stdin, runs ``main`` as ``__main__.py`` does, and exits as
the interpreter would (thread joins, ``atexit``, the final flush of stdout and stderr), with
the status the client reads as ``Popen.returncode`` would be.

Started by ``_cli_support.py`` as ``python _fork_server.py SOCKET``; it stops when its stdin
reaches end of file, i.e. when the test worker that started it is gone. The wire format is
one JSON request per connection (argv, env, cwd, stdin) answered by one JSON result
(returncode, stdout, stderr). What a warm process can not reproduce (interpreter settings
such as ``PYTHON*`` variables, and what gets imported) ``_cli_support`` leaves to a real
subprocess and ``test_cli_imports.py`` probes in a fresh interpreter of its own.
"""

from __future__ import annotations

import atexit
import gc
import importlib
import json
import os
import pkgutil
import selectors
import shutil
import socket
import sys
import tempfile
import threading
import traceback
from typing import Any, NoReturn

#: Imported before any fork: the library (every module but the test helpers and Alembic's
#: scripts, which run when imported) and so every dependency a command pays for at start.
#: No module of the library reads the environment or the working directory when imported.
SKIP = (
    "unified_messaging.testing",
    "unified_messaging.__main__",
    "unified_messaging.store.migrations.",
)


def _preload() -> None:
    import unified_messaging

    for module in pkgutil.walk_packages(unified_messaging.__path__, "unified_messaging."):
        if not module.name.startswith(SKIP):
            importlib.import_module(module.name)


#: What a forked worker is to run: the request, its stdout and stderr, its stdin's file.
Command = tuple[dict[str, Any], int, int, "str | None"]


def _run_command(request: dict[str, Any], out: int, err: int, stdin_path: str | None) -> None:
    """In the forked worker: become the command's process, run ``main`` and exit with its
    status as ``python -m unified_messaging`` does (an uncaught error prints its traceback
    and exits 1)."""
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    stdin_fd = os.open(stdin_path or os.devnull, os.O_RDONLY)
    os.dup2(stdin_fd, 0)
    os.close(stdin_fd)
    os.dup2(out, 1)
    os.dup2(err, 2)
    import unified_messaging.__main__ as entry
    from unified_messaging.cli import main

    sys.argv = [entry.__file__, *request["argv"]]
    try:
        status = main(request["argv"])
    except SystemExit as exc:
        status = exc.code
    except BaseException:
        traceback.print_exc()
        status = 1
    _exit(status)


def _exit(status: object) -> NoReturn:
    """What the interpreter does at exit that a command can see, without freeing every
    object of the preloaded libraries one by one (most of a warm command's time)."""
    if status is None:
        code = 0
    elif isinstance(status, int):
        code = status
    else:
        print(status, file=sys.stderr)
        code = 1
    threading._shutdown()  # type: ignore[attr-defined]  # joins non-daemon threads
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            code = 120  # as Py_Finalize: a final flush that fails makes the status 120
    os._exit(code & 0xFF)


def _handle(conn: socket.socket) -> Command | None:
    """In the forked manager: run one command in a child of its own and answer with the
    child's exit status and output. Returns, in that child only, the command to run."""
    raw = b""
    while not raw.endswith(b"\n"):
        chunk = conn.recv(65536)
        if not chunk:
            break
        raw += chunk
    request = json.loads(raw)
    scratch = tempfile.mkdtemp(prefix="um-cli-")
    stdin_path = None
    if request["stdin"] is not None:
        stdin_path = os.path.join(scratch, "stdin")
        with open(stdin_path, "w", encoding="utf-8") as f:
            f.write(request["stdin"])
    out = os.open(os.path.join(scratch, "out"), os.O_RDWR | os.O_CREAT)
    err = os.open(os.path.join(scratch, "err"), os.O_RDWR | os.O_CREAT)
    pid = os.fork()
    if pid == 0:
        conn.close()
        return request, out, err, stdin_path
    _, status = os.waitpid(pid, 0)
    with open(os.path.join(scratch, "out"), encoding="utf-8") as f:
        stdout = f.read()
    with open(os.path.join(scratch, "err"), encoding="utf-8") as f:
        stderr = f.read()
    shutil.rmtree(scratch, ignore_errors=True)
    answer = {"returncode": os.waitstatus_to_exitcode(status), "stdout": stdout, "stderr": stderr}
    conn.sendall(json.dumps(answer).encode())
    return None


def serve(path: str) -> Command | None:
    """Serve until the test worker is gone; returns, in a forked worker, its command."""
    _preload()
    gc.freeze()  # the preloaded objects stay shared with the forks instead of being copied
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(path)
        listener.listen(64)
        print("ready", flush=True)
        selector = selectors.DefaultSelector()
        selector.register(listener, selectors.EVENT_READ)
        selector.register(sys.stdin, selectors.EVENT_READ)
        while True:
            for key, _ in selector.select():
                if key.fileobj is sys.stdin:
                    if not sys.stdin.buffer.read1(1):
                        return None  # the test worker is gone
                    continue
                conn, _ = listener.accept()
                if os.fork() == 0:
                    listener.close()
                    selector.close()
                    command = None
                    try:
                        command = _handle(conn)
                    finally:
                        if command is None:
                            os._exit(0)  # a manager never runs the server's exit
                    return command
                conn.close()
                _reap()


def _reap() -> None:
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


if __name__ == "__main__":
    command = serve(sys.argv[1])
    if command is not None:
        _run_command(*command)
