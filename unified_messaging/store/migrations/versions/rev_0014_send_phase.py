"""A message's send phase, and the provider template it is sent as.

``phase`` is where the send itself is (``_types.SendPhase``): ``refused`` (a bulk item
refused before any provider: never sent, never counted by the flood guard), ``accepted``
(written ahead, possibly in a provider's hands), ``waiting`` (written ahead, held back by
our own send rate before any provider call) or ``settled`` (the outcome stored). Rows
written before this revision get the phase their fields implied then: ``refused`` for a
failed row with no attempt, ``accepted`` for a queued row with none (a write-ahead row; its
submit check settles it), ``settled`` for every other.

``template_name`` and ``template_language``: the ``bizchat`` provider template a message is
sent as (with ``template_params``), so that a re-send sends the template, not free text.
Rows written before have none: they were, and are, re-sent as their rendered text.

Revision ID: 0014
Revises: 0012
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0012"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    with op.batch_alter_table("um_messages") as batch:
        batch.add_column(sa.Column("template_name", sa.Text(), nullable=True))
        batch.add_column(sa.Column("template_language", sa.Text(), nullable=True))
        batch.add_column(sa.Column("phase", sa.Text(), nullable=False, server_default="settled"))
    messages = sa.table(
        "um_messages",
        sa.column("status", sa.Text()),
        sa.column("attempts", sa.JSON()),
        sa.column("phase", sa.Text()),
    )
    no_attempt = sa.cast(messages.c.attempts, sa.Text()) == "[]"
    for status, phase in (("failed", "refused"), ("queued", "accepted")):
        op.execute(
            messages.update().where(messages.c.status == status, no_attempt).values(phase=phase)
        )


def downgrade() -> None:
    with op.batch_alter_table("um_messages") as batch:
        batch.drop_column("phase")
        batch.drop_column("template_language")
        batch.drop_column("template_name")
