"""``SyncMessenger``: the façade for synchronous hosts (Django views, Flask, scripts).

It owns one event loop in one background thread and runs every call of the async
:class:`Messenger` there, so adapters' connection pools and the store's connections keep
living on the loop that made them, whichever thread calls.

Its methods are made from :class:`Messenger`'s own (:func:`_blocking`): the same parameters
and defaults, returning what the coroutine returns, so the two cannot drift apart. A test
(``tests/test_sync_twin.py``) fails when a public ``Messenger`` method has no twin here, and
lists the few that are deliberately different, with why.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import threading
from collections.abc import Callable, Coroutine
from types import TracebackType
from typing import Any, Concatenate, Final, ParamSpec, Self, TypeVar

from ._clock import Clock
from ._messenger import Messenger
from ._observability.metrics import Metrics
from ._sync_namespaces import (
    SyncAccess,
    SyncAllowlist,
    SyncApiKeys,
    SyncAuditLog,
    SyncConnections,
    SyncMessages,
    SyncReports,
    SyncSimulationHelpers,
    SyncSuppressions,
    SyncTemplates,
    SyncUsers,
    SyncVaultAdmin,
    SyncWebhooks,
    SyncWorkspaces,
)
from .accounts._sync import SyncAccounts
from .consents.sync import SyncConsents
from .content.sync import SyncContent
from .iys.sync import SyncIys
from .stats._sync import SyncStats
from .verifications._sync import SyncVerifications

__all__ = ["SyncMessenger"]

P = ParamSpec("P")
T = TypeVar("T")
#: Seconds between two looks at ``run_worker``'s ``stop`` (a ``threading.Event`` cannot be
#: awaited on the loop, so the calling thread checks it).
_STOP_CHECK: Final = 0.1


def _blocking(
    method: Callable[Concatenate[Any, P], Coroutine[Any, Any, T]],
) -> Callable[Concatenate[SyncMessenger, P], T]:
    """The blocking twin of one ``Messenger`` coroutine method, run on the loop thread."""
    name = method.__name__

    @functools.wraps(method)
    def twin(self: SyncMessenger, /, *args: P.args, **kwargs: P.kwargs) -> T:
        # Looked up on the wrapped messenger, so a subclass's override is the one that runs.
        bound: Callable[P, Coroutine[Any, Any, T]] = getattr(self.messenger, name)
        return self._run(bound(*args, **kwargs))

    twin.__qualname__ = f"SyncMessenger.{name}"
    twin.__module__ = __name__
    return twin


class SyncMessenger:
    """Blocking twin of :class:`Messenger`: the same methods, without ``await``.

    ``SyncMessenger(messenger)`` wraps one you built; ``SyncMessenger()`` builds a default
    one. Call :meth:`close` (or use ``with``) to stop the background loop.
    """

    def __init__(self, messenger: Messenger | None = None) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="unified-messaging-loop", daemon=True
        )
        self._thread.start()
        self._closed = False
        self.messenger = messenger if messenger is not None else self._run(_build())
        self._run(self.messenger.open())
        m, run = self.messenger, self._run
        # The namespaces' blocking twins, one per ``Messenger`` namespace.
        self.workspaces = SyncWorkspaces(m.workspaces, run)
        self.keys = SyncApiKeys(m.keys, run)
        self.connections = SyncConnections(m.connections, run)
        self.templates = SyncTemplates(m.templates, run)
        self.allowlist = SyncAllowlist(m.allowlist, run)
        self.webhooks = SyncWebhooks(m.webhooks, run)
        self.suppressions = SyncSuppressions(m.suppressions, run)
        self.users = SyncUsers(m.users, run)
        self.audit = SyncAuditLog(m.audit, run)
        self.vault = SyncVaultAdmin(m.vault, run)
        self.consents = SyncConsents(m.consents, run)
        self.content = SyncContent(m.content, run)
        self.iys = SyncIys(m.iys, run)
        self.verifications = SyncVerifications(m.verifications, run)
        self.access = SyncAccess(m.access, run)
        self.reports = SyncReports(m.reports, run)
        self.messages = SyncMessages(m.messages, run)
        self.stats = SyncStats(m.stats, run)
        self.accounts = SyncAccounts(m.accounts, run)
        self.test_helpers = SyncSimulationHelpers(m.test_helpers, run)

    def __repr__(self) -> str:
        return f"SyncMessenger({self.messenger!r})"

    def _submit(self, coroutine: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        if self._closed:
            coroutine.close()
            raise RuntimeError("SyncMessenger is closed")
        # The task runs in a copy of the caller's context (call_soon_threadsafe copies it),
        # so the actor a sync host sets with acting_as (D32) reaches the admin methods.
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop)

    def _run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return self._submit(coroutine).result()

    def close(self) -> None:
        """Close the messenger and stop the loop thread (``Messenger.aclose``'s twin)."""
        if self._closed:
            return
        try:
            self._run(self.messenger.aclose())
        finally:
            self._closed = True
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()
            self._loop.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- plain methods and properties: nothing to await, so no trip to the loop

    @property
    def clock(self) -> Clock:
        return self.messenger.clock

    @property
    def metrics(self) -> Metrics:
        return self.messenger.metrics

    # -- SPEC's operations
    authenticate = _blocking(Messenger.authenticate)
    principal = _blocking(Messenger.principal)
    send = _blocking(Messenger.send)
    send_bulk = _blocking(Messenger.send_bulk)
    preview_send = _blocking(Messenger.preview_send)
    get_message = _blocking(Messenger.get_message)
    cancel_message = _blocking(Messenger.cancel_message)
    list_messages = _blocking(Messenger.list_messages)

    def run_worker(self, stop: threading.Event | None = None, **options: Any) -> None:
        """Do background work until ``stop`` is set (from any thread) or the calling thread
        is interrupted (Ctrl-C); return once the worker has stopped.

        The blocking twin of :meth:`Messenger.run_worker`, with a ``threading.Event`` for
        ``stop`` (an ``asyncio.Event`` must not be set from another thread). The worker runs
        on the loop thread; this thread only waits. ``options`` as for ``Messenger.worker``.
        """
        halt = self._run(_new_event())
        future = self._submit(self.messenger.run_worker(halt, **options))
        try:
            while not future.done():
                if stop is None:
                    future.result()  # until the worker fails or Ctrl-C
                elif stop.wait(_STOP_CHECK):
                    break
        finally:
            # Also on KeyboardInterrupt: the worker finishes what it holds before it returns.
            self._loop.call_soon_threadsafe(halt.set)
            future.result()


async def _build() -> Messenger:
    # Built on the loop thread so anything it creates binds to that loop.
    return Messenger()


async def _new_event() -> asyncio.Event:
    return asyncio.Event()
