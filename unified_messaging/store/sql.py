"""The SQL store's public face: ``SqlStore``, ``store_from_url``, ``migrate``.

The implementation lives in the private ``_sql_*`` modules and needs the ``sql`` extra
(SQLAlchemy, aiosqlite, asyncpg, Alembic). It is imported on first use, so
``store_from_url(None)`` and ``store_from_url("memory")`` work without that extra.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from .base import Store
from .memory import MemoryStore

if TYPE_CHECKING:
    from ._sql_store import SqlStore

__all__ = ["DEFAULT_DATABASE_URL", "SqlStore", "migrate", "store_from_url"]

#: The embedded default of the server: a SQLite file in the working directory.
DEFAULT_DATABASE_URL = "sqlite+aiosqlite:///./unified_messaging.db"

_MEMORY = "memory"


def store_from_url(url: str | None, *, cache_ttl: float = 0.0) -> Store:
    """The store a URL names: ``None`` or ``"memory"`` for the in-memory store, else a
    :class:`SqlStore` (with ``cache_ttl``, see there). Reads no environment; the caller
    decides where the URL comes from. Call ``open()`` on the result before use."""
    if url is None or url.strip() == _MEMORY:
        return MemoryStore()
    return _sql_store_class()(url, cache_ttl=cache_ttl)


async def migrate(
    url: str, *, revision: str = "head", connect_args: Mapping[str, object] | None = None
) -> None:
    """Bring the database at ``url`` up to ``revision`` (the latest by default).

    Safe to run while other processes start or migrate: see ``store.migrations``.
    """
    try:
        from . import migrations
        from ._sql_engine import EngineOptions, make_engines, normalize_url
    except ImportError as exc:  # pragma: no cover - only without the extra
        raise _missing_sql() from exc
    parsed, dialect = normalize_url(url)
    engines = make_engines(parsed, dialect, EngineOptions(connect_args=connect_args))
    try:
        await migrations.upgrade(engines, revision, password=parsed.password)
    finally:
        await engines.dispose()


def _sql_store_class() -> type[SqlStore]:
    try:
        from ._sql_store import SqlStore
    except ImportError as exc:  # pragma: no cover - only without the extra
        raise _missing_sql() from exc
    return SqlStore


def __getattr__(name: str) -> object:
    # ``SqlStore`` is imported lazily so the module loads without SQLAlchemy.
    if name == "SqlStore":
        return _sql_store_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _missing_sql() -> Exception:
    from .._errors import MissingExtra

    return MissingExtra("The SQL store", extra="sql", setting="UM_DATABASE_URL")
