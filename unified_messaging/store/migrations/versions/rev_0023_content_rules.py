"""Commercial content hints (D33): a workspace's content rules.

``um_workspaces.content_rules``: ``{"trade_name", "mersis", "opt_out", "refuse"}`` as JSON;
NULL (every existing workspace) is nothing set, with hints that only warn.

Revision ID: 0023
Revises: 0021
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0023"
down_revision: str | None = "0022"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    with op.batch_alter_table("um_workspaces") as batch:
        batch.add_column(sa.Column("content_rules", sa.JSON(none_as_null=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("um_workspaces") as batch:
        batch.drop_column("content_rules")
