"""``sync_messenger.iys``: the blocking twin of :class:`~.service.Iys`, for synchronous
hosts. Each method runs its coroutine twin on the ``SyncMessenger``'s loop thread (made from
them by :func:`blocking`)."""

from __future__ import annotations

from .._sync_namespaces import SyncNamespace, blocking
from .service import Iys

__all__ = ["SyncIys"]


class SyncIys(SyncNamespace):
    """Blocking :class:`~.service.Iys`: the same methods, without ``await``."""

    connect = blocking(Iys.connect)
    get = blocking(Iys.get)
    state = blocking(Iys.state)
    disconnect = blocking(Iys.disconnect)
    sync = blocking(Iys.sync)
