"""``SyncAccounts``: the blocking twin of :class:`Accounts`, as ``SyncMessenger.accounts``
(made from the async methods, so the two cannot drift apart)."""

from __future__ import annotations

from .._sync_namespaces import SyncNamespace, blocking
from ._service import Accounts

__all__ = ["SyncAccounts"]


class SyncAccounts(SyncNamespace):
    """Blocking ``messenger.accounts``."""

    get = blocking(Accounts.get)
    list = blocking(Accounts.list)
    senders_of = blocking(Accounts.senders_of)
    set_threshold = blocking(Accounts.set_threshold)
    refresh = blocking(Accounts.refresh)
    schedule = blocking(Accounts.schedule)
    schedule_all = blocking(Accounts.schedule_all)
