"""The flood guard's lock and count in one round trip on PostgreSQL (D28).

``um_recipient_recent(lock_class, lock_key, workspace_id, livemode, to, since, lim)`` takes
the recipient's transaction-scoped advisory lock, then returns the ``created_at`` of its
counted messages newer than ``since``, newest first, at most ``lim``. The function is
VOLATILE, so in READ COMMITTED its query takes a snapshot of its own *after* the lock is
held: it sees every row a writer that held the lock before us committed, exactly as the two
statements it replaces did (a single statement could not: its snapshot would predate the
wait for the lock). SQLite needs nothing: its write lock serializes writers already.

Revision ID: 0017
Revises: 0011
Create Date: 2026-11-27
"""

from __future__ import annotations

from alembic import op

revision: str = "0017"
down_revision: str | None = "0018"
branch_labels: str | None = None
depends_on: str | None = None

# Spelled out here, not imported: a revision must never change when the code does.
_CREATE = """
CREATE OR REPLACE FUNCTION um_recipient_recent(
    lock_class integer, lock_key integer, p_workspace_id text, p_livemode boolean,
    p_to text, p_since timestamptz, p_limit integer
) RETURNS SETOF timestamptz
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(lock_class, lock_key);
    RETURN QUERY
        SELECT m.created_at FROM um_messages AS m
        WHERE m.workspace_id = p_workspace_id AND m.livemode = p_livemode AND m."to" = p_to
          AND m.created_at > p_since AND m.phase <> 'refused'
        ORDER BY m.created_at DESC
        LIMIT p_limit;
END
$$
"""
_DROP = (
    "DROP FUNCTION IF EXISTS um_recipient_recent"
    "(integer, integer, text, boolean, text, timestamptz, integer)"
)


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_CREATE)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_DROP)
