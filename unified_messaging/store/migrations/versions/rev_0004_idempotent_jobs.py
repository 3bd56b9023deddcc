"""Idempotency keys bound to their jobs: the owner token and the job ids of the request.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    with op.batch_alter_table("um_idempotency") as batch:
        batch.add_column(sa.Column("owner", sa.Text(), nullable=True))
        batch.add_column(sa.Column("job_ids", sa.JSON(none_as_null=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("um_idempotency") as batch:
        batch.drop_column("job_ids")
        batch.drop_column("owner")
