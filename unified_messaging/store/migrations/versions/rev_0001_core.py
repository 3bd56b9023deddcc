"""Core tables: workspaces, keys, connections, templates, allowlist, messages, quota,
idempotency and due work.

Revision ID: 0001
Revises:
Create Date: 2026-01-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | None = None
depends_on: str | None = None

_TS = sa.DateTime(timezone=True)


def _workspace_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["workspace_id"], ["um_workspaces.id"], name=f"fk_{table}_workspace_id"
    )


def upgrade() -> None:
    op.create_table(
        "um_workspaces",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.Column("monthly_quota", sa.BigInteger(), nullable=True),
        sa.Column("retry_unavailable", sa.Boolean(), nullable=False),
        sa.Column("queue_ttl_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_um_workspaces"),
    )
    op.create_table(
        "um_api_keys",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.Column("livemode", sa.Boolean(), nullable=False),
        sa.Column("key_hash", sa.Text(), nullable=False),
        sa.Column("display_prefix", sa.Text(), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.Column("name", sa.Text(), nullable=True),
        sa.Column("expires_at", _TS, nullable=True),
        sa.Column("revoked_at", _TS, nullable=True),
        sa.Column("rate_limit", sa.Float(), nullable=True),
        sa.Column("rate_burst", sa.Integer(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_um_api_keys"),
        _workspace_fk("um_api_keys"),
    )
    op.create_index("ix_um_api_keys_key_hash", "um_api_keys", ["key_hash"], unique=True)
    op.create_index("ix_um_api_keys_workspace_id", "um_api_keys", ["workspace_id"])
    op.create_table(
        "um_connections",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.Column("provider", sa.Text(), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.Column("credentials", sa.Text(), nullable=False),
        sa.Column("default_sender", sa.Text(), nullable=True),
        sa.Column("approved_senders", sa.JSON(), nullable=False),
        sa.Column("iys_mode", sa.Text(), nullable=False),
        sa.Column("is_default", sa.Boolean(), nullable=False),
        sa.Column("dlr_timeout_ms", sa.BigInteger(), nullable=False),
        sa.Column("turkish_shift", sa.Boolean(), nullable=False),
        sa.Column("base_url", sa.Text(), nullable=True),
        sa.Column("dlr_token", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_um_connections"),
        _workspace_fk("um_connections"),
        sa.UniqueConstraint(
            "workspace_id", "provider", name="uq_um_connections_workspace_id_provider"
        ),
    )
    op.create_index(
        "ux_um_connections_default",
        "um_connections",
        ["workspace_id"],
        unique=True,
        sqlite_where=sa.text("is_default"),
        postgresql_where=sa.text("is_default"),
    )
    op.create_table(
        "um_templates",
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.Column("updated_at", _TS, nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("provider_template", sa.Text(), nullable=True),
        sa.Column("provider_language", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("workspace_id", "key", name="pk_um_templates"),
        _workspace_fk("um_templates"),
    )
    op.create_table(
        "um_allowlist",
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.Column("cidr", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("workspace_id", "cidr", name="pk_um_allowlist"),
        _workspace_fk("um_allowlist"),
    )
    op.create_table(
        "um_messages",
        sa.Column("job_id", sa.Text(), nullable=False),
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.Column("livemode", sa.Boolean(), nullable=False),
        sa.Column("status", sa.Text(), nullable=False),
        sa.Column("to", sa.Text(), nullable=False),
        sa.Column("channel", sa.Text(), nullable=False),
        sa.Column("provider", sa.Text(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("sender", sa.Text(), nullable=True),
        sa.Column("template_key", sa.Text(), nullable=True),
        sa.Column("created_at", _TS, nullable=False),
        sa.Column("updated_at", _TS, nullable=False),
        sa.Column("sent_at", _TS, nullable=True),
        sa.Column("final_at", _TS, nullable=True),
        sa.Column("error_code", sa.Text(), nullable=True),
        sa.Column("error_message", sa.Text(), nullable=True),
        sa.Column("attempts", sa.JSON(), nullable=False),
        sa.Column("dlr", sa.JSON(), nullable=True),
        sa.Column("segments", sa.Integer(), nullable=True),
        sa.Column("encoding", sa.Text(), nullable=True),
        sa.Column("fallback_left", sa.JSON(), nullable=False),
        sa.Column("fallback_requested", sa.Boolean(), nullable=False),
        sa.Column("template_params", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("job_id", name="pk_um_messages"),
        _workspace_fk("um_messages"),
    )
    op.create_table(
        "um_quota",
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.Column("period", sa.Text(), nullable=False),
        sa.Column("used", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("workspace_id", "period", name="pk_um_quota"),
    )
    op.create_table(
        "um_idempotency",
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.Column("key_id", sa.Text(), nullable=False),
        sa.Column("idem_key", sa.Text(), nullable=False),
        sa.Column("request_hash", sa.Text(), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("response_body", sa.LargeBinary(), nullable=True),
        sa.Column("created_at", _TS, nullable=False),
        sa.PrimaryKeyConstraint("workspace_id", "key_id", "idem_key", name="pk_um_idempotency"),
    )
    op.create_index("ix_um_idempotency_created_at", "um_idempotency", ["created_at"])
    op.create_table(
        "um_due_work",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("ref", sa.Text(), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("due_at", _TS, nullable=False),
        sa.Column("claimed_by", sa.Text(), nullable=True),
        sa.Column("lease_until", _TS, nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_um_due_work"),
    )
    op.create_index("ix_um_due_work_due_at", "um_due_work", ["due_at"])


def downgrade() -> None:
    for table in (
        "um_due_work",
        "um_idempotency",
        "um_quota",
        "um_messages",
        "um_allowlist",
        "um_templates",
        "um_connections",
        "um_api_keys",
        "um_workspaces",
    ):
        op.drop_table(table)
