"""``SyncStats``: the blocking twin of :class:`Stats`, as ``SyncMessenger.stats``.

Made from the async service's methods (``_sync_namespaces.blocking``), so the two cannot
drift apart; each runs on the ``SyncMessenger``'s loop thread.
"""

from __future__ import annotations

from .._sync_namespaces import SyncNamespace, blocking
from ._service import Stats

__all__ = ["SyncStats"]


class SyncStats(SyncNamespace):
    """Blocking ``messenger.stats``."""

    overview = blocking(Stats.overview)
    overview_for = blocking(Stats.overview_for)
    fold = blocking(Stats.fold)
