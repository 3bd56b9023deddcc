"""Delivery lifecycle: message versions, provider message ids, webhook secret rotation.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | None = None
depends_on: str | None = None

_TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table("um_messages") as batch:
        batch.add_column(sa.Column("version", sa.Integer(), nullable=False, server_default="0"))
    op.create_table(
        "um_provider_refs",
        sa.Column("connection_id", sa.Text(), nullable=False),
        sa.Column("provider_message_id", sa.Text(), nullable=False),
        sa.Column("job_id", sa.Text(), nullable=False),
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.Column("livemode", sa.Boolean(), nullable=False),
        sa.Column("open", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("connection_id", "provider_message_id", name="pk_um_provider_refs"),
    )
    op.create_index(
        "ix_um_provider_refs_connection_id_open", "um_provider_refs", ["connection_id", "open"]
    )
    with op.batch_alter_table("um_webhook_endpoints") as batch:
        batch.add_column(sa.Column("previous_secret_ciphertext", sa.Text(), nullable=True))
        batch.add_column(sa.Column("previous_secret_expires_at", _TS, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("um_webhook_endpoints") as batch:
        batch.drop_column("previous_secret_expires_at")
        batch.drop_column("previous_secret_ciphertext")
    op.drop_table("um_provider_refs")
    with op.batch_alter_table("um_messages") as batch:
        batch.drop_column("version")
