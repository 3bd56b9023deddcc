"""The blocking twins of the façade's resource namespaces, for ``SyncMessenger``.

Each twin method is made from its coroutine (:func:`blocking`): the same name, parameters and
defaults, returning what the coroutine returns, run on the ``SyncMessenger``'s loop thread.
Plain methods pass through (:func:`passthrough`). ``tests/test_sync_twin.py`` fails when a
namespace's public method has no twin here.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

from ._access.authorize import Access
from ._message_ops import Messages
from ._reports import Reports
from .allowlist._service import Allowlist
from .audit._service import AuditLog
from .connections._service import Connections
from .keys._service import ApiKeys
from .suppressions._service import SimulationHelpers, Suppressions
from .templates._service import Templates
from .users._service import Users
from .vault._service import VaultAdmin
from .webhooks._service import Webhooks
from .workspaces._service import Workspaces

__all__ = [
    "SyncAccess",
    "SyncAllowlist",
    "SyncApiKeys",
    "SyncAuditLog",
    "SyncConnections",
    "SyncMessages",
    "SyncNamespace",
    "SyncReports",
    "SyncSimulationHelpers",
    "SyncSuppressions",
    "SyncTemplates",
    "SyncUsers",
    "SyncVaultAdmin",
    "SyncWebhooks",
    "SyncWorkspaces",
]

P = ParamSpec("P")
T = TypeVar("T")


class Runner(Protocol):
    """Protocol: runs a coroutine to its end on the loop thread (``SyncMessenger._run``)."""

    def __call__(self, coroutine: Coroutine[Any, Any, T], /) -> T: ...


class SyncNamespace:
    """A namespace's blocking twin: its methods run the async namespace's on the loop."""

    def __init__(self, target: object, run: Runner) -> None:
        self._target = target
        self._run = run

    def __repr__(self) -> str:
        return f"<blocking {self._target!r}>"


def blocking(
    method: Callable[Concatenate[Any, P], Coroutine[Any, Any, T]],
) -> Callable[Concatenate[SyncNamespace, P], T]:
    """The blocking twin of one namespace coroutine method, run on the loop thread."""
    name = method.__name__

    @functools.wraps(method)
    def twin(self: SyncNamespace, /, *args: P.args, **kwargs: P.kwargs) -> T:
        bound: Callable[P, Coroutine[Any, Any, T]] = getattr(self._target, name)
        return self._run(bound(*args, **kwargs))

    return twin


def passthrough(
    method: Callable[Concatenate[Any, P], T],
) -> Callable[Concatenate[SyncNamespace, P], T]:
    """A plain (not awaited) namespace method, called as is: nothing to run on the loop."""
    name = method.__name__

    @functools.wraps(method)
    def twin(self: SyncNamespace, /, *args: P.args, **kwargs: P.kwargs) -> T:
        bound: Callable[P, T] = getattr(self._target, name)
        return bound(*args, **kwargs)

    return twin


class SyncWorkspaces(SyncNamespace):
    """Blocking ``messenger.workspaces``."""

    create = blocking(Workspaces.create)
    get = blocking(Workspaces.get)
    list = blocking(Workspaces.list)
    set_monthly_quota = blocking(Workspaces.set_monthly_quota)
    set_retry_unavailable = blocking(Workspaces.set_retry_unavailable)
    set_queue_ttl = blocking(Workspaces.set_queue_ttl)
    set_recipient_limit = blocking(Workspaces.set_recipient_limit)
    set_quiet_hours = blocking(Workspaces.set_quiet_hours)
    set_text_masking = blocking(Workspaces.set_text_masking)
    quota_usage = blocking(Workspaces.quota_usage)


class SyncApiKeys(SyncNamespace):
    """Blocking ``messenger.keys``."""

    create = blocking(ApiKeys.create)
    list = blocking(ApiKeys.list)
    revoke = blocking(ApiKeys.revoke)


class SyncConnections(SyncNamespace):
    """Blocking ``messenger.connections``."""

    add = blocking(Connections.add)
    list = blocking(Connections.list)
    get = blocking(Connections.get)
    of = blocking(Connections.of)
    available = blocking(Connections.available)
    set_default = blocking(Connections.set_default)
    set_breaker_policy = blocking(Connections.set_breaker_policy)
    set_send_rate = blocking(Connections.set_send_rate)
    set_senders = blocking(Connections.set_senders)
    remove = blocking(Connections.remove)
    test = blocking(Connections.test)
    stats = blocking(Connections.stats)
    health = blocking(Connections.health)
    credential_fields = passthrough(Connections.credential_fields)


class SyncTemplates(SyncNamespace):
    """Blocking ``messenger.templates``."""

    set = blocking(Templates.set)
    get = blocking(Templates.get)
    list = blocking(Templates.list)
    delete = blocking(Templates.delete)
    preview = passthrough(Templates.preview)


class SyncAllowlist(SyncNamespace):
    """Blocking ``messenger.allowlist``."""

    add = blocking(Allowlist.add)
    remove = blocking(Allowlist.remove)
    list = blocking(Allowlist.list)


class SyncWebhooks(SyncNamespace):
    """Blocking ``messenger.webhooks``."""

    create = blocking(Webhooks.create)
    list = blocking(Webhooks.list)
    get = blocking(Webhooks.get)
    of = blocking(Webhooks.of)
    remove = blocking(Webhooks.remove)
    rotate_secret = blocking(Webhooks.rotate_secret)
    enable = blocking(Webhooks.enable)
    disable = blocking(Webhooks.disable)
    set_events = blocking(Webhooks.set_events)
    list_deliveries = blocking(Webhooks.list_deliveries)
    delivery_of = blocking(Webhooks.delivery_of)
    deliveries_about = blocking(Webhooks.deliveries_about)
    redeliver = blocking(Webhooks.redeliver)
    send_test = blocking(Webhooks.send_test)


class SyncSuppressions(SyncNamespace):
    """Blocking ``messenger.suppressions``."""

    add = blocking(Suppressions.add)
    remove = blocking(Suppressions.remove)
    add_many = blocking(Suppressions.add_many)
    list = blocking(Suppressions.list)


class SyncUsers(SyncNamespace):
    """Blocking ``messenger.users``."""

    create = blocking(Users.create)
    list = blocking(Users.list)
    get = blocking(Users.get)
    find = blocking(Users.find)
    disable = blocking(Users.disable)
    check_password = blocking(Users.check_password)


class SyncAuditLog(SyncNamespace):
    """Blocking ``messenger.audit``."""

    list = blocking(AuditLog.list)


class SyncVaultAdmin(SyncNamespace):
    """Blocking ``messenger.vault``."""

    rotate = blocking(VaultAdmin.rotate)


class SyncAccess(SyncNamespace):
    """Blocking ``messenger.access``."""

    authorize = blocking(Access.authorize)
    check_client_ip = blocking(Access.check_client_ip)
    hit_rate_limit = blocking(Access.hit_rate_limit)
    rate_policy = passthrough(Access.rate_policy)


class SyncReports(SyncNamespace):
    """Blocking ``messenger.reports``."""

    ingest = blocking(Reports.ingest)
    challenge = blocking(Reports.challenge)


class SyncMessages(SyncNamespace):
    """Blocking ``messenger.messages``."""

    get_json = blocking(Messages.get_json)
    current_answer = blocking(Messages.current_answer)
    counts = blocking(Messages.counts)


class SyncSimulationHelpers(SyncNamespace):
    """Blocking ``messenger.test_helpers``."""

    inbound = blocking(SimulationHelpers.inbound)
