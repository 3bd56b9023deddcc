"""``messenger.content``: a workspace's content rules and the hints for a commercial text
(D33), the one door every edge uses (the dashboard's template editor, the CLI, the library;
REST's dry run reads the same rules through ``Messenger.preview_send``).

The rules themselves are :mod:`.rules`' (pure); a workspace keeps its settings as
:class:`~.rules.ContentRules` on its record, so a send reads them with its workspace and
pays nothing more.
"""

from __future__ import annotations

from dataclasses import replace
from enum import Enum
from typing import TYPE_CHECKING, Final, Literal

from .._domain import Workspace
from .._errors import ResourceNotFound
from ..audit._actions import audited, of_workspace
from .rules import ContentLint, ContentRules, lint_text, normalize_mersis

if TYPE_CHECKING:
    from .._access.principal import Principal
    from .._clock import Clock
    from ..store.base import Store

__all__ = ["KEEP", "Content", "Keep"]


class Keep(Enum):
    """A setting :meth:`Content.update_rules` leaves as it is."""

    KEEP = "keep"


KEEP: Final = Keep.KEEP


class Content:
    """Content rules and hints of the caller's workspace."""

    def __init__(self, store: Store, clock: Clock) -> None:
        self._store = store
        self._clock = clock

    def __repr__(self) -> str:
        return "Content()"

    async def rules(self, workspace_id: str) -> ContentRules:
        """The workspace's content rules (nothing set, hints only warn, until changed)."""
        return (await self._workspace(workspace_id)).content_rules

    async def update_rules(
        self,
        workspace_id: str,
        *,
        trade_name: str | Literal[Keep.KEEP] | None = KEEP,
        mersis: str | Literal[Keep.KEEP] | None = KEEP,
        opt_out: str | Literal[Keep.KEEP] | None = KEEP,
        refuse: bool | Literal[Keep.KEEP] = KEEP,
    ) -> ContentRules:
        """Change the settings given (``None`` or ``""`` clears one): ``trade_name``,
        ``mersis`` (16 digits; spaces, dots and dashes between them are dropped),
        ``opt_out`` (the brand's own opt-out phrase) and ``refuse``. A bad value is
        :class:`RequestInvalid` naming it, and nothing changes."""
        current = await self.rules(workspace_id)
        updated = ContentRules(  # checked by ContentRules
            trade_name=current.trade_name if trade_name is KEEP else _phrase(trade_name),
            mersis=current.mersis if mersis is KEEP else normalize_mersis(mersis or "") or None,
            opt_out=current.opt_out if opt_out is KEEP else _phrase(opt_out),
            refuse=current.refuse if refuse is KEEP else refuse,
        )
        return (await self.set_rules(workspace_id, updated)).content_rules

    @audited("workspace.content_rules", of_workspace)
    async def set_rules(self, workspace_id: str, rules: ContentRules) -> Workspace:
        """Replace the workspace's content rules (audited ``workspace.content_rules``);
        ``ResourceNotFound`` for an unknown workspace."""
        workspace = replace(await self._workspace(workspace_id), content_rules=rules)
        await self._store.update_workspace(workspace)
        return workspace

    async def lint(self, auth: Principal, text: str, *, turkish_shift: bool = True) -> ContentLint:
        """The hints for ``text`` as a commercial SMS of the caller's workspace (its rules
        as stored now) and its SMS parts with the operator's code. No I/O beyond reading
        the workspace; nothing is sent or stored."""
        rules = (await self._workspace(auth.workspace_id)).content_rules
        return lint_text(text, rules, turkish_shift=turkish_shift)

    async def _workspace(self, workspace_id: str) -> Workspace:
        workspace = await self._store.get_workspace(workspace_id)
        if workspace is None:
            raise ResourceNotFound(f"Workspace {workspace_id} not found.")
        return workspace


def _phrase(value: str | None) -> str | None:
    return (value or "").strip() or None
