"""İYS (D33): a workspace's İYS connection, each change's registration, pulled changes.

``um_iys_connections``: one row per connected workspace: its İYS code, brand code, API user
and password (sealed by the vault), the base URL, the pull cursors (``after_hs``,
``after_iys``), and the token every process shares (sealed) with its compare-and-set
``token_version``, the lease of the one process fetching a new one, and when tokens were
asked for (İYS's token limit). ``um_iys_registrations``: how each change's registration
goes (the attempts that may have reached İYS, the bulk request it rides in).
``um_consent_changes.iys_state``/``iys_transaction_id``: where each change stands with İYS
(every older change is ``pending``); ``um_consents.last_change_id`` and its ``iys_*``
columns: the current change's.

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0022"
down_revision: str | None = "0021"
branch_labels: str | None = None
depends_on: str | None = None

_TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table("um_consents") as batch:
        batch.add_column(sa.Column("last_change_id", sa.Text(), nullable=True))
        batch.add_column(sa.Column("iys_transaction_id", sa.Text(), nullable=True))
        batch.add_column(sa.Column("iys_error_code", sa.Text(), nullable=True))
        batch.add_column(sa.Column("iys_error_message", sa.Text(), nullable=True))
    with op.batch_alter_table("um_consent_changes") as batch:
        batch.add_column(
            sa.Column("iys_state", sa.Text(), nullable=False, server_default="pending")
        )
        batch.add_column(sa.Column("iys_transaction_id", sa.Text(), nullable=True))
    op.create_index(
        "ix_um_consent_changes_pending", "um_consent_changes", ["iys_state", "recorded_at"]
    )
    op.create_index(
        "ix_um_consent_changes_transaction", "um_consent_changes", ["iys_transaction_id"]
    )
    op.create_table(
        "um_iys_connections",
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.Column("iys_code", sa.BigInteger(), nullable=False),
        sa.Column("brand_code", sa.BigInteger(), nullable=False),
        sa.Column("username", sa.Text(), nullable=False),
        sa.Column("password", sa.Text(), nullable=False),
        sa.Column("base_url", sa.Text(), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.Column("updated_at", _TS, nullable=False),
        sa.Column("after_hs", sa.Text(), nullable=True),
        sa.Column("after_iys", sa.Text(), nullable=True),
        sa.Column("pulled_at", _TS, nullable=True),
        sa.Column("token", sa.Text(), nullable=True),
        sa.Column("access_expires_at", _TS, nullable=True),
        sa.Column("refresh_expires_at", _TS, nullable=True),
        sa.Column("token_version", sa.Integer(), nullable=False),
        sa.Column("token_lease_by", sa.Text(), nullable=True),
        sa.Column("token_lease_until", _TS, nullable=True),
        sa.Column("token_grants", sa.JSON(none_as_null=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["workspace_id"], ["um_workspaces.id"], name="fk_um_iys_connections_workspace_id"
        ),
        sa.PrimaryKeyConstraint("workspace_id", name="pk_um_iys_connections"),
    )
    op.create_table(
        "um_iys_registrations",
        sa.Column("change_id", sa.Text(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("attempted_at", _TS, nullable=True),
        sa.Column("request_id", sa.Text(), nullable=True),
        sa.Column("subrequest_id", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["change_id"],
            ["um_consent_changes.id"],
            name="fk_um_iys_registrations_change_id",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("change_id", name="pk_um_iys_registrations"),
    )


def downgrade() -> None:
    op.drop_table("um_iys_registrations")
    op.drop_table("um_iys_connections")
    op.drop_index("ix_um_consent_changes_transaction", "um_consent_changes")
    op.drop_index("ix_um_consent_changes_pending", "um_consent_changes")
    with op.batch_alter_table("um_consent_changes") as batch:
        batch.drop_column("iys_transaction_id")
        batch.drop_column("iys_state")
    with op.batch_alter_table("um_consents") as batch:
        batch.drop_column("iys_error_message")
        batch.drop_column("iys_error_code")
        batch.drop_column("iys_transaction_id")
        batch.drop_column("last_change_id")
