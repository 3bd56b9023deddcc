"""The audit log (D32): one append-only row per admin change.

``um_audit_log`` holds when, who (``library``, ``cli`` or ``dashboard:<e-mail>``), which
workspace, what action, which target id and from which client address; never a secret.
No foreign key: a row outlives what it is about. Listed newest first, so each index ends in
``at, id``.

Revision ID: 0012
Revises: 0013
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0013"
branch_labels: str | None = None
depends_on: str | None = None

_TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "um_audit_log",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("at", _TS, nullable=False),
        sa.Column("actor", sa.Text(), nullable=False),
        sa.Column("workspace_id", sa.Text(), nullable=True),
        sa.Column("action", sa.Text(), nullable=False),
        sa.Column("target", sa.Text(), nullable=False),
        sa.Column("client_address", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_um_audit_log"),
    )
    op.create_index("ix_um_audit_log_list", "um_audit_log", ["at", "id"])
    op.create_index("ix_um_audit_log_workspace", "um_audit_log", ["workspace_id", "at", "id"])
    op.create_index("ix_um_audit_log_action", "um_audit_log", ["action", "at", "id"])


def downgrade() -> None:
    op.drop_table("um_audit_log")
