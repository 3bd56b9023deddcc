"""İYS through a provider: ``um_iys_connections.via_connection``, the provider connection
(İletimerkezi, Verimor) whose consent API registers a workspace's consents when it has no
İYS API user of its own. Null for every connection made before: İYS itself.

Revision ID: 0028
Revises: 0027
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0028"
down_revision: str | None = "0027"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    with op.batch_alter_table("um_iys_connections") as batch:
        batch.add_column(sa.Column("via_connection", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("um_iys_connections") as batch:
        batch.drop_column("via_connection")
