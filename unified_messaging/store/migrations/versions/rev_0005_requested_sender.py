"""The sender a send asked for, kept on the message so a re-dispatch resolves D3 again.

Rows written before this revision have none (NULL): their fallback hops send with each
connection's default header, as a send that named no sender would.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    with op.batch_alter_table("um_messages") as batch:
        batch.add_column(sa.Column("requested_sender", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("um_messages") as batch:
        batch.drop_column("requested_sender")
