"""The per-recipient flood guard's setting on each workspace (D28).

Two nullable columns: ``recipient_limit`` messages per recipient per ``recipient_window_ms``;
both NULL turns the guard off. Workspaces that exist get the default, 10 an hour: the guard
is on unless a workspace turns it off.

The guard counts from ``um_messages`` through ``ix_um_messages_list_to`` (revision 0006),
so it needs no index of its own.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | None = None
depends_on: str | None = None

# Spelled out here, not imported: a revision must never change when the code does.
_DEFAULT_LIMIT = 10
_DEFAULT_WINDOW_MS = 3_600_000


def upgrade() -> None:
    with op.batch_alter_table("um_workspaces") as batch:
        batch.add_column(sa.Column("recipient_limit", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("recipient_window_ms", sa.BigInteger(), nullable=True))
    workspaces = sa.table(
        "um_workspaces",
        sa.column("recipient_limit", sa.Integer()),
        sa.column("recipient_window_ms", sa.BigInteger()),
    )
    op.execute(
        workspaces.update().values(
            recipient_limit=_DEFAULT_LIMIT, recipient_window_ms=_DEFAULT_WINDOW_MS
        )
    )


def downgrade() -> None:
    with op.batch_alter_table("um_workspaces") as batch:
        batch.drop_column("recipient_window_ms")
        batch.drop_column("recipient_limit")
