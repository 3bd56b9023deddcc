"""The hand-over gate (D35) and a message's İYS class (D33).

``um_messages.ignore_quiet_hours``: the request's opt-out of quiet hours (a one-time code),
which the gate reads at every hand-over, not only the first; ``um_messages.held_until``:
until when the gate last held the message for quiet hours (its queue TTL counts from then).
Both cost a normal send nothing: false and NULL. ``um_messages.iys_mode``: the message's
İYS class, fixed at acceptance (NULL for messages stored before: their hops send with each
connection's own mode, as they did).

Telegram ``@usernames`` on the suppression list are case-folded, as the gate looks them up
(``@ShopNews`` suppresses ``@shopnews``); of two entries that fold to one, the older stays.

Revision ID: 0019
Revises: 0016
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0019"
down_revision: str | None = "0016"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    with op.batch_alter_table("um_messages") as batch:
        batch.add_column(
            sa.Column("ignore_quiet_hours", sa.Boolean(), nullable=False, server_default=sa.false())
        )
        batch.add_column(sa.Column("held_until", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("iys_mode", sa.Text(), nullable=True))
    # Usernames are [A-Za-z0-9_]: lower() folds them on both SQLite and PostgreSQL.
    op.execute(
        """
        DELETE FROM um_suppressions
        WHERE channel = 'chatbot' AND recipient LIKE '@%'
          AND EXISTS (
            SELECT 1 FROM um_suppressions AS other
            WHERE other.workspace_id = um_suppressions.workspace_id
              AND other.livemode = um_suppressions.livemode
              AND other.channel = 'chatbot'
              AND lower(other.recipient) = lower(um_suppressions.recipient)
              AND (other.created_at < um_suppressions.created_at
                   OR (other.created_at = um_suppressions.created_at
                       AND other.id < um_suppressions.id))
          )
        """
    )
    op.execute(
        "UPDATE um_suppressions SET recipient = lower(recipient) "
        "WHERE channel = 'chatbot' AND recipient LIKE '@%' AND recipient <> lower(recipient)"
    )


def downgrade() -> None:
    with op.batch_alter_table("um_messages") as batch:
        batch.drop_column("iys_mode")
        batch.drop_column("held_until")
        batch.drop_column("ignore_quiet_hours")
