"""Escalation across channels (D36).

``um_messages.escalate_after_ms``: milliseconds a message waits for ``delivered`` on its current
channel before the next channel of its ``channel_fallback`` sends it (NULL: no escalation,
for every message stored before). ``um_verification_settings.whatsapp_template`` and
``escalate_after_ms``: a workspace's WhatsApp authentication template name (NULL: none) and
its codes' escalation wait (30 s for every existing row).

Revision ID: 0029
Revises: 0028
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0029"
down_revision: str | None = "0028"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    with op.batch_alter_table("um_messages") as batch:
        batch.add_column(sa.Column("escalate_after_ms", sa.BigInteger(), nullable=True))
    with op.batch_alter_table("um_verification_settings") as batch:
        batch.add_column(sa.Column("whatsapp_template", sa.Text(), nullable=True))
        batch.add_column(
            sa.Column("escalate_after_ms", sa.BigInteger(), nullable=False, server_default="30000")
        )


def downgrade() -> None:
    with op.batch_alter_table("um_verification_settings") as batch:
        batch.drop_column("escalate_after_ms")
        batch.drop_column("whatsapp_template")
    with op.batch_alter_table("um_messages") as batch:
        batch.drop_column("escalate_after_ms")
