"""Writers of one SQLite file take turns through a lock file, not SQLite's busy handler.

SQLite lets one connection write at a time. Another that asks (``BEGIN IMMEDIATE``) while
the lock is held waits in SQLite's busy handler, which sleeps 1, 2, 5, 10, 15, 20, 25 … ms
between tries and never hears that the lock was freed. In one process that never happens
(one group-commit writer per store), but ``serve --workers N`` runs N servers and a worker
process on one file, each committing every ~2 ms: a writer that found the lock taken slept
through several of the others' transactions, and two servers answered fewer sends than one
(docs/decisions.md, "`serve --workers` on one SQLite file: a lock file for turns").

So each process's writer first takes an exclusive ``flock`` on ``<database>-wlock`` and
holds it around its transaction. The lock is an advisory hand-over between our own writers
only; SQLite's lock stays the truth (another program, or the command line, writing without
it still gets SQLite's busy handler). A waiter hands the blocking ``flock`` to a helper
thread of its lock and waits for it at most the busy time-out: the kernel wakes the helper
when the holder lets go, and the helper the waiter, so a wait costs two wake-ups however
long it lasts (polling woke the writer thread, and took the interpreter's lock from the
event loop, every 0.1 to 1 ms). After the time-out the waiter goes on without the file lock
(the helper lets go of it when it comes) and SQLite decides (busy, then the store's 503),
so a process that hangs while holding the file lock costs the others what it would have
cost them anyway, never more. A process that dies lets go of the lock with its descriptor
(the kernel releases ``flock`` locks on close).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from types import TracebackType

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: SQLite's busy handler alone
    fcntl = None  # type: ignore[assignment]

__all__ = ["WriteLock", "write_lock_path"]


def write_lock_path(database: Path) -> Path:
    """The lock file beside ``database`` (next to SQLite's own ``-wal`` and ``-shm``)."""
    return database.with_name(database.name + "-wlock")


class WriteLock:
    """An exclusive ``flock`` on a lock file, taken around each write transaction.

    Used from the store's one writer thread (never two threads at once); the descriptor is
    opened at first use, owner-only like the database.
    """

    __slots__ = (
        "_asks",
        "_blocking",
        "_broken",
        "_fd",
        "_granted",
        "_held",
        "_helper",
        "_path",
        "_state",
        "_timeout",
        "_wanted",
    )

    def __init__(self, path: Path, timeout: float) -> None:
        self._path = path
        self._timeout = timeout
        self._fd: int | None = None
        self._held = False
        self._broken = fcntl is None
        # The helper that waits in the kernel (started at the first wait), and what it
        # shares with the waiter: ``_state`` guards ``_blocking`` (the helper is in ``flock``),
        # ``_wanted`` (a waiter still wants what it gets) and ``_granted``'s setting.
        self._helper: threading.Thread | None = None
        self._asks = threading.Semaphore(0)
        self._state = threading.Lock()
        self._granted = threading.Event()
        self._blocking = False
        self._wanted = False

    def __repr__(self) -> str:
        return f"WriteLock({str(self._path)!r}, held={self._held})"

    @property
    def held(self) -> bool:
        return self._held

    def __enter__(self) -> WriteLock:
        if self._broken:
            return self
        fd = self._fd
        if fd is None:
            try:
                fd = self._fd = os.open(self._path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            except OSError:
                # A directory SQLite can write in but we cannot create a file in (or a
                # file system without it): turns taken by SQLite's busy handler alone.
                self._broken = True
                return self
        # Not while the helper still waits for an earlier turn: it asks for the same lock.
        if not self._blocking and self._try(fd):
            return self
        self._held = self._wait()
        return self  # not held: past the busy time-out, without the file lock SQLite decides

    def _wait(self) -> bool:
        with self._state:
            self._wanted = True
            self._granted.clear()
            if not self._blocking:
                self._blocking = True
                if self._helper is None:
                    self._helper = threading.Thread(
                        target=self._block, name="unified-messaging write lock", daemon=True
                    )
                    self._helper.start()
                self._asks.release()
        self._granted.wait(self._timeout)
        with self._state:
            # Decided under the lock the helper sets it under: it is ours, or the helper
            # will let go of it when it comes.
            self._wanted = False
            return self._granted.is_set()

    def _block(self) -> None:
        """The helper: on each ask, wait in the kernel for the lock, then give it to the
        waiter, or let go of it when the waiter gave up meanwhile."""
        assert fcntl is not None
        while True:
            self._asks.acquire()
            fd = self._fd
            if fd is None:
                return  # closed
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
            except OSError:
                got = False  # closed under us: the waiter times out, SQLite decides
            else:
                got = True
            with self._state:
                self._blocking = False
                if got and self._wanted and self._fd == fd:
                    self._granted.set()
                elif got and self._fd == fd:
                    fcntl.flock(fd, fcntl.LOCK_UN)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._held and self._fd is not None and fcntl is not None:
            self._held = False
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        with self._state:
            fd, self._fd = self._fd, None
            self._held = False
            if fd is not None:
                os.close(fd)  # lets go of the lock too
        self._asks.release()  # an idle helper ends

    def _try(self, fd: int) -> bool:
        assert fcntl is not None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        self._held = True
        return True
