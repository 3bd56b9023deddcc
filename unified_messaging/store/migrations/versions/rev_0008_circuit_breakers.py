"""Circuit breakers (D26): each connection's thresholds, and the breakers' shared state.

``um_connections.breaker_policy`` holds a connection's thresholds as JSON, NULL for the
defaults (so a later release may improve the defaults of every connection that kept them).
``um_breakers`` holds each connection's breaker as a small JSON document with a version for
compare-and-set; no row means closed with nothing counted. It is a plain keyed row, like the
quota counters: a removed connection's row is harmless and never read again.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    with op.batch_alter_table("um_connections") as batch:
        batch.add_column(sa.Column("breaker_policy", sa.JSON(none_as_null=True), nullable=True))
    op.create_table(
        "um_breakers",
        sa.Column("connection_id", sa.Text(), nullable=False),
        sa.Column("version", sa.BigInteger(), nullable=False),
        sa.Column("data", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("connection_id", name="pk_um_breakers"),
    )


def downgrade() -> None:
    op.drop_table("um_breakers")
    with op.batch_alter_table("um_connections") as batch:
        batch.drop_column("breaker_policy")
