"""What the audit log holds, newest first, as ``(action, workspace_id, target)``."""

from __future__ import annotations

from unified_messaging import Messenger


async def audit_rows(messenger: Messenger) -> list[tuple[str, str | None, str]]:
    page = await messenger.audit.list(limit=100)
    return [(event.action, event.workspace_id, event.target) for event in page.data]
