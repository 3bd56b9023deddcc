"""Report polling paced per message (22.11, 22.19): ``um_provider_refs.poll_after``.

A polled provider's reference is not asked about before this time: its send plus the
provider's first delay (Mutlucell: a minute), then each query plus its repeat delay
(Mutlucell: 15 minutes). A poll round reads a connection's live, open, due refs, the longest
due first, so no cursor is kept anywhere and no page of refs that are not asked (test-mode
ones) can hold the live ones back. Refs that exist get NULL: due at once, asked first.

Revision ID: 0013
Revises: 0010
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0010"
branch_labels: str | None = None
depends_on: str | None = None

_TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table("um_provider_refs") as batch:
        batch.add_column(sa.Column("poll_after", _TS, nullable=True))
    op.create_index(
        "ix_um_provider_refs_poll",
        "um_provider_refs",
        ["connection_id", "open", "livemode", "poll_after"],
    )


def downgrade() -> None:
    op.drop_index("ix_um_provider_refs_poll", table_name="um_provider_refs")
    with op.batch_alter_table("um_provider_refs") as batch:
        batch.drop_column("poll_after")
