"""The suppression list: who gets no more messages, per channel.

``um_suppressions`` holds one row per workspace, mode, channel and recipient (the primary
key, which a send's admission check reads), with the entry's id, reason, source and time;
``ix_um_suppressions_list`` is the list's order (newest first).

Revision ID: 0016
Revises: 0011
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | None = None
depends_on: str | None = None

_TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "um_suppressions",
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.Column("livemode", sa.Boolean(), nullable=False),
        sa.Column("channel", sa.Text(), nullable=False),
        sa.Column("recipient", sa.Text(), nullable=False),
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.ForeignKeyConstraint(
            ["workspace_id"], ["um_workspaces.id"], name="fk_um_suppressions_workspace_id"
        ),
        sa.PrimaryKeyConstraint(
            "workspace_id", "livemode", "channel", "recipient", name="pk_um_suppressions"
        ),
        sa.UniqueConstraint("id", name="uq_um_suppressions_id"),
    )
    op.create_index(
        "ix_um_suppressions_list",
        "um_suppressions",
        ["workspace_id", "livemode", "created_at", "id"],
    )


def downgrade() -> None:
    op.drop_table("um_suppressions")
