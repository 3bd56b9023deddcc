"""The store's part of the suppression list: the protocol the memory and SQL stores implement.

:class:`~unified_messaging.store.base.Store` is the sum of every room's part."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    # The records bring pydantic, which the command line's ``--help`` never needs.
    from .._types import Channel
    from ._rules import Suppression

__all__ = ["SuppressionQuery", "SuppressionStore"]


@dataclass(frozen=True, slots=True)
class SuppressionQuery:
    """Which suppression-list entries of one workspace and mode to list, newest first
    (``created_at`` descending, then ``id`` descending). ``older_than`` is the keyset cursor."""

    workspace_id: str
    livemode: bool
    channel: Channel | None = None
    #: Any of these (a recipient as typed and normalised for each channel); empty: all.
    recipients: tuple[str, ...] = ()
    older_than: tuple[datetime, str] | None = None
    limit: int = 20


class SuppressionStore(Protocol):
    """Protocol: the suppression list: one entry per workspace, mode, channel and
    recipient."""

    async def add_suppression(self, entry: Suppression) -> tuple[Suppression, bool]:
        """Store ``entry``, or keep the one stored for its workspace, mode, channel and
        recipient: ``(the stored entry, whether it is new)``. Safe under concurrent adds (one
        row wins). :class:`ResourceNotFound` for an unknown workspace."""
        ...

    async def get_suppression(
        self, workspace_id: str, livemode: bool, suppression_id: str
    ) -> Suppression | None: ...

    async def remove_suppression(
        self, workspace_id: str, livemode: bool, channel: Channel, recipient: str
    ) -> Suppression | None:
        """Delete the entry and return it; ``None`` when there was none."""
        ...

    async def list_suppressions(self, query: SuppressionQuery) -> list[Suppression]:
        """Up to ``query.limit`` entries that match it, newest first."""
        ...

    async def suppressed(
        self, workspace_id: str, livemode: bool, channel: Channel, recipients: Sequence[str]
    ) -> set[str]:
        """Which of ``recipients`` (normalised) are on the list: a send's admission check,
        one indexed lookup, never cached (an opt-out counts from the next send on)."""
        ...
