"""İYS consents (D33) and the workspace's consent policy.

``um_consents``: one row per workspace, mode, type, address and recipient type (İYS keeps
one BIREYSEL and one TACIR record per address); the primary key is the hand-over gate's
lookup of a bulk's recipients, ``ix_um_consents_list`` the list's order (newest first).
``um_consent_changes``: each consent's history, append-only. ``um_workspaces.consent_policy``:
``off`` (every existing workspace: the providers decide, as before) or ``local``.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | None = None
depends_on: str | None = None

_TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table("um_workspaces") as batch:
        batch.add_column(
            sa.Column("consent_policy", sa.Text(), nullable=False, server_default="off")
        )
    op.create_table(
        "um_consents",
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.Column("livemode", sa.Boolean(), nullable=False),
        sa.Column("type", sa.Text(), nullable=False),
        sa.Column("recipient", sa.Text(), nullable=False),
        sa.Column("recipient_type", sa.Text(), nullable=False),
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("status", sa.Text(), nullable=False),
        sa.Column("source", sa.Text(), nullable=True),
        sa.Column("consent_date", _TS, nullable=True),
        sa.Column("iys_state", sa.Text(), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.Column("updated_at", _TS, nullable=False),
        sa.ForeignKeyConstraint(
            ["workspace_id"], ["um_workspaces.id"], name="fk_um_consents_workspace_id"
        ),
        sa.PrimaryKeyConstraint(
            "workspace_id", "livemode", "type", "recipient", "recipient_type", name="pk_um_consents"
        ),
        sa.UniqueConstraint("id", name="uq_um_consents_id"),
    )
    op.create_index(
        "ix_um_consents_list", "um_consents", ["workspace_id", "livemode", "created_at", "id"]
    )
    op.create_table(
        "um_consent_changes",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("consent_id", sa.Text(), nullable=False),
        sa.Column("status", sa.Text(), nullable=False),
        sa.Column("source", sa.Text(), nullable=True),
        sa.Column("consent_date", _TS, nullable=True),
        sa.Column("recorded_at", _TS, nullable=False),
        sa.ForeignKeyConstraint(
            ["consent_id"],
            ["um_consents.id"],
            name="fk_um_consent_changes_consent_id",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_um_consent_changes"),
    )
    op.create_index("ix_um_consent_changes_consent_id", "um_consent_changes", ["consent_id"])


def downgrade() -> None:
    op.drop_table("um_consent_changes")
    op.drop_table("um_consents")
    with op.batch_alter_table("um_workspaces") as batch:
        batch.drop_column("consent_policy")
