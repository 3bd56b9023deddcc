"""Send rates from the providers' documents (D27), for connections that exist.

Verimor's user guide has said 240 send requests a minute since 2023-02-28 (not the 150 that
revision 0009 read): ``sms_c`` connections still at 0009's 2.5 calls a second get 4. İletimerkezi
takes 100 SMS a second per account (its API overview, from 2026-05-05): ``sms_b`` connections
still at their former default, no limit, get ``max_rate`` 100. A rate anyone set to another
value is left alone. (An İletimerkezi connection deliberately set to ``off`` cannot be told
apart from the former default; it gets 100 too, and ``--max-rate off`` sets it back.)

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | None = None
depends_on: str | None = None

# Spelled out here, not imported: a revision must never change when the code does.
_CONNECTIONS = sa.table(
    "um_connections",
    sa.column("provider", sa.Text()),
    sa.column("max_rate", sa.Float()),
    sa.column("max_calls", sa.Float()),
)


def upgrade() -> None:
    c = _CONNECTIONS.c
    op.execute(
        _CONNECTIONS.update().where(c.provider == "sms_c", c.max_calls == 2.5).values(max_calls=4.0)
    )
    op.execute(
        _CONNECTIONS.update()
        .where(c.provider == "sms_b", c.max_rate.is_(None))
        .values(max_rate=100.0)
    )


def downgrade() -> None:
    c = _CONNECTIONS.c
    op.execute(
        _CONNECTIONS.update().where(c.provider == "sms_c", c.max_calls == 4.0).values(max_calls=2.5)
    )
    op.execute(
        _CONNECTIONS.update()
        .where(c.provider == "sms_b", c.max_rate == 100.0)
        .values(max_rate=None)
    )
