"""Scheduled sends and quiet hours.

``um_messages.send_at``: when a message that waits (its ``send_at``, or the workspace's
quiet hours) is to be handed over; NULL for every send handed over at once, so a normal send
writes nothing more. No index: the due rows are found through ``um_due_work`` (one
``scheduled_send`` item per waiting message, on its ``due_at`` index), never by scanning
messages.

``um_workspaces.quiet_hours``: the workspace's quiet window as a small JSON document
(``{"window": "21:00-09:00", "zone": "Europe/Istanbul", "scope": "commercial"}``); NULL: off.

Revision ID: 0015
Revises: 0011
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0017"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    with op.batch_alter_table("um_messages") as batch:
        batch.add_column(sa.Column("send_at", sa.DateTime(timezone=True), nullable=True))
    with op.batch_alter_table("um_workspaces") as batch:
        batch.add_column(sa.Column("quiet_hours", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("um_workspaces") as batch:
        batch.drop_column("quiet_hours")
    with op.batch_alter_table("um_messages") as batch:
        batch.drop_column("send_at")
