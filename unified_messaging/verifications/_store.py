"""The store's part of Verify (D34): the protocol the memory and SQL stores implement.

One pending verification per workspace, mode and recipient is the store's invariant (SQL:
a unique index over the pending rows), so concurrent starts make one verification; every
change is a compare-and-set on ``version``, so concurrent checks approve once.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from ._records import Verification, VerificationSettings

__all__ = ["VerificationStore"]


class VerificationStore(Protocol):
    """Protocol: verifications and each workspace's Verify settings."""

    async def add_verification(self, verification: Verification) -> bool:
        """Store a new pending verification; ``False`` (nothing stored) when its recipient
        has a pending one already. ``ResourceNotFound`` for an unknown workspace."""
        ...

    async def get_verification(
        self, workspace_id: str, livemode: bool, verification_id: str
    ) -> Verification | None: ...

    async def pending_verification(
        self, workspace_id: str, livemode: bool, to: str
    ) -> Verification | None:
        """The recipient's pending verification (expired or not), if any."""
        ...

    async def replace_verification(self, verification: Verification) -> bool:
        """Store ``verification`` if the stored one still has ``verification.version - 1``;
        ``False`` (nothing changed) if another change came first."""
        ...

    async def verifications_started(
        self, workspace_id: str, livemode: bool, to: str, since: datetime
    ) -> list[datetime]:
        """When the recipient's verifications created after ``since`` were created."""
        ...

    async def get_verification_settings(self, workspace_id: str) -> VerificationSettings | None:
        """The workspace's settings, or ``None`` for the defaults."""
        ...

    async def put_verification_settings(
        self, workspace_id: str, settings: VerificationSettings
    ) -> None: ...
