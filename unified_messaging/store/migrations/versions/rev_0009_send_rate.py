"""Per-connection send rates (D27): each connection's limits, and the slots every process shares.

``um_connections.max_rate`` (messages a second) and ``max_calls`` (provider calls a second),
NULL for no limit. Connections that exist get their provider's documented limit, as new ones
do: Verimor (``sms_c``) 150 requests a minute, 2.5 calls a second; Telegram (``chatbot``)
about 30 messages a second to many chats; WhatsApp Cloud (``bizchat``) 80 messages a second
per business number. The others document none.

``um_pacing`` holds one GCRA per connection and limit: its theoretical arrival time in
microseconds since the epoch, changed by one atomic upsert. No row is an idle limit; a
removed connection's rows are harmless and never read again.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | None = None
depends_on: str | None = None

# Spelled out here, not imported: a revision must never change when the code does.
_DOCUMENTED = (
    ("sms_c", "max_calls", 2.5),
    ("chatbot", "max_rate", 30.0),
    ("bizchat", "max_rate", 80.0),
)


def upgrade() -> None:
    with op.batch_alter_table("um_connections") as batch:
        batch.add_column(sa.Column("max_rate", sa.Float(), nullable=True))
        batch.add_column(sa.Column("max_calls", sa.Float(), nullable=True))
    connections = sa.table(
        "um_connections",
        sa.column("provider", sa.Text()),
        sa.column("max_rate", sa.Float()),
        sa.column("max_calls", sa.Float()),
    )
    for provider, column, value in _DOCUMENTED:
        op.execute(
            connections.update().where(connections.c.provider == provider).values({column: value})
        )
    op.create_table(
        "um_pacing",
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("tat", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("key", name="pk_um_pacing"),
    )


def downgrade() -> None:
    op.drop_table("um_pacing")
    with op.batch_alter_table("um_connections") as batch:
        batch.drop_column("max_calls")
        batch.drop_column("max_rate")
