"""``serve --workers N``: N server processes on one listening socket, the worker loop beside
them, and the parent that keeps them running.

The shape is uvicorn's multi-process supervisor (``uvicorn/supervisors/multiprocess.py``):
the parent binds the socket, starts children with the ``spawn`` method (a fresh interpreter:
no event loop, database connection or thread of the parent's is copied into them), hands
each the socket, restarts a child that dies, and on SIGINT/SIGTERM sends every child SIGTERM
and waits for it. Every server child accepts from the one socket, so a restarted child
takes up the same port and nothing the parent printed (``--port 0``'s port) changes.

The background worker loop runs in a child of its own, not inside one of the servers:

* the servers are all alike, so the kernel's and the clients' share of connections is
  work of one kind in each, and none is slower for carrying the loop;
* a server that crashes and is restarted does not take the loop with it (its items would
  wait for their lease), and a loop that crashes is restarted on its own;
* the loop finds its work by claiming due rows from the store, never by a signal from the
  process that wrote them, so beside the servers it does exactly what it does inside one,
  and exactly what ``unified-messaging worker`` does: ``--no-worker`` leaves it out.

Without Redis the parent also keeps the rate-limit buckets of all its servers (D16 exact
across them): :mod:`unified_messaging._access.socket_ratelimit`.
"""

from __future__ import annotations

import argparse
import logging
import multiprocessing
import multiprocessing.connection
import os
import re
import signal
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from multiprocessing.process import BaseProcess
from types import FrameType
from typing import TYPE_CHECKING, Final

from ._args import UsageError
from ._context import database_url, load_vault, open_store, redis_url, webhook_policy
from ._logging import log_config
from ._metrics_options import MetricsSettings
from ._output import emit
from ._serve_socket import base_url, listening
from ._worker_command import work_beside_serve

if TYPE_CHECKING:
    from .._messenger import Messenger
    from ._output import Report

__all__ = ["Child", "Ready", "Supervisor", "serve_many"]

#: Where a server child says it accepts connections (one message on a pipe: a pipe, not a
#: multiprocessing Event, whose semaphore the resource tracker would own).
Ready = multiprocessing.connection.Connection

logger = logging.getLogger("unified_messaging.serve")

#: The listen queue of the shared socket (uvicorn's default): connections wait here while
#: every server is busy, and while the first ones start.
_BACKLOG: Final = 2048
#: How much longer than a server's graceful stop the parent waits before it kills: the
#: worker loop finishes the items it holds, and a webhook may take its 15 s.
_STOP_MARGIN: Final = 10.0
#: Store URLs whose data lives in the process that opens them.
_IN_MEMORY: Final = re.compile(r"memory|sqlite(\+\w+)?:///?(:memory:)?(\?.*)?", re.IGNORECASE)
#: How often the parent looks for a child that died.
_WATCH_SECONDS: Final = 0.5
#: A slot is not restarted sooner than this after its last start: a child that cannot start
#: (a database gone away) is retried once a second, not in a busy loop.
_RESTART_PAUSE: Final = 1.0


@dataclass(frozen=True)
class Child:
    """One kind of child: its name in the log (``server 1``, ``worker``) and what it runs.

    ``target`` runs in the child with ``args``; it must be a module-level function (the
    spawn method pickles it by name) and return when the child is asked to stop (SIGTERM).
    """

    name: str
    target: Callable[..., None]
    args: tuple[object, ...]


@dataclass
class _Slot:
    child: Child
    process: BaseProcess | None = None
    started: float = 0.0
    restarts: int = field(default=0)


class Supervisor:
    """Runs ``children`` until SIGINT or SIGTERM, restarting any that exits before then.

    ``stop_seconds``: how long a child may take to stop (finish its in-flight requests or
    items) after SIGTERM before it is killed.
    """

    def __init__(self, *, stop_seconds: float) -> None:
        self._slots: list[_Slot] = []
        self._stop_seconds = stop_seconds
        self._stopping = threading.Event()
        self._context = multiprocessing.get_context("spawn")
        self._waiting: list[Ready] = []  # the parent's ends of the servers' ready pipes

    def add(self, child: Child) -> None:
        self._slots.append(_Slot(child))

    def ready_pipe(self) -> Ready:
        """The end a child writes to when it is ready; ``run`` calls ``when_ready`` once all
        of them have."""
        reader, writer = self._context.Pipe(duplex=False)
        self._waiting.append(reader)
        return writer

    def run(self, when_ready: Callable[[], None] = lambda: None) -> None:
        previous = {
            sig: signal.signal(sig, self._stop_requested) for sig in (signal.SIGINT, signal.SIGTERM)
        }
        announced = False
        try:
            for slot in self._slots:
                self._start(slot)
            while not self._stopping.wait(_WATCH_SECONDS):
                for slot in self._slots:
                    self._keep_alive(slot)
                if not announced and self._all_ready():
                    announced = True
                    when_ready()
        finally:
            self._stop_all()
            _stop_resource_tracker()
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _all_ready(self) -> bool:
        self._waiting = [reader for reader in self._waiting if not reader.poll()]
        return not self._waiting

    def _stop_requested(self, sig: int, frame: FrameType | None) -> None:
        self._stopping.set()

    def _start(self, slot: _Slot) -> None:
        child = slot.child
        process = self._context.Process(
            target=child.target, args=child.args, name=f"unified-messaging {child.name}"
        )
        process.start()
        slot.process = process
        slot.started = time.monotonic()
        logger.info("started %s (pid %s)", child.name, process.pid)

    def _keep_alive(self, slot: _Slot) -> None:
        process = slot.process
        if process is None or process.is_alive() or self._stopping.is_set():
            return
        if time.monotonic() - slot.started < _RESTART_PAUSE:
            return
        process.join()
        slot.restarts += 1
        logger.warning(
            "%s (pid %s) exited with %s; starting it again (restart %d)",
            slot.child.name,
            process.pid,
            _exit_text(process.exitcode),
            slot.restarts,
        )
        process.close()
        self._start(slot)

    def _stop_all(self) -> None:
        """SIGTERM to every child at once (each stops gracefully, in parallel), then wait; a
        child still running after ``stop_seconds`` is killed."""
        running = [s.process for s in self._slots if s.process is not None]
        for process in running:
            if process.is_alive():
                process.terminate()
        deadline = time.monotonic() + self._stop_seconds
        for process in running:
            process.join(max(0.0, deadline - time.monotonic()))
            if process.is_alive():
                logger.warning(
                    "pid %s did not stop within %g s; killed", process.pid, self._stop_seconds
                )
                process.kill()
                process.join()


def _stop_resource_tracker() -> None:
    """The spawn method starts multiprocessing's resource tracker, one more child of ours.
    It ends by itself once we exit, but for that moment as an orphan: end it first. (Its
    ``_stop`` is private, hence looked up: where it is missing the tracker ends by itself.)"""
    from multiprocessing import resource_tracker

    stop = getattr(resource_tracker._resource_tracker, "_stop", None)
    if stop is not None:
        stop()


def _exit_text(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"status {code}"


StartUp = Callable[["Messenger", argparse.Namespace, socket.socket], Awaitable["Report | None"]]
Server = Callable[[argparse.Namespace, socket.socket, "socket.socket | None", "Ready"], None]


def serve_many(
    args: argparse.Namespace, *, start_up: StartUp, server: Server, stop_seconds: float
) -> None:
    """``serve --workers N`` (N > 1): bind, migrate, print, then supervise the children.

    The parent opens the database once (it is created or migrated before any server runs,
    so N processes never race to migrate it), does ``start_up`` (``--demo``, the printed
    address) and closes it again: after that it only watches its children.
    """
    import asyncio
    import logging.config

    logging.config.dictConfig(log_config(args.log_format, full_numbers=args.log_full_numbers))
    _require_shared_store(args)
    metrics = MetricsSettings.from_args(args)
    metrics.build()  # without the metrics extra: its hint now, not N children's tracebacks
    # The children get what they need to build their own (the parser and the command's
    # function are not picklable, and not needed there).
    plain = argparse.Namespace(
        **{name: value for name, value in vars(args).items() if name not in ("parser", "run")}
    )
    with ExitStack() as stack:
        sock = stack.enter_context(listening(args.host, args.port, _BACKLOG))
        metrics_sock = None
        if metrics.bind is not None:
            metrics_sock = stack.enter_context(listening(*metrics.bind, _BACKLOG))
            address, bound = metrics_sock.getsockname()[:2]
            logging.getLogger("unified_messaging.metrics").info(
                "metrics on %s/metrics", base_url(address, bound, local=False)
            )
        if metrics.enabled:
            stack.enter_context(_shared_metrics_directory())
        plain.limiter_socket = stack.enter_context(_shared_limiter(args))
        report = asyncio.run(_start_up(args, sock, start_up))
        supervisor = Supervisor(stop_seconds=stop_seconds + _STOP_MARGIN)
        for number in range(1, args.workers + 1):
            ready = supervisor.ready_pipe()
            supervisor.add(Child(f"server {number}", server, (plain, sock, metrics_sock, ready)))
        if not args.no_worker:
            supervisor.add(Child("worker", work_beside_serve, (plain,)))

        def announce() -> None:
            # Once every server accepts: a client that starts at once finds them all (an
            # early keep-alive connection would stay with the first server up).
            if report is not None:
                emit(report, as_json=args.json)

        supervisor.run(when_ready=announce)


def _require_shared_store(args: argparse.Namespace) -> None:
    """An in-memory store lives in one process: N servers would be N stores, and the
    ``--demo`` key would be known to none of them."""
    if _IN_MEMORY.fullmatch(database_url(args).strip()):
        raise UsageError(
            "--workers",
            "an in-memory store lives in one process; several server processes need a "
            "database they share (a SQLite file or PostgreSQL)",
        )


@contextmanager
def _shared_limiter(args: argparse.Namespace) -> Iterator[str | None]:
    """D16 stays exact across the servers: with Redis they share its buckets; without, the
    parent keeps the buckets and serves them on a Unix socket (its path, else ``None``), in
    a directory only this user can enter. Buckets in each server would let every key
    through N times its limit."""
    if redis_url(args) is not None:
        yield None
        return
    import shutil
    import tempfile

    from .._access.socket_ratelimit import RateLimitHost

    directory = tempfile.mkdtemp(prefix="unified-messaging-")
    host = RateLimitHost(os.path.join(directory, "ratelimit.sock"))
    try:
        host.start()
        yield host.path
    finally:
        host.stop()
        shutil.rmtree(directory, ignore_errors=True)


async def _start_up(
    args: argparse.Namespace, sock: socket.socket, start_up: StartUp
) -> Report | None:
    from .._messenger import Messenger

    async with Messenger(
        open_store(args), vault=load_vault(), webhook_policy=webhook_policy(demo=args.demo)
    ) as messenger:
        return await start_up(messenger, args, sock)


@contextmanager
def _shared_metrics_directory() -> Iterator[None]:
    """Prometheus' multi-process mode for the children, so a scrape of any server sums
    them all: the operator's ``PROMETHEUS_MULTIPROC_DIR`` if set, else a directory of this
    run's own, removed when it ends."""
    import shutil
    import tempfile

    from .._observability.prometheus import MULTIPROC_ENV, multiprocess_dir

    if multiprocess_dir() is not None:
        yield
        return
    path = tempfile.mkdtemp(prefix="unified-messaging-metrics-")
    os.environ[MULTIPROC_ENV] = path  # the children inherit it; the parent records nothing
    try:
        yield
    finally:
        os.environ.pop(MULTIPROC_ENV, None)
        shutil.rmtree(path, ignore_errors=True)
