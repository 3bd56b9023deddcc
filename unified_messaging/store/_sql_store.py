"""``SqlStore``: the :class:`~unified_messaging.store.base.Store` on SQLite and PostgreSQL."""

from __future__ import annotations

from ._sql_accounts import AccountsMixin
from ._sql_audit import AuditMixin
from ._sql_batch import BatchMixin
from ._sql_breaker import BreakerMixin
from ._sql_consents import ConsentsMixin
from ._sql_core import CoreMixin
from ._sql_iys import IysMixin
from ._sql_pacing import PacingMixin
from ._sql_search import SearchMixin
from ._sql_stats import SqlStatsMixin
from ._sql_suppressions import SuppressionsMixin
from ._sql_users import UsersMixin
from ._sql_verifications import SqlVerificationsMixin
from ._sql_verify_ops import SqlVerifyOpsMixin
from ._sql_work import WorkMixin

__all__ = ["SqlStore"]


class SqlStore(
    AccountsMixin,
    CoreMixin,
    BatchMixin,
    WorkMixin,
    SqlStatsMixin,
    SearchMixin,
    BreakerMixin,
    PacingMixin,
    AuditMixin,
    UsersMixin,
    SuppressionsMixin,
    ConsentsMixin,
    IysMixin,
    SqlVerificationsMixin,
    SqlVerifyOpsMixin,
):
    """The store on SQLAlchemy Core (async): SQLite through aiosqlite, PostgreSQL through
    asyncpg, one implementation with the dialect differences kept in small helpers.

    ``SqlStore("sqlite+aiosqlite:///./unified_messaging.db")`` is the embedded default (one
    host, many processes); ``SqlStore("postgresql+asyncpg://user:pw@host/db")`` serves many
    hosts. :meth:`open` creates or upgrades the schema; every write is committed before the
    method returns. ``repr`` and :attr:`url` mask the password.
    """
