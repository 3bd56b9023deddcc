"""Webhook endpoints and their deliveries.

Revision ID: 0002
Revises: 0001
Create Date: 2026-01-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | None = None
depends_on: str | None = None

_TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "um_webhook_endpoints",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("events", sa.JSON(), nullable=False),
        sa.Column("secret_ciphertext", sa.Text(), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.Column("disabled_at", _TS, nullable=True),
        sa.Column("failing_since", _TS, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_um_webhook_endpoints"),
        sa.ForeignKeyConstraint(
            ["workspace_id"], ["um_workspaces.id"], name="fk_um_webhook_endpoints_workspace_id"
        ),
    )
    op.create_index(
        "ix_um_webhook_endpoints_workspace_id", "um_webhook_endpoints", ["workspace_id"]
    )
    op.create_table(
        "um_webhook_deliveries",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("endpoint_id", sa.Text(), nullable=False),
        sa.Column("event_id", sa.Text(), nullable=False),
        sa.Column("event_type", sa.Text(), nullable=False),
        sa.Column("payload", sa.LargeBinary(), nullable=False),
        sa.Column("status", sa.Text(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", _TS, nullable=True),
        sa.Column("last_status_code", sa.Integer(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("created_at", _TS, nullable=False),
        sa.Column("updated_at", _TS, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_um_webhook_deliveries"),
        sa.ForeignKeyConstraint(
            ["endpoint_id"],
            ["um_webhook_endpoints.id"],
            name="fk_um_webhook_deliveries_endpoint_id",
            ondelete="CASCADE",
        ),
        sa.UniqueConstraint(
            "endpoint_id", "event_id", name="uq_um_webhook_deliveries_endpoint_id_event_id"
        ),
    )


def downgrade() -> None:
    op.drop_table("um_webhook_deliveries")
    op.drop_table("um_webhook_endpoints")
