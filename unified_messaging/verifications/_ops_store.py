"""The store's part of what operators tune and watch in Verify (D34): the SMS-pumping
guard's settings, conversion counts by hour, recent verifications.

A slice of its own beside :class:`~._store.VerificationStore` (the flow's): the memory and
SQL stores implement both.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from .._types import Channel
    from ._guard_rules import GuardSettings
    from ._records import Verification

__all__ = ["VerificationCount", "VerificationOpsStore"]


@dataclass(frozen=True, slots=True)
class VerificationCount:
    """The verifications started in one hour (UTC, ``hour`` its start) by one channel in
    one mode, and how many of them are approved by now."""

    hour: datetime
    channel: Channel
    livemode: bool
    started: int
    approved: int


class VerificationOpsStore(Protocol):
    """Protocol: the guard's settings, conversion counts and recent verifications."""

    async def get_verification_guard(self, workspace_id: str) -> GuardSettings | None:
        """The workspace's guard, or ``None`` for the defaults."""
        ...

    async def put_verification_guard(self, workspace_id: str, settings: GuardSettings) -> None:
        """``ResourceNotFound`` for an unknown workspace."""
        ...

    async def verification_counts(
        self, since: datetime, *, workspace_id: str | None = None, livemode: bool | None = None
    ) -> list[VerificationCount]:
        """Counts of the verifications created at or after ``since``, by hour, channel and
        mode (of one workspace and mode, when given), oldest hour first."""
        ...

    async def recent_verifications(
        self, workspace_id: str, livemode: bool, limit: int
    ) -> list[Verification]:
        """The workspace's ``limit`` newest verifications of one mode, newest first."""
        ...
