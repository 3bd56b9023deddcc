"""A webhook delivery keeps the start of its receiver's last answer:
``um_webhook_deliveries.last_answer`` (at most 2 KiB, as text). Null for every delivery
stored before.

Revision ID: 0031
Revises: 0030
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0031"
down_revision: str | None = "0030"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    with op.batch_alter_table("um_webhook_deliveries") as batch:
        batch.add_column(sa.Column("last_answer", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("um_webhook_deliveries") as batch:
        batch.drop_column("last_answer")
