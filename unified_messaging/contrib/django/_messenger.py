"""The process's :class:`~unified_messaging.SyncMessenger`, as the settings describe it.

Made on first use, never at import: Django imports the app in the reloader's parent process
of ``runserver`` and in a pre-fork server's master, where a loop thread would not survive the
fork. After a fork the child makes its own (the parent's thread does not exist there), and the
process that made one closes it at exit. Under Django's test runner or pytest-django the
messenger sends to the simulator instead (:mod:`.testing`).
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from ..._access.principal import Principal
    from ..._models import SendResponse
    from ..._sync import SyncMessenger
    from ...testing import TestBed
    from ._simulated import TestWebhooks

__all__ = ["get_messenger", "get_principal", "send", "send_on_commit"]

_log = logging.getLogger("unified_messaging.contrib.django")


@dataclass(frozen=True, slots=True)
class _Made:
    pid: int
    messenger: SyncMessenger
    #: Set in tests: the simulated workspace, its principal and outbox.
    testbed: TestBed | None
    #: Set in tests: the events the simulated workspace's webhook endpoint was sent.
    webhooks: TestWebhooks | None = None


_lock = threading.Lock()
_made: _Made | None = None


def get_messenger() -> SyncMessenger:
    """This process's messenger (made now if it has none yet, or only its parent had one)."""
    return _current().messenger


def get_principal() -> Principal:
    """Whose sends :func:`send` makes: the settings' ``API_KEY``, or ``WORKSPACE`` in the mode
    ``TEST_MODE`` says; in tests, the simulated workspace's test key."""
    from .settings import get_settings

    made = _current()
    if made.testbed is not None:
        return made.testbed.principal
    settings = get_settings()
    if settings.api_key:
        return made.messenger.authenticate(settings.api_key)
    if settings.workspace:
        return made.messenger.principal(settings.workspace, livemode=not settings.test_mode)
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured("UNIFIED_MESSAGING needs API_KEY or WORKSPACE to send")


def send(request: Mapping[str, Any] | None = None, /, **fields: Any) -> SendResponse:
    """Send one message as the configured principal: ``send(to="0555…", body="Merhaba")`` or
    ``send({"to": …, "template": …, "variables": {…}})``. Raises the library's errors."""
    body = {**(request or {}), **fields}
    return get_messenger().send(get_principal(), body)


def send_on_commit(
    request: Mapping[str, Any] | None = None,
    /,
    *,
    using: str | None = None,
    on_sent: Callable[[SendResponse], object] | None = None,
    **fields: Any,
) -> None:
    """:func:`send`, once the current transaction of the database ``using`` (Django's
    ``transaction.on_commit``) commits: a transaction that rolls back sends nothing. Outside a
    transaction it sends at once.

    ``on_sent`` gets the :class:`~unified_messaging.SendResponse` (to keep the ``job_id``). The
    library's refusals (:class:`~unified_messaging.MessagingError`) are logged, not raised:
    the transaction has committed by then, and raising would fail a request whose work is
    done. Other exceptions propagate as Django's ``on_commit`` lets them.
    """
    from django.db import transaction

    body = {**(request or {}), **fields}

    def after_commit() -> None:
        from ..._errors import MessagingError

        try:
            sent = send(body)
        except MessagingError as exc:
            # The code only: a message may quote the recipient.
            _log.error("send_on_commit: the message was not sent: %s", exc.code)
            return
        if on_sent is not None:
            on_sent(sent)

    transaction.on_commit(after_commit, using=using)


def _current() -> _Made:
    global _made
    made = _made
    if made is not None and made.pid == os.getpid():
        return made
    with _lock:
        if _made is None or _made.pid != os.getpid():
            _made = _make()
            atexit.register(_close, _made)
        return _made


def _make() -> _Made:
    from ._simulated import in_tests, simulated_messenger

    if in_tests():
        messenger, testbed, webhooks = simulated_messenger()
        return _Made(os.getpid(), messenger, testbed, webhooks)
    return _Made(os.getpid(), _configured(), None)


def _configured() -> SyncMessenger:
    from ..._messenger import Messenger
    from ..._sync import SyncMessenger
    from ...store.memory import MemoryStore
    from ...store.sql import store_from_url
    from ...vault._core import KeylessVault, Vault
    from ...webhooks._admin import webhook_policy_from_env
    from .settings import get_settings

    settings = get_settings()
    store = store_from_url(settings.database_url)
    # Without keys the messenger is still made (a test-mode send needs none): only sealing or
    # opening a credential or a webhook secret raises MasterKeyError. In memory, the
    # Messenger's own default (a key as short-lived as the data) is right.
    vault: Vault | None = None
    if settings.master_keys:
        vault = Vault.from_spec(settings.master_keys)
    elif not isinstance(store, MemoryStore):
        vault = KeylessVault(type(store).__name__)
    extras: dict[str, Any] = {}
    if settings.redis_url:
        from ..._access.redis_ratelimit import RedisRateLimiter
        from ..._routing.redis_breaker import RedisBreakerStore
        from ..._routing.redis_pacing import RedisPacer

        extras = {
            "breaker_store": RedisBreakerStore(settings.redis_url),
            "pacer": RedisPacer(settings.redis_url),
            # The per-key limits and Verify's pumping guard, shared by every worker process.
            "rate_limiter": RedisRateLimiter(settings.redis_url),
        }
    # Webhook targets as the command line allows them (UM_WEBHOOK_ALLOW_PRIVATE=1: loopback
    # and private networks too, for one host and tests).
    messenger = Messenger(
        store, vault=vault,
        webhook_policy=webhook_policy_from_env(), **extras,
    )  # fmt: skip
    return SyncMessenger(messenger)


def _close(made: _Made) -> None:
    if made.pid == os.getpid():  # a forked child never closes its parent's
        made.messenger.close()


def _forget_after_fork() -> None:
    global _made, _lock
    _lock = threading.Lock()  # a lock held by another thread at the fork stays held here
    _made = None


os.register_at_fork(after_in_child=_forget_after_fork)
