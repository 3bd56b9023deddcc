"""Verify's SMS-pumping guard and its views (D34): each workspace's guard settings, and the
indexes that read a workspace's newest verifications and the conversion by hour.

``um_verification_guards``: a workspace's per-prefix and per-address velocity limits (no
row: the defaults; a NULL limit: that rule off). ``ix_um_verifications_recent`` (workspace,
mode, created_at) serves the dashboard's list and a workspace's stats;
``ix_um_verifications_created`` the scrape's conversion over every workspace.

Revision ID: 0025
Revises: 0021
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0025"
down_revision: str | None = "0023"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "um_verification_guards",
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.Column("prefix_limit", sa.Integer(), nullable=True),
        sa.Column("prefix_window_ms", sa.BigInteger(), nullable=True),
        sa.Column("prefix_digits", sa.Integer(), nullable=False),
        sa.Column("address_limit", sa.Integer(), nullable=True),
        sa.Column("address_window_ms", sa.BigInteger(), nullable=True),
        sa.ForeignKeyConstraint(
            ["workspace_id"], ["um_workspaces.id"], name="fk_um_verification_guards_workspace_id"
        ),
        sa.PrimaryKeyConstraint("workspace_id", name="pk_um_verification_guards"),
    )
    op.create_index(
        "ix_um_verifications_recent", "um_verifications", ["workspace_id", "livemode", "created_at"]
    )
    op.create_index("ix_um_verifications_created", "um_verifications", ["created_at"])


def downgrade() -> None:
    op.drop_index("ix_um_verifications_created", table_name="um_verifications")
    op.drop_index("ix_um_verifications_recent", table_name="um_verifications")
    op.drop_table("um_verification_guards")
