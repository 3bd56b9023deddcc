"""A workspace's messages of a period counted by status and by provider: the dashboard's
overview (``Messenger.message_counts``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import get_args

from ._types import MessageStatus, ProviderCode

__all__ = ["MessageCounts"]

_STATUSES: tuple[MessageStatus, ...] = get_args(MessageStatus)
#: Final statuses that say how a provider did; ``sent`` and ``queued`` are still open.
_SETTLED: frozenset[str] = frozenset({"delivered", "expired", "rejected", "failed", "unknown"})


@dataclass(frozen=True, slots=True)
class MessageCounts:
    """``by_status``: every status, 0 for none. ``by_provider``: per provider (the one that
    took each message, or the last tried), its messages by status, providers with none left
    out."""

    by_status: dict[MessageStatus, int]
    by_provider: dict[ProviderCode, dict[MessageStatus, int]] = field(default_factory=dict)

    @classmethod
    def from_pairs(cls, pairs: Mapping[tuple[ProviderCode, MessageStatus], int]) -> MessageCounts:
        by_status: dict[MessageStatus, int] = dict.fromkeys(_STATUSES, 0)
        by_provider: dict[ProviderCode, dict[MessageStatus, int]] = {}
        for (provider, status), count in sorted(pairs.items()):
            by_status[status] += count
            by_provider.setdefault(provider, dict.fromkeys(_STATUSES, 0))[status] += count
        return cls(by_status, by_provider)

    def success_rate(self, provider: ProviderCode) -> float | None:
        """Delivered out of the provider's settled messages; ``None`` before any settled."""
        counts = self.by_provider.get(provider, {})
        settled = sum(n for status, n in counts.items() if status in _SETTLED)
        return None if settled == 0 else counts.get("delivered", 0) / settled
