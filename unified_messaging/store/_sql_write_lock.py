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
it still gets SQLite's busy handler). A waiter looks again every 0.1 ms at first, then every
millisecond, for at most the busy time-out; after that it goes on without the file lock and
SQLite decides (busy, then the store's 503), so a process that hangs while holding the file
lock costs the others what it would have cost them anyway, never more. A process that dies
lets go of the lock with its descriptor (the kernel releases ``flock`` locks on close).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from types import TracebackType
from typing import Final

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: SQLite's busy handler alone
    fcntl = None  # type: ignore[assignment]

__all__ = ["WriteLock", "write_lock_path"]

_FIRST_PAUSE: Final = 0.0001
_LONGEST_PAUSE: Final = 0.001


def write_lock_path(database: Path) -> Path:
    """The lock file beside ``database`` (next to SQLite's own ``-wal`` and ``-shm``)."""
    return database.with_name(database.name + "-wlock")


class WriteLock:
    """An exclusive ``flock`` on a lock file, taken around each write transaction.

    Used from the store's one writer thread (never two threads at once); the descriptor is
    opened at first use, owner-only like the database.
    """

    __slots__ = ("_broken", "_fd", "_held", "_path", "_timeout")

    def __init__(self, path: Path, timeout: float) -> None:
        self._path = path
        self._timeout = timeout
        self._fd: int | None = None
        self._held = False
        self._broken = fcntl is None

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
        if self._try(fd):
            return self
        deadline = time.monotonic() + self._timeout
        pause = _FIRST_PAUSE
        while time.monotonic() < deadline:
            time.sleep(pause)
            if self._try(fd):
                return self
            pause = min(pause * 2, _LONGEST_PAUSE)
        return self  # past the busy time-out: without the file lock, SQLite decides

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
        if self._fd is not None:
            fd, self._fd = self._fd, None
            self._held = False
            os.close(fd)  # lets go of the lock too

    def _try(self, fd: int) -> bool:
        assert fcntl is not None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        self._held = True
        return True
