"""Provider accounts: each connection's balance and approved senders as last read from the
provider, its low-balance threshold, and whether the balance is below it now.

Revision ID: 0030
Revises: 0029
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

_TS = sa.DateTime(timezone=True)

revision: str = "0030"
down_revision: str | None = "0029"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "um_provider_accounts",
        sa.Column("connection_id", sa.Text(), primary_key=True),
        sa.Column("workspace_id", sa.Text(), sa.ForeignKey("um_workspaces.id"), nullable=False),
        sa.Column("provider", sa.Text(), nullable=False),
        sa.Column("state", sa.Text(), nullable=False),
        sa.Column("balance", sa.Text(), nullable=True),
        sa.Column("unit", sa.Text(), nullable=True),
        sa.Column("senders", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("read_at", _TS, nullable=True),
        sa.Column("tried_at", _TS, nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("threshold", sa.Text(), nullable=True),
        sa.Column("low", sa.Boolean(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("um_provider_accounts")
