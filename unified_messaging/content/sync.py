"""``sync_messenger.content``: the blocking twin of :class:`~.service.Content`, for
synchronous hosts. Each method runs its coroutine twin on the ``SyncMessenger``'s loop
thread, with the same parameters and answers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from .._sync_namespaces import Runner
from .rules import ContentLint, ContentRules
from .service import KEEP, Keep

if TYPE_CHECKING:
    from .._access.principal import Principal
    from .._domain import Workspace
    from .service import Content

__all__ = ["SyncContent"]


class SyncContent:
    """Blocking :class:`~.service.Content`: the same methods, without ``await``."""

    def __init__(self, content: Content, run: Runner) -> None:
        self._content = content
        self._run = run

    def rules(self, workspace_id: str) -> ContentRules:
        return self._run(self._content.rules(workspace_id))

    def update_rules(
        self,
        workspace_id: str,
        *,
        trade_name: str | Literal[Keep.KEEP] | None = KEEP,
        mersis: str | Literal[Keep.KEEP] | None = KEEP,
        opt_out: str | Literal[Keep.KEEP] | None = KEEP,
        refuse: bool | Literal[Keep.KEEP] = KEEP,
    ) -> ContentRules:
        return self._run(
            self._content.update_rules(
                workspace_id, trade_name=trade_name, mersis=mersis, opt_out=opt_out, refuse=refuse
            )
        )

    def set_rules(self, workspace_id: str, rules: ContentRules) -> Workspace:
        return self._run(self._content.set_rules(workspace_id, rules))

    def lint(self, auth: Principal, text: str, *, turkish_shift: bool = True) -> ContentLint:
        return self._run(self._content.lint(auth, text, turkish_shift=turkish_shift))
