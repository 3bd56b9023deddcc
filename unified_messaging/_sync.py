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
from datetime import datetime
from types import TracebackType
from typing import Any, Concatenate, Final, ParamSpec, Self, TypeVar

from ._access.ratelimit import RateLimitPolicy
from ._clock import Clock
from ._connection_ops import CredentialField
from ._domain import ApiKey
from ._messenger import Messenger
from ._observability.metrics import Metrics
from .consents.sync import SyncConsents
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
        #: İYS consents (D33), blocking: ``sync_messenger.consents.create(...)``.
        self.consents = SyncConsents(self.messenger.consents, self._run)
        #: D34's one-time codes, blocking (``messenger.verifications``' twin).
        self.verifications = SyncVerifications(self.messenger.verifications, self._run)

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

    def now(self) -> datetime:
        return self.messenger.now()

    def rate_policy(self, key: ApiKey) -> RateLimitPolicy:
        return self.messenger.rate_policy(key)

    preview_template = staticmethod(Messenger.preview_template)

    # -- sending and reading
    authenticate = _blocking(Messenger.authenticate)
    principal = _blocking(Messenger.principal)
    send = _blocking(Messenger.send)
    send_bulk = _blocking(Messenger.send_bulk)
    send_code = _blocking(Messenger.send_code)
    current_answer = _blocking(Messenger.current_answer)
    get_message = _blocking(Messenger.get_message)
    get_message_json = _blocking(Messenger.get_message_json)
    cancel_message = _blocking(Messenger.cancel_message)
    list_providers = _blocking(Messenger.list_providers)
    list_messages = _blocking(Messenger.list_messages)
    connection_stats = _blocking(Messenger.connection_stats)
    connection_health = _blocking(Messenger.connection_health)
    message_counts = _blocking(Messenger.message_counts)

    # -- access checks (what the REST app runs for each request)
    authorize = _blocking(Messenger.authorize)
    check_client_ip = _blocking(Messenger.check_client_ip)
    hit_rate_limit = _blocking(Messenger.hit_rate_limit)

    # -- delivery reports and the worker
    ingest_dlr = _blocking(Messenger.ingest_dlr)
    dlr_challenge = _blocking(Messenger.dlr_challenge)
    test_connection = _blocking(Messenger.test_connection)

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

    # -- workspaces, quota and API keys
    create_workspace = _blocking(Messenger.create_workspace)
    get_workspace = _blocking(Messenger.get_workspace)
    list_workspaces = _blocking(Messenger.list_workspaces)
    set_monthly_quota = _blocking(Messenger.set_monthly_quota)
    set_retry_unavailable = _blocking(Messenger.set_retry_unavailable)
    set_queue_ttl = _blocking(Messenger.set_queue_ttl)
    set_recipient_limit = _blocking(Messenger.set_recipient_limit)
    set_quiet_hours = _blocking(Messenger.set_quiet_hours)
    set_text_masking = _blocking(Messenger.set_text_masking)
    quota_usage = _blocking(Messenger.quota_usage)
    create_api_key = _blocking(Messenger.create_api_key)
    list_api_keys = _blocking(Messenger.list_api_keys)
    revoke_api_key = _blocking(Messenger.revoke_api_key)

    # -- connections
    add_connection = _blocking(Messenger.add_connection)
    list_connections = _blocking(Messenger.list_connections)
    get_connection = _blocking(Messenger.get_connection)

    rotate_vault = _blocking(Messenger.rotate_vault)
    rotate_credentials = _blocking(Messenger.rotate_credentials)
    set_default_connection = _blocking(Messenger.set_default_connection)
    set_breaker_policy = _blocking(Messenger.set_breaker_policy)
    set_send_rate = _blocking(Messenger.set_send_rate)
    set_senders = _blocking(Messenger.set_senders)
    remove_connection = _blocking(Messenger.remove_connection)
    connection_of = _blocking(Messenger.connection_of)

    def credential_fields(self, provider: str) -> list[CredentialField]:
        return self.messenger.credential_fields(provider)

    # -- IP allowlist
    add_allowlist_entry = _blocking(Messenger.add_allowlist_entry)
    remove_allowlist_entry = _blocking(Messenger.remove_allowlist_entry)
    list_allowlist = _blocking(Messenger.list_allowlist)

    # -- suppression list (issue 26)
    add_suppression = _blocking(Messenger.add_suppression)
    remove_suppression = _blocking(Messenger.remove_suppression)
    simulate_inbound = _blocking(Messenger.simulate_inbound)
    import_suppressions = _blocking(Messenger.import_suppressions)
    list_suppressions = _blocking(Messenger.list_suppressions)

    # -- templates
    set_template = _blocking(Messenger.set_template)
    get_template = _blocking(Messenger.get_template)
    list_templates = _blocking(Messenger.list_templates)
    delete_template = _blocking(Messenger.delete_template)

    # -- audit log (D32)
    list_audit_events = _blocking(Messenger.list_audit_events)

    # -- webhook endpoints
    create_webhook_endpoint = _blocking(Messenger.create_webhook_endpoint)
    list_webhook_endpoints = _blocking(Messenger.list_webhook_endpoints)
    get_webhook_endpoint = _blocking(Messenger.get_webhook_endpoint)
    remove_webhook_endpoint = _blocking(Messenger.remove_webhook_endpoint)
    rotate_webhook_secret = _blocking(Messenger.rotate_webhook_secret)
    enable_webhook_endpoint = _blocking(Messenger.enable_webhook_endpoint)
    disable_webhook_endpoint = _blocking(Messenger.disable_webhook_endpoint)
    list_webhook_deliveries = _blocking(Messenger.list_webhook_deliveries)
    webhook_endpoint_of = _blocking(Messenger.webhook_endpoint_of)
    webhook_delivery_of = _blocking(Messenger.webhook_delivery_of)
    set_webhook_events = _blocking(Messenger.set_webhook_events)
    redeliver_webhook = _blocking(Messenger.redeliver_webhook)
    send_test_webhook = _blocking(Messenger.send_test_webhook)
    webhook_deliveries_about = _blocking(Messenger.webhook_deliveries_about)

    # -- dashboard users (D31)
    create_user = _blocking(Messenger.create_user)
    list_users = _blocking(Messenger.list_users)
    get_user = _blocking(Messenger.get_user)
    find_user = _blocking(Messenger.find_user)
    disable_user = _blocking(Messenger.disable_user)
    check_user_password = _blocking(Messenger.check_user_password)


async def _build() -> Messenger:
    # Built on the loop thread so anything it creates binds to that loop.
    return Messenger()


async def _new_event() -> asyncio.Event:
    return asyncio.Event()
