"""The dashboard's one-time notices (D31): what a form post leaves for the page it redirects
to (post/redirect/get), a new key's or webhook secret's one showing among them.

``um_notices``: sealed under a key derived from the session's cookie value (never stored),
so a copy of the database reads none; taken (deleted) by the first page that shows them;
deleted with their session.

Revision ID: 0018
Revises: 0011
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0011"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "um_notices",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("session_hash", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("sealed", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["session_hash"],
            ["um_sessions.id_hash"],
            name="fk_um_notices_session_hash",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_um_notices"),
    )
    op.create_index("ix_um_notices_session_hash", "um_notices", ["session_hash"])


def downgrade() -> None:
    op.drop_index("ix_um_notices_session_hash", table_name="um_notices")
    op.drop_table("um_notices")
