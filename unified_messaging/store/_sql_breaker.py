"""SQL store methods for the circuit breakers' shared state (D26): one row per connection.

A breaker changes by compare-and-set on its ``version``: the first write inserts (and loses
to a concurrent insert, ``ON CONFLICT DO NOTHING``), later ones update only the version they
read. Reads are one primary-key lookup; the runtime (:mod:`.._breaker`) keeps a copy for a
second, so a healthy connection costs a read a second per process, not one per send.
"""

from __future__ import annotations

import sqlalchemy as sa

from .._routing.breaker_state import StoredBreaker
from ._sql_base import SqlBase
from ._tables import breakers

__all__ = ["BreakerMixin"]

_GET = sa.select(breakers.c.version, breakers.c.data).where(
    breakers.c.connection_id == sa.bindparam("connection_id")
)
_UPDATE = (
    sa.update(breakers)
    .where(
        breakers.c.connection_id == sa.bindparam("b_connection_id"),
        breakers.c.version == sa.bindparam("b_expected"),
    )
    .values(version=breakers.c.version + 1, data=sa.bindparam("b_data"))
)


class BreakerMixin(SqlBase):
    async def get_breaker(self, connection_id: str) -> StoredBreaker | None:
        row = await self._first(_GET, connection_id=connection_id)
        return None if row is None else StoredBreaker(row["data"], row["version"])

    async def put_breaker(self, connection_id: str, data: str, *, version: int) -> bool:
        if version == 0:
            insert = (
                self._upsert(breakers)
                .values(connection_id=connection_id, version=1, data=data)
                .on_conflict_do_nothing(index_elements=[breakers.c.connection_id])
            )

            def create(conn: sa.Connection) -> bool:
                return conn.execute(insert).rowcount == 1

            return await self._transact(create)
        params = {"b_connection_id": connection_id, "b_expected": version, "b_data": data}

        def update(conn: sa.Connection) -> bool:
            return conn.execute(_UPDATE, params).rowcount == 1

        return await self._transact(update)
