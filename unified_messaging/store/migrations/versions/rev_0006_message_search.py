"""Indexes for listing messages (D29): one per filter, each ending in the list's order.

``GET /v1/messages`` filters a workspace's messages of one mode by ``to``, ``status`` or
``provider`` (or none), newest first, and pages with a ``(created_at, job_id)`` cursor; each
index leads with what the filter pins and ends with ``created_at, job_id``, so a page reads
about ``limit`` entries. On a large table, creating them takes a while (about 11 s per
million rows on SQLite) and holds the write lock meanwhile: run ``unified-messaging
migrate`` at a quiet moment rather than letting a server's start do it.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-25
"""

from __future__ import annotations

from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | None = None
depends_on: str | None = None

_INDEXES: dict[str, list[str]] = {
    "ix_um_messages_list": ["workspace_id", "livemode", "created_at", "job_id"],
    "ix_um_messages_list_to": ["workspace_id", "livemode", "to", "created_at", "job_id"],
    "ix_um_messages_list_status": ["workspace_id", "livemode", "status", "created_at", "job_id"],
    "ix_um_messages_list_provider": [
        "workspace_id",
        "livemode",
        "provider",
        "created_at",
        "job_id",
    ],
}


def upgrade() -> None:
    for name, columns in _INDEXES.items():
        op.create_index(name, "um_messages", columns)


def downgrade() -> None:
    for name in reversed(_INDEXES):
        op.drop_index(name, table_name="um_messages")
