"""What an app from ``create_app`` runs beside its requests, and who starts it.

The messenger has to be open, the worker running (unless ``worker=False``) and ``/mcp``'s
session manager running before requests are served. The app's lifespan starts them and stops
them with the server. An app mounted in a host gets no lifespan events (ASGI servers send them
to the outermost app, and Starlette's and FastAPI's ``Mount`` do not pass them on), so unless
the host runs :func:`~unified_messaging.asgi.app_lifespan`, nothing would start them: ``/mcp``
could not answer and no delivery report would ever arrive.

:class:`Runtime` is the safety net for that case. The first request that finds nothing running
starts it, in a task of its own on the request's event loop, and logs once that it did; it
stops when that loop ends (``asyncio.run`` and every ASGI server cancel the tasks left when
they finish, and the task's cancellation runs the same shutdown as the lifespan's). A worker
item interrupted there is taken up again by the next worker once its lease runs out, as after
any stop. A host with a lifespan of its own should still run ``app_lifespan(app)`` in it: then
everything stops when the host stops, in order, before the loop ends.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, TypeAlias

from starlette.types import ASGIApp, Receive, Scope, Send

from .._errors import MessagingError
from ._errors import error_response

if TYPE_CHECKING:
    from .._messenger import Messenger

__all__ = ["LazyStartMiddleware", "Lifespan", "Runtime", "messenger_lifespan"]

logger = logging.getLogger("unified_messaging.asgi")

Lifespan: TypeAlias = Callable[[object], AbstractAsyncContextManager[None]]


class Runtime:
    """Runs ``parts`` (the context that starts and stops everything) once at a time: inside the
    app's lifespan (:meth:`lifespan`), or from a first request (:meth:`ensure_started`)."""

    def __init__(self, parts: Lifespan, *, what: str) -> None:
        self._parts = parts
        self._what = what  # for the log: "the messenger, the worker and /mcp"
        self._in_lifespan = False
        self._lazy: _LazyRun | None = None
        self._told = False

    def lifespan(self, app: object) -> AbstractAsyncContextManager[None]:
        """The app's lifespan: everything runs for as long as it lasts."""
        return self._lifespan(app)

    @asynccontextmanager
    async def _lifespan(self, app: object) -> AsyncIterator[None]:
        lazy = self._lazy
        if lazy is not None and lazy.on_this_loop():
            # A request came before the lifespan started (an unusual host): the lifespan takes
            # over, so that the server's shutdown stops everything.
            await lazy.stop()
        async with self._parts(app):
            self._in_lifespan = True
            try:
                yield
            finally:
                self._in_lifespan = False

    async def ensure_started(self, app: object) -> None:
        """Return once everything runs; start it on this loop if nothing does.

        Raises what starting raised (a store that cannot be opened, say); the next request
        tries again.
        """
        if self._in_lifespan:
            return
        lazy = self._lazy
        if lazy is None or not lazy.usable_here():
            lazy = self._lazy = _LazyRun(self._parts, app, self._what)
            self._tell()
        await lazy.started()

    def _tell(self) -> None:
        if self._told:
            logger.debug("starting %s again, on a new event loop", self._what)
            return
        self._told = True
        logger.warning(
            "create_app()'s app got a request without its lifespan having run (mounted in a "
            "host?): it started %s itself, and stops them when the event loop ends. Run "
            "app_lifespan(app) in the host's lifespan to start and stop them with the host.",
            self._what,
        )


class _LazyRun:
    """``parts`` entered in a task of its own on the current loop, until the task is cancelled."""

    def __init__(self, parts: Lifespan, app: object, what: str) -> None:
        self._what = what
        self._loop = asyncio.get_running_loop()
        self._ready: asyncio.Future[None] = self._loop.create_future()
        # A fresh context: the task outlives the request that started it, and must not carry
        # that request's context variables into the worker's logs and calls.
        self._task = asyncio.create_task(
            self._run(parts, app),
            name="unified-messaging runtime (started by a request)",
            context=contextvars.Context(),
        )

    async def _run(self, parts: Lifespan, app: object) -> None:
        try:
            async with parts(app):
                self._ready.set_result(None)
                await asyncio.Event().wait()  # until the loop's end cancels the task
        except asyncio.CancelledError:
            if not self._ready.done():
                self._ready.cancel()
            else:
                logger.info("stopped %s, which a request had started", self._what)
            raise
        except Exception as exc:
            if not self._ready.done():
                self._ready.set_exception(exc)  # the waiting requests raise it; next one retries
            else:
                logger.exception("stopping what a request started failed")

    def on_this_loop(self) -> bool:
        try:
            return asyncio.get_running_loop() is self._loop
        except RuntimeError:  # pragma: no cover - always called from a coroutine
            return False

    def usable_here(self) -> bool:
        """Running, or starting, on this loop (not failed, not stopped, not another loop's)."""
        if not self.on_this_loop() or self._task.done():
            return False
        return not (self._ready.done() and self._ready.exception() is not None)

    async def started(self) -> None:
        if self._ready.done():
            self._ready.result()
            return
        # Shielded: a waiting request that is cancelled (its client left) must not cancel
        # the start-up that other requests wait for too.
        await asyncio.shield(self._ready)

    async def stop(self) -> None:
        self._task.cancel()
        try:
            await self._task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise


class LazyStartMiddleware:
    """Before each HTTP request: make sure the runtime runs (:meth:`Runtime.ensure_started`)."""

    def __init__(self, app: ASGIApp, *, runtime: Runtime) -> None:
        self.app = app
        self._runtime = runtime

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            try:
                await self._runtime.ensure_started(scope.get("app"))
            except MessagingError as exc:  # the store could not be opened: a 503, not a 500
                await error_response(exc)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def messenger_lifespan(messenger: Messenger) -> Lifespan:
    """A lifespan that opens ``messenger`` on startup and closes it on shutdown.

    Enough for a host that mounts an app that runs nothing else beside its requests
    (``create_app(..., mcp=False, worker=False)``). An app that serves ``/mcp`` or runs the
    worker needs them started too: give such a host :func:`app_lifespan` instead, which
    does all of it.
    """

    @asynccontextmanager
    async def lifespan(app: object) -> AsyncIterator[None]:
        await messenger.open()
        try:
            yield
        finally:
            await messenger.aclose()

    return lifespan
