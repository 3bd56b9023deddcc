"""SQL store methods of :class:`~..verifications._ops_store.VerificationOpsStore` (D34):
the guard's settings (``um_verification_guards``), conversion counts by hour and a
workspace's newest verifications (both over ``created_at`` indexes, migration 0025).

The counts are grouped in SQL by the hour's text: SQLite keeps times as fixed-width UTC
text (``YYYY-MM-DD HH:MM:SS…``), whose first 13 characters are the hour; PostgreSQL formats
its ``timestamptz`` in UTC the same way. So a stats call reads one row per hour and channel,
never the verifications themselves.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import RowMapping

from ..verifications._guard_rules import GuardSettings, Velocity
from ..verifications._ops_store import VerificationCount
from ..verifications._records import Verification
from ._sql_base import SqlBase
from ._sql_verifications import verification_of
from ._tables import UtcDateTime, verification_guards, verifications

__all__ = ["SqlVerifyOpsMixin"]

_v = verifications.c
_g = verification_guards.c
_GUARD = sa.select(verification_guards).where(_g.workspace_id == sa.bindparam("workspace_id"))
_RECENT = (
    sa.select(verifications)
    .where(
        _v.workspace_id == sa.bindparam("workspace_id"),
        _v.livemode == sa.bindparam("livemode"),
    )
    .order_by(_v.created_at.desc(), _v.id.desc())
    .limit(sa.bindparam("limit"))
)
_HOUR_FORMAT = "%Y-%m-%d %H"


class SqlVerifyOpsMixin(SqlBase):
    async def get_verification_guard(self, workspace_id: str) -> GuardSettings | None:
        row = await self._first(_GUARD, workspace_id=workspace_id)
        if row is None:
            return None
        return GuardSettings(
            prefix_limit=_velocity(row["prefix_limit"], row["prefix_window_ms"], "prefix_limit"),
            prefix_digits=row["prefix_digits"],
            address_limit=_velocity(
                row["address_limit"], row["address_window_ms"], "address_limit"
            ),
        )

    async def put_verification_guard(self, workspace_id: str, settings: GuardSettings) -> None:
        values = {
            **_velocity_columns("prefix", settings.prefix_limit),
            "prefix_digits": settings.prefix_digits,
            **_velocity_columns("address", settings.address_limit),
        }
        upsert = (
            self._upsert(verification_guards)
            .values(workspace_id=workspace_id, **values)
            .on_conflict_do_update(index_elements=[_g.workspace_id], set_=values)
        )
        async with self._write(missing=f"Workspace {workspace_id} not found.") as conn:
            await conn.execute(upsert)

    async def verification_counts(
        self, since: datetime, *, workspace_id: str | None = None, livemode: bool | None = None
    ) -> list[VerificationCount]:
        hour = self._hour_of(_v.created_at).label("hour")
        query = (
            sa.select(
                hour,
                _v.channel,
                _v.livemode,
                sa.func.count().label("started"),
                sa.func.sum(sa.case((_v.status == "approved", 1), else_=0)).label("approved"),
            )
            .where(_v.created_at >= sa.bindparam("since", type_=UtcDateTime()))
            .group_by(hour, _v.channel, _v.livemode)
            .order_by(hour, _v.channel, _v.livemode)
        )
        params: dict[str, Any] = {"since": since}
        if workspace_id is not None:
            query = query.where(_v.workspace_id == sa.bindparam("workspace_id"))
            params["workspace_id"] = workspace_id
        if livemode is not None:
            query = query.where(_v.livemode == sa.bindparam("livemode"))
            params["livemode"] = livemode
        rows = await self._all(query, **params)
        return [_count(row) for row in rows]

    async def recent_verifications(
        self, workspace_id: str, livemode: bool, limit: int
    ) -> list[Verification]:
        rows = await self._all(_RECENT, workspace_id=workspace_id, livemode=livemode, limit=limit)
        return [verification_of(row) for row in rows]

    def _hour_of(self, column: sa.ColumnElement[datetime]) -> sa.ColumnElement[str]:
        if self.dialect == "postgresql":
            utc = sa.func.timezone("UTC", column)
            return sa.func.to_char(utc, "YYYY-MM-DD HH24")
        return sa.func.substr(sa.cast(column, sa.Text), 1, 13)


def _velocity(limit: int | None, window_ms: int | None, name: str) -> Velocity | None:
    if limit is None or window_ms is None:
        return None
    return Velocity(limit, timedelta(milliseconds=window_ms), name)


def _velocity_columns(rule: str, velocity: Velocity | None) -> dict[str, int | None]:
    if velocity is None:
        return {f"{rule}_limit": None, f"{rule}_window_ms": None}
    window_ms = velocity.window // timedelta(milliseconds=1)
    return {f"{rule}_limit": velocity.limit, f"{rule}_window_ms": window_ms}


def _count(row: RowMapping) -> VerificationCount:
    hour = datetime.strptime(str(row["hour"]), _HOUR_FORMAT).replace(tzinfo=UTC)
    return VerificationCount(
        hour=hour,
        channel=row["channel"],
        livemode=bool(row["livemode"]),
        started=int(row["started"]),
        approved=int(row["approved"] or 0),
    )
