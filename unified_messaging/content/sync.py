"""``sync_messenger.content``: the blocking twin of :class:`~.service.Content`, for
synchronous hosts. Each method runs its coroutine twin on the ``SyncMessenger``'s loop
thread, with the same parameters and answers (made from them by :func:`blocking`)."""

from __future__ import annotations

from .._sync_namespaces import SyncNamespace, blocking
from .service import Content

__all__ = ["SyncContent"]


class SyncContent(SyncNamespace):
    """Blocking :class:`~.service.Content`: the same methods, without ``await``."""

    rules = blocking(Content.rules)
    update_rules = blocking(Content.update_rules)
    set_rules = blocking(Content.set_rules)
    lint = blocking(Content.lint)
