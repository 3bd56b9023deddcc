"""``sync_messenger.consents``: the blocking twin of :class:`~.service.Consents`, for
synchronous hosts. Each method runs its coroutine twin on the ``SyncMessenger``'s loop
thread, with the same parameters and answers (made from them by :func:`blocking`)."""

from __future__ import annotations

from .._sync_namespaces import SyncNamespace, blocking
from .service import Consents

__all__ = ["SyncConsents"]


class SyncConsents(SyncNamespace):
    """Blocking :class:`~.service.Consents`: the same methods, without ``await``."""

    create = blocking(Consents.create)
    list = blocking(Consents.list)
    get = blocking(Consents.get)
    set_policy = blocking(Consents.set_policy)
