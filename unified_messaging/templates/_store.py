"""The store's part of message templates: the protocol the memory and SQL stores implement.

:class:`~unified_messaging.store.base.Store` is the sum of every room's part."""

from __future__ import annotations

from typing import Protocol

from .._domain import Template

__all__ = ["TemplateStore"]


class TemplateStore(Protocol):
    """Protocol: message templates."""

    async def put_template(self, template: Template) -> None:
        """Insert or replace by ``(workspace_id, key)``."""
        ...

    async def get_template(self, workspace_id: str, key: str) -> Template | None: ...

    async def list_templates(self, workspace_id: str) -> list[Template]:
        """Ordered by key."""
        ...

    async def delete_template(self, workspace_id: str, key: str) -> bool: ...
