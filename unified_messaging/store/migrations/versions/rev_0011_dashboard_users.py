"""The dashboard's users and sessions (D31).

``um_users``: an e-mail (unique) with its argon2id hash, the role (``operator`` or
``member``) and, for a member, the one workspace. ``um_sessions``: a signed-in browser or a
one-time login link, kept by the SHA-256 of its id (the cookie's value is never stored), with
its CSRF token and what the user is looking at (workspace, test or live data).
``um_login_failures``: the sign-in throttle's failures, shared by every process, keyed by a
hash of the account and the client address.

``ix_um_messages_list`` gains ``status`` and ``provider`` after its columns: the dashboard's
overview counts a day's messages by provider and status from that index alone (a range of
it, no table reads); the list's order, which the index was made for, is unchanged.

Revision ID: 0011
Revises: 0014
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0014"
branch_labels: str | None = None
depends_on: str | None = None

_LIST = ["workspace_id", "livemode", "created_at", "job_id"]


def upgrade() -> None:
    op.create_table(
        "um_users",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("email", sa.Text(), nullable=False),
        sa.Column("password_hash", sa.Text(), nullable=False),
        sa.Column("role", sa.Text(), nullable=False),
        sa.Column("workspace_id", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("disabled_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["workspace_id"], ["um_workspaces.id"], name="fk_um_users_workspace_id"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_um_users"),
        sa.UniqueConstraint("email", name="uq_um_users_email"),
    )
    op.create_table(
        "um_sessions",
        sa.Column("id_hash", sa.Text(), nullable=False),
        sa.Column("user_id", sa.Text(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("csrf_token", sa.Text(), nullable=False),
        sa.Column("workspace_id", sa.Text(), nullable=True),
        sa.Column("livemode", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_seen_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"], ["um_users.id"], name="fk_um_sessions_user_id", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id_hash", name="pk_um_sessions"),
    )
    op.create_index("ix_um_sessions_user_id", "um_sessions", ["user_id"])
    op.create_table(
        "um_login_failures",
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_um_login_failures_key", "um_login_failures", ["key", "at"])
    op.drop_index("ix_um_messages_list", table_name="um_messages")
    op.create_index("ix_um_messages_list", "um_messages", [*_LIST, "status", "provider"])


def downgrade() -> None:
    op.drop_index("ix_um_messages_list", table_name="um_messages")
    op.create_index("ix_um_messages_list", "um_messages", _LIST)
    op.drop_index("ix_um_login_failures_key", table_name="um_login_failures")
    op.drop_table("um_login_failures")
    op.drop_index("ix_um_sessions_user_id", table_name="um_sessions")
    op.drop_table("um_sessions")
    op.drop_table("um_users")
