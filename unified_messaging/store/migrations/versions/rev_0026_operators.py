"""What operators look at: who sent a message, and whether a workspace shows live text.

``um_messages.api_key_id`` and ``api_key_name``: the API key a message was sent with (NULL
for every message stored before, and for one sent without a key). ``um_workspaces.
mask_live_text``: the workspace hides the text of its live messages wherever it is shown
(false for every existing workspace: shown, as before).

Revision ID: 0026
Revises: 0021
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0026"
down_revision: str | None = "0025"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    with op.batch_alter_table("um_messages") as batch:
        batch.add_column(sa.Column("api_key_id", sa.Text(), nullable=True))
        batch.add_column(sa.Column("api_key_name", sa.Text(), nullable=True))
    with op.batch_alter_table("um_workspaces") as batch:
        # A literal default ("0": false on both dialects), so that SQLite adds the column in
        # place: an expression would make batch mode copy the table, which the messages'
        # foreign keys to it forbid.
        batch.add_column(
            sa.Column("mask_live_text", sa.Boolean(), nullable=False, server_default="0")
        )


def downgrade() -> None:
    with op.batch_alter_table("um_workspaces") as batch:
        batch.drop_column("mask_live_text")
    with op.batch_alter_table("um_messages") as batch:
        batch.drop_column("api_key_name")
        batch.drop_column("api_key_id")
