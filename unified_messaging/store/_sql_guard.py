"""The flood guard's count in SQL (D28), run inside the write-ahead transaction.

The count is of the stored messages themselves: ``ix_um_messages_list_to`` (workspace, mode,
recipient, created_at) gives a recipient's newest messages as one backward index range, so
the guard needs no table and no write of its own, and a refused send leaves nothing behind.

Two sends to one recipient must not both see room for one more. SQLite's write transaction
holds the database's write lock, so the count and the insert of one transaction never
interleave with another's. PostgreSQL (read committed) takes a transaction-scoped advisory
lock per recipient before counting: a second writer waits for the first one's commit, and
its count, a new snapshot, then sees the first one's rows. Lock and count are one round trip
(``um_recipient_recent``, migration 0017: a VOLATILE function, whose query takes its snapshot
after the lock is held; one plain statement could not, its snapshot would predate the wait).
Both run as :class:`~._sql_hot.Hot` statements. Recipients are locked in one
order (``recipient_refusals`` walks them sorted), so two writers never wait in a circle;
should a batch of many sends still deadlock, PostgreSQL aborts it and the group writer runs
each send again alone.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime
from typing import Final

import sqlalchemy as sa

from .._access.flood_guard import (
    RecipientKey,
    RecipientLimit,
    recipient_refusals,
    refused,
)
from .._domain import MessageRecord
from .._errors import RecipientRateLimited
from ._sql_engine import Dialect
from ._sql_hot import Hot
from ._tables import UtcDateTime
from ._tables import messages as message_table

__all__ = ["recipients_over"]

#: The advisory lock class of the guard's locks ("umrl"); the other key is the recipient's
#: hash. A host application sharing the database has its own classes; a hash collision
#: only makes two recipients wait for each other, never miscounts.
_LOCK_CLASS: Final = 0x756D726C

_RECENT: Final = Hot(
    sa.select(message_table.c.created_at)
    .where(
        message_table.c.workspace_id == sa.bindparam("workspace_id"),
        message_table.c.livemode == sa.bindparam("livemode"),
        message_table.c.to == sa.bindparam("to"),
        message_table.c.created_at > sa.bindparam("since"),
        # Items refused before any provider do not count: ``counts_toward_limit``, on the
        # same stored phase.
        message_table.c.phase != "refused",
    )
    .order_by(message_table.c.created_at.desc())
    .limit(sa.bindparam("limit"))
)
#: PostgreSQL: the advisory lock, then the same query (see the module doc).
_LOCK_AND_RECENT: Final = Hot(
    sa.text(
        "SELECT um_recipient_recent(:lock_class, :lock_key, :workspace_id, :livemode, :to,"
        " :since, :limit) AS created_at"
    )
    .bindparams(sa.bindparam("since", type_=UtcDateTime()))
    .columns(created_at=UtcDateTime())
)


def recipients_over(
    conn: sa.Connection,
    dialect: Dialect,
    records: Sequence[MessageRecord],
    limit: RecipientLimit | None,
) -> RecipientRateLimited | None:
    """The error to raise if ``records`` would take a recipient past ``limit``, else
    ``None``; run in the caller's write transaction before it writes anything.

    Returned, not raised: an operation that raises rolls back its whole group commit and
    makes every other send of it run again alone, which a flood would turn into a habit.
    """
    if limit is None or not records:
        return None

    def recent(key: RecipientKey, since: datetime, count: int) -> list[datetime]:
        params = {
            "workspace_id": key.workspace_id,
            "livemode": key.livemode,
            "to": key.to,
            "since": since,
            "limit": count,
        }
        if dialect == "postgresql":
            locked = {"lock_class": _LOCK_CLASS, "lock_key": _lock_key(key), **params}
            return _LOCK_AND_RECENT.scalars(conn, locked)
        return _RECENT.scalars(conn, params)

    refusals = recipient_refusals(records, limit, recent)
    return refused(refusals) if refusals else None


def _lock_key(key: RecipientKey) -> int:
    """A stable signed 32-bit number per recipient, the same in every process."""
    text = f"{key.workspace_id}\x00{int(key.livemode)}\x00{key.to}".encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=4).digest(), "big", signed=True)
