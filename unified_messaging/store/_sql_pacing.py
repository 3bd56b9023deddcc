"""SQL store methods for send-rate pacing (D27): one ``um_pacing`` row per connection and limit.

A reservation is one statement, atomic on both dialects without a lock of our own::

    INSERT INTO um_pacing (key, tat) VALUES (:key, :now + :cost)
    ON CONFLICT (key) DO UPDATE SET tat = max(um_pacing.tat, :now) + :cost
      WHERE max(um_pacing.tat, :now) + :cost - :burst - :now <= :max_wait
    RETURNING tat

(``greatest`` on PostgreSQL). A row comes back when the slots were granted; none when the
wait would be too long, and then one read says how long. The conflict clause runs under the
row's lock (PostgreSQL) or the database's write lock (SQLite), so two processes never both
take the last slot. It goes through the group commit like every hot-path write.
"""

from __future__ import annotations

from functools import cache

import sqlalchemy as sa

from ._sql_base import SqlBase
from ._sql_engine import Dialect, dialect_insert
from ._tables import pacing

__all__ = ["PacingMixin"]

_GET = sa.select(pacing.c.tat).where(pacing.c.key == sa.bindparam("p_key"))


class PacingMixin(SqlBase):
    async def reserve_slots(
        self, key: str, *, now: int, cost: int, burst: int, max_wait: int
    ) -> tuple[bool, int]:
        if cost - burst > max_wait:
            # No TAT can make these slots usable in time; nothing to write.
            return False, int(await self._scalar(_GET, p_key=key) or 0)
        params = {"p_key": key, "p_now": now, "p_cost": cost, "p_burst": burst,
                  "p_max_wait": max_wait, "p_fresh": now + cost}  # fmt: skip
        statement = _reserve_statement(self.dialect)

        def reserve(conn: sa.Connection) -> int | None:
            found: int | None = conn.execute(statement, params).scalar()
            return found

        tat = await self._transact(reserve)
        if tat is not None:
            return True, int(tat)
        return False, int(await self._scalar(_GET, p_key=key) or 0)

    async def release_slots(self, key: str, *, now: int, cost: int) -> None:
        statement = _release_statement(self.dialect)
        params = {"p_key": key, "p_now": now, "p_cost": cost}

        def release(conn: sa.Connection) -> None:
            conn.execute(statement, params)

        await self._transact(release)


def _greatest(dialect: Dialect, *values: sa.ColumnElement[int]) -> sa.ColumnElement[int]:
    # SQLite's max() with two arguments is the scalar one; PostgreSQL spells it greatest.
    if dialect == "sqlite":
        return sa.func.max(*values, type_=sa.BigInteger)
    return sa.func.greatest(*values, type_=sa.BigInteger)


@cache
def _reserve_statement(dialect: Dialect) -> sa.Executable:
    """Built once per dialect (a prebuilt statement spares SQLAlchemy its cache key)."""
    now = sa.bindparam("p_now", type_=sa.BigInteger)
    cost = sa.bindparam("p_cost", type_=sa.BigInteger)
    burst = sa.bindparam("p_burst", type_=sa.BigInteger)
    max_wait = sa.bindparam("p_max_wait", type_=sa.BigInteger)
    new = _greatest(dialect, pacing.c.tat, now) + cost
    insert = dialect_insert(dialect)(pacing)
    return (
        insert.values(key=sa.bindparam("p_key"), tat=sa.bindparam("p_fresh", type_=sa.BigInteger))
        .on_conflict_do_update(
            index_elements=[pacing.c.key], set_={"tat": new}, where=new - burst - now <= max_wait
        )
        .returning(pacing.c.tat)
    )


@cache
def _release_statement(dialect: Dialect) -> sa.Executable:
    now = sa.bindparam("p_now", type_=sa.BigInteger)
    cost = sa.bindparam("p_cost", type_=sa.BigInteger)
    return (
        sa.update(pacing)
        .where(pacing.c.key == sa.bindparam("p_key"))
        .values(tat=_greatest(dialect, pacing.c.tat - cost, now))
    )
