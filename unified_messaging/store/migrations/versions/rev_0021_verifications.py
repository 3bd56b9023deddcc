"""Verify (D34): verifications, each workspace's Verify settings, a code message's masked text.

``um_verifications`` holds one row per verification, its code only as a keyed digest.
``pending_to`` is the recipient while the verification is pending, NULL after; its unique
index ``ix_um_verifications_pending`` lets one pending verification per recipient exist, so
concurrent starts make one. ``ix_um_verifications_started`` counts a recipient's
verifications of the last hour. ``um_verification_settings``: a workspace's limits (no row:
the defaults). ``um_messages.masked_text``: a code message's text with the code masked,
which live mode shows (NULL for every other message: it costs them nothing).

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | None = None
depends_on: str | None = None

_TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "um_verifications",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.Column("livemode", sa.Boolean(), nullable=False),
        sa.Column("to", sa.Text(), nullable=False),
        sa.Column("channel", sa.Text(), nullable=False),
        sa.Column("status", sa.Text(), nullable=False),
        sa.Column("pending_to", sa.Text(), nullable=True),
        sa.Column("code_digest", sa.Text(), nullable=False),
        sa.Column("code_length", sa.Integer(), nullable=False),
        sa.Column("locale", sa.Text(), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.Column("updated_at", _TS, nullable=False),
        sa.Column("expires_at", _TS, nullable=False),
        sa.Column("max_checks", sa.Integer(), nullable=False),
        sa.Column("wrong_checks", sa.Integer(), nullable=False),
        sa.Column("sends", sa.JSON(none_as_null=True), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["workspace_id"], ["um_workspaces.id"], name="fk_um_verifications_workspace_id"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_um_verifications"),
    )
    op.create_index(
        "ix_um_verifications_pending",
        "um_verifications",
        ["workspace_id", "livemode", "pending_to"],
        unique=True,
    )
    op.create_index(
        "ix_um_verifications_started",
        "um_verifications",
        ["workspace_id", "livemode", "to", "created_at"],
    )
    op.create_table(
        "um_verification_settings",
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.Column("max_checks", sa.Integer(), nullable=False),
        sa.Column("max_sends", sa.Integer(), nullable=False),
        sa.Column("resend_cooldown_ms", sa.BigInteger(), nullable=False),
        sa.Column("hourly_limit", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["um_workspaces.id"],
            name="fk_um_verification_settings_workspace_id",
        ),
        sa.PrimaryKeyConstraint("workspace_id", name="pk_um_verification_settings"),
    )
    with op.batch_alter_table("um_messages") as batch:
        batch.add_column(sa.Column("masked_text", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("um_messages") as batch:
        batch.drop_column("masked_text")
    op.drop_table("um_verification_settings")
    op.drop_table("um_verifications")
