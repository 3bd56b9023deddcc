"""Helpers for the crash tests: a database of the test's own, a flaky webhook receiver, and the
real ``python -m unified_messaging worker`` as a process the test may SIGKILL.

Not in ``conftest.py``: every test folder has a ``conftest`` module, so importing names from
one by that name depends on which was loaded first.

PostgreSQL gets a whole database per test (not a schema, as the store tests use): the worker
is a separate process that only takes ``--database-url``, so the URL alone must name an
isolated place.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import asyncpg
import sqlalchemy as sa
from fakes._server import serve
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from unified_messaging.webhooks import WebhookVerificationError, verify

__all__ = [
    "POSTGRES_ENV",
    "HookRequest",
    "Receiver",
    "WorkerProcess",
    "postgres_database",
    "run_serve",
    "running_receiver",
    "sql_rows",
]

POSTGRES_ENV = "UM_TEST_POSTGRES_URL"


def _asyncpg_dsn(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


@contextlib.asynccontextmanager
async def postgres_database(server_url: str) -> AsyncIterator[str]:
    """A fresh, empty PostgreSQL database on the server of ``server_url``; yields its URL and
    drops it (with any connection a killed worker left behind) at the end."""
    name = f"um_crash_{os.getpid()}_{uuid.uuid4().hex[:10]}"
    admin = await asyncpg.connect(_asyncpg_dsn(server_url))
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    try:
        yield make_url(server_url).set(database=name).render_as_string(hide_password=False)
    finally:
        admin = await asyncpg.connect(_asyncpg_dsn(server_url))
        try:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await admin.close()


async def sql_rows(url: str, query: str) -> list[sa.Row[tuple[object, ...]]]:
    """Rows of one query on the database a process under test uses, over a connection of
    the test's own."""
    engine = create_async_engine(url, poolclass=NullPool)
    try:
        async with engine.connect() as connection:
            return list((await connection.execute(sa.text(query))).all())
    finally:
        await engine.dispose()


# -- the webhook receiver ------------------------------------------------------------------------


@dataclass(frozen=True)
class HookRequest:
    """One request the receiver got, and what it answered."""

    webhook_id: str
    body: bytes
    verified: bool
    answered: int

    @property
    def event(self) -> dict[str, object]:
        event: dict[str, object] = json.loads(self.body)
        return event

    @property
    def event_type(self) -> str:
        return str(self.event["type"])

    @property
    def job_id(self) -> str:
        data = self.event["data"]
        assert isinstance(data, dict)
        return str(data["job_id"])


@dataclass
class Receiver:
    """Answers 500 to the first request of every ``webhook-id`` and 200 to the later ones,
    so every event is retried once; checks every signature against ``secret``."""

    base_url: str = ""
    secret: str = ""
    requests: list[HookRequest] = field(default_factory=list)
    _arrived: asyncio.Condition = field(default_factory=asyncio.Condition)

    @property
    def url(self) -> str:
        return self.base_url + "/hook"

    def by_webhook_id(self) -> dict[str, list[HookRequest]]:
        found: dict[str, list[HookRequest]] = {}
        for request in self.requests:
            found.setdefault(request.webhook_id, []).append(request)
        return found

    async def wait_for_more_than(self, count: int, *, within: float) -> None:
        """Until more than ``count`` requests arrived, or ``within`` seconds passed."""
        async with self._arrived:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    self._arrived.wait_for(lambda: len(self.requests) > count), within
                )

    async def _handle(self, request: Request) -> Response:
        body = await request.body()
        headers = dict(request.headers)
        webhook_id = headers.get("webhook-id", "")
        try:
            verify(body, headers, self.secret)
        except WebhookVerificationError:
            verified = False
        else:
            verified = True
        seen = any(r.webhook_id == webhook_id for r in self.requests)
        status = 200 if seen and verified else 500
        self.requests.append(HookRequest(webhook_id, body, verified, status))
        async with self._arrived:
            self._arrived.notify_all()
        return Response(status_code=status)


@contextlib.asynccontextmanager
async def running_receiver() -> AsyncIterator[Receiver]:
    receiver = Receiver()
    app = Starlette(routes=[Route("/hook", receiver._handle, methods=["POST"])])
    async with serve(app) as base_url:
        receiver.base_url = base_url
        yield receiver


# -- the worker process --------------------------------------------------------------------------


@dataclass
class WorkerProcess:
    """One run of ``python -m unified_messaging worker``; its output goes to a log file."""

    args: Sequence[str]
    env: dict[str, str]
    log_path: Path
    proc: subprocess.Popen[bytes] | None = None
    _log: IO[bytes] | None = None

    def start(self) -> None:
        self._log = self.log_path.open("ab")
        self.proc = subprocess.Popen(  # noqa: S603 - our own interpreter and fixed arguments
            [sys.executable, "-m", "unified_messaging", "worker", *self.args],
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    def kill(self) -> int:
        """SIGKILL: no handler runs, no lease is given back."""
        return self._stop(signal.SIGKILL)

    def terminate(self) -> int:
        """SIGTERM: the worker finishes the items in hand and exits."""
        return self._stop(signal.SIGTERM)

    def _stop(self, sig: signal.Signals) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        code = self.proc.wait(timeout=30)
        if self._log is not None:
            self._log.close()
        return code

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def output(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")


def worker_environment(master_keys: str) -> dict[str, str]:
    """This process's environment without the developer's ``UM_`` settings, plus the test's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("UM_")}
    env["UM_MASTER_KEYS"] = master_keys
    env["UM_WEBHOOK_ALLOW_PRIVATE"] = "1"
    return env


# -- a process death at one exact point, in process ----------------------------------------------


class Crash(BaseException):
    """The process died here. A ``BaseException``, so the worker's ``except Exception`` does
    not catch it: the item stays claimed under its lease, as after a SIGKILL."""


class CrashingStore:
    """A store that dies right after the ``after``-th call of ``method`` once armed: the call
    itself is done (committed), nothing the caller meant to do next happens."""

    def __init__(self, inner: object) -> None:
        self._inner = inner
        self._method = ""
        self._left = 0

    def arm(self, method: str, *, after: int = 1) -> None:
        self._method, self._left = method, after

    def __getattr__(self, name: str) -> object:
        attr = getattr(self._inner, name)
        if name != self._method or not callable(attr):
            return attr

        async def call(*args: object, **kwargs: object) -> object:
            result = await attr(*args, **kwargs)
            if self._method == name:
                self._left -= 1
                if self._left == 0:
                    self._method = ""
                    raise Crash(name)
            return result

        return call


@contextlib.asynccontextmanager
async def run_serve(
    database_url: str, keys: str, log: Path, *, submit_timeout: str
) -> AsyncIterator[tuple[subprocess.Popen[str], str]]:
    """The real ``serve`` on a free port, its worker on; yields the process and its URL.
    ``submit_timeout``: how soon (seconds) the restarted server settles what was cut off.

    Waiting for it happens off the event loop: the test's fakes and proxy run on that loop."""
    args = ["--database-url", database_url, "--submit-timeout", submit_timeout]
    with log.open("a") as stderr:
        proc = subprocess.Popen(  # noqa: S603, ASYNC220 - our interpreter; starting is quick
            [sys.executable, "-m", "unified_messaging", "serve", "--port", "0", "--json", *args],
            env=worker_environment(keys),
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
    try:
        assert proc.stdout is not None
        line = await asyncio.to_thread(proc.stdout.readline)
        assert line, log.read_text()  # noqa: ASYNC240 - only when the test fails
        yield proc, json.loads(line)["url"]
    finally:
        if proc.poll() is None:
            proc.kill()
        await asyncio.to_thread(proc.wait, 30)
        assert proc.stdout is not None
        proc.stdout.close()
