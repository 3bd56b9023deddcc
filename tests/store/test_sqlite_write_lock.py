"""The writers of one SQLite file take turns through its ``-wlock`` file (``_sql_write_lock``):
a waiter goes on as soon as the holder lets go, never sleeps through it, and never waits
longer than the busy time-out."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from test_store_contract import a_message, a_workspace

from unified_messaging.store._sql_write_lock import WriteLock, write_lock_path
from unified_messaging.store.sql import SqlStore


def test_the_lock_file_sits_beside_the_database() -> None:
    assert write_lock_path(Path("/data/um.db")) == Path("/data/um.db-wlock")


def test_a_waiter_goes_on_soon_after_the_holder_lets_go(tmp_path: Path) -> None:
    path = tmp_path / "x-wlock"
    holder, waiter = WriteLock(path, 5.0), WriteLock(path, 5.0)
    entered = threading.Event()
    released_at: list[float] = []

    def wait() -> None:
        with waiter:
            entered.set()
            assert waiter.held
            assert released_at  # only once the holder let go

    with holder:
        assert holder.held
        thread = threading.Thread(target=wait)
        thread.start()
        assert not entered.wait(0.05)  # waiting while the lock is held
        released_at.append(time.monotonic())
    assert entered.wait(2.0)
    thread.join()
    assert not holder.held and not waiter.held
    holder.close()
    waiter.close()


def test_a_waiter_gives_up_the_file_lock_after_the_busy_time_out(tmp_path: Path) -> None:
    path = tmp_path / "x-wlock"
    holder, waiter = WriteLock(path, 5.0), WriteLock(path, 0.05)
    with holder:
        started = time.monotonic()
        with waiter:
            # Went on without the file lock: SQLite's own lock decides from here.
            assert not waiter.held
            assert time.monotonic() - started >= 0.05
    holder.close()
    waiter.close()


def test_a_waiter_that_gave_up_leaves_no_lock_behind(tmp_path: Path) -> None:
    # Its helper still waits in the kernel; when the turn comes, nobody wants it any more
    # and the helper lets go, so the next writer is not shut out.
    path = tmp_path / "x-wlock"
    holder, waiter, third = WriteLock(path, 5.0), WriteLock(path, 0.05), WriteLock(path, 5.0)
    with holder, waiter:
        assert not waiter.held
    with third:
        assert third.held
    with waiter:
        assert waiter.held
    for lock in (holder, waiter, third):
        lock.close()


def test_a_waiter_that_gave_up_takes_the_turn_its_helper_still_waits_for(
    tmp_path: Path,
) -> None:
    path = tmp_path / "x-wlock"
    holder, waiter = WriteLock(path, 5.0), WriteLock(path, 1.0)
    holder.__enter__()
    with waiter:
        assert not waiter.held  # gave up after its time-out; the helper waits on
    threading.Timer(0.1, holder.__exit__, (None, None, None)).start()
    with waiter:
        assert waiter.held  # the helper's turn, handed to this wait
    holder.close()
    waiter.close()


def test_a_holder_that_dies_lets_go(tmp_path: Path) -> None:
    path = tmp_path / "x-wlock"
    holder = subprocess.Popen(  # noqa: S603 - our own interpreter and fixed arguments
        [sys.executable, "-c",
         "import fcntl, os, sys, time\n"
         f"fd = os.open({str(path)!r}, os.O_RDWR | os.O_CREAT, 0o600)\n"
         "fcntl.flock(fd, fcntl.LOCK_EX)\n"
         "print('held', flush=True)\n"
         "time.sleep(60)\n"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        waiter = WriteLock(path, 30.0)
        threading.Timer(0.2, holder.kill).start()
        started = time.monotonic()
        with waiter:
            assert waiter.held
        assert time.monotonic() - started < 10  # the kill, not the 30 s time-out
        waiter.close()
    finally:
        holder.kill()
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()


def test_a_lock_file_that_cannot_be_made_leaves_the_turns_to_sqlite(tmp_path: Path) -> None:
    lock = WriteLock(tmp_path / "missing-dir" / "x-wlock", 5.0)
    with lock:
        assert not lock.held
    lock.close()


def test_closing_lets_go_of_a_held_lock(tmp_path: Path) -> None:
    path = tmp_path / "x-wlock"
    first = WriteLock(path, 5.0)
    first.__enter__()
    assert first.held
    first.close()
    second = WriteLock(path, 0.0)
    with second:
        assert second.held
    second.close()


async def test_the_store_writes_under_the_lock_and_lets_go_after_each_commit(
    tmp_path: Path,
) -> None:
    path = tmp_path / "um.db"
    store = SqlStore(f"sqlite+aiosqlite:///{path}")
    await store.open()
    try:
        await store.create_workspace(a_workspace())
        await store.insert_messages([a_message()])  # through the group-commit writer
        lock = write_lock_path(path)
        assert lock.exists()
        other = WriteLock(lock, 0.0)
        with other:
            assert other.held  # nobody holds it between transactions
        other.close()
    finally:
        await store.close()


def test_two_processes_writing_one_file_both_commit_everything(tmp_path: Path) -> None:
    """Two store processes sending at once through one file: every row of both commits
    (SQLite's lock is still the truth; the file lock only hands the turns over)."""
    path = tmp_path / "um.db"
    script = (
        "import asyncio, sys\n"
        "sys.path.insert(0, sys.argv[2])\n"
        "from test_store_contract import a_message, a_workspace\n"
        "from unified_messaging.store.sql import SqlStore\n"
        "async def main():\n"
        "    store = SqlStore(f'sqlite+aiosqlite:///{sys.argv[1]}')\n"
        "    await store.open()\n"
        "    prefix = sys.argv[3]\n"
        "    ids = [f'msg_{prefix}{i:04d}' for i in range(200)]\n"
        "    await asyncio.gather(*(store.insert_messages([a_message(job_id=i)]) for i in ids))\n"
        "    await store.close()\n"
        "asyncio.run(main())\n"
    )
    here = str(Path(__file__).parent)

    async def setup() -> None:
        store = SqlStore(f"sqlite+aiosqlite:///{path}")
        await store.open()
        await store.create_workspace(a_workspace())
        await store.close()

    import asyncio

    asyncio.run(setup())
    env = {**os.environ}
    procs = [
        subprocess.Popen(  # noqa: S603 - our own interpreter and fixed arguments
            [sys.executable, "-c", script, str(path), here, prefix], env=env
        )
        for prefix in ("a", "b")
    ]
    assert [p.wait(120) for p in procs] == [0, 0]

    async def count() -> int:
        store = SqlStore(f"sqlite+aiosqlite:///{path}")
        await store.open()
        try:
            workspace = a_workspace()
            found = 0
            for prefix in ("a", "b"):
                for i in range(200):
                    record = await store.get_message(workspace.id, True, f"msg_{prefix}{i:04d}")
                    found += record is not None
            return found
        finally:
            await store.close()

    assert asyncio.run(count()) == 400


async def test_writes_queued_while_another_process_has_the_turn_share_its_commit(
    tmp_path: Path,
) -> None:
    # serve --workers: while one server's writer waits for the turn another process holds,
    # the writes its callers queue join the batch it took, so the turn costs one commit.
    import asyncio

    path = tmp_path / "um.db"
    store = SqlStore(f"sqlite+aiosqlite:///{path}")
    await store.open()
    try:
        await store.create_workspace(a_workspace())
        await store.insert_messages([a_message(job_id="msg_before")])
        writer = store.writer
        assert writer is not None
        batches, operations = writer.batches, writer.operations
        other = WriteLock(write_lock_path(path), 5.0)
        with other:  # another process's turn
            first = asyncio.create_task(store.insert_messages([a_message(job_id="msg_00")]))
            await _until(lambda: writer.queued == 0 and writer.operations == operations, first)
            rest = [
                asyncio.create_task(store.insert_messages([a_message(job_id=f"msg_{n:02d}")]))
                for n in range(1, 10)
            ]
            await _until(lambda: writer.queued == 9, first)
        await asyncio.gather(first, *rest)
        other.close()

        assert (writer.batches - batches, writer.operations - operations) == (1, 10)
        for n in range(10):
            assert await store.get_message("ws_1", True, f"msg_{n:02d}") is not None
    finally:
        await store.close()


async def _until(condition: Callable[[], bool], running: Awaitable[object]) -> None:
    """Let the loop turn until ``condition`` holds (the writer's thread blocks meanwhile)."""
    import asyncio

    for _ in range(1000):
        await asyncio.sleep(0)
        if condition():
            return
    raise AssertionError(f"never came true while {running!r} ran")
