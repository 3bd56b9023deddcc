"""The one reader of ``settings.UNIFIED_MESSAGING`` (django-anymail's ``get_anymail_setting``).

```python
UNIFIED_MESSAGING = {
    "DATABASE_URL": "django",          # beside Django's default database (or a SQLAlchemy URL)
    "MASTER_KEYS": env("UM_MASTER_KEYS"),  # default: the UM_MASTER_KEYS variable
    "REDIS_URL": None,                 # shared breakers and send rates (the redis extra)
    "API_KEY": env("UM_API_KEY"),      # whose sends get_messenger's send() makes, or:
    "WORKSPACE": None,                 #   a workspace id, with
    "TEST_MODE": False,                #   its test (simulator) or live side
    "WEBHOOK_SECRET": None,            # whsec_… of the endpoint the webhook view serves
}
```
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from django.conf import settings as django_settings
from django.core.exceptions import ImproperlyConfigured

__all__ = ["MessagingSettings", "check_settings", "database_url", "get_settings"]

SETTING: Final = "UNIFIED_MESSAGING"
_KEYS: Final = frozenset(
    {"DATABASE_URL", "MASTER_KEYS", "REDIS_URL", "API_KEY", "WORKSPACE", "TEST_MODE",
     "WEBHOOK_SECRET"}
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class MessagingSettings:
    database_url: str
    master_keys: str | None
    redis_url: str | None
    api_key: str | None
    workspace: str | None
    test_mode: bool
    webhook_secret: str | None

    def __repr__(self) -> str:  # the keys, the secret and the database password never appear
        from ..._redis_client import redact_url

        # "memory" is no URL; every other value may carry a password in its netloc or query.
        url = redact_url(self.database_url) if "://" in self.database_url else self.database_url
        return (
            f"MessagingSettings(database_url={url!r},"
            f" workspace={self.workspace!r}, test_mode={self.test_mode})"
        )


def _raw() -> dict[str, Any]:
    raw = getattr(django_settings, SETTING, {})
    if not isinstance(raw, dict):
        raise ImproperlyConfigured(f"settings.{SETTING} must be a dict")
    return raw


def check_settings() -> None:
    """Refuse keys this version does not know (a typo would otherwise be silently unused)."""
    unknown = sorted(set(_raw()) - _KEYS)
    if unknown:
        raise ImproperlyConfigured(
            f"settings.{SETTING} has unknown keys {unknown}; known: {sorted(_KEYS)}"
        )


def get_settings() -> MessagingSettings:
    check_settings()
    raw = _raw()
    return MessagingSettings(
        database_url=database_url(str(raw.get("DATABASE_URL", "django"))),
        master_keys=raw.get("MASTER_KEYS") or os.environ.get("UM_MASTER_KEYS") or None,
        redis_url=raw.get("REDIS_URL") or None,
        api_key=raw.get("API_KEY") or None,
        workspace=raw.get("WORKSPACE") or None,
        test_mode=bool(raw.get("TEST_MODE", False)),
        webhook_secret=raw.get("WEBHOOK_SECRET") or None,
    )


def database_url(value: str) -> str:
    """``"django"``: the SQLAlchemy URL beside Django's default database; anything else is
    taken as a SQLAlchemy URL.

    On PostgreSQL our tables go into Django's database itself. On SQLite they go into a
    sibling file (``db.sqlite3`` → ``db.unified_messaging.sqlite3``): SQLite lets one writer
    at a time hold a file, and a send inside ``transaction.atomic()`` (every view under
    ``ATOMIC_REQUESTS``) writes on our own connection while Django's transaction holds the
    file's write lock, so it would wait for a lock that is only let go after it returns.
    """
    if value != "django":
        return value
    database = django_settings.DATABASES["default"]
    engine = database["ENGINE"].rsplit(".", 1)[-1]
    if engine == "sqlite3":
        name = str(database["NAME"])
        if name == ":memory:" or name.startswith("file:"):
            # An in-memory database (Django's test database) cannot be shared: ours is too.
            return "memory"
        return f"sqlite+aiosqlite:///{_sibling(Path(name))}"
    if engine in ("postgresql", "postgresql_psycopg2"):
        from sqlalchemy.engine import URL

        url = URL.create(
            "postgresql+asyncpg",
            username=database.get("USER") or None,
            password=database.get("PASSWORD") or None,
            host=database.get("HOST") or None,
            port=int(database["PORT"]) if database.get("PORT") else None,
            database=database.get("NAME") or None,
        )
        return url.render_as_string(hide_password=False)
    raise ImproperlyConfigured(
        f"{SETTING}['DATABASE_URL'] = 'django' needs SQLite or PostgreSQL, not {engine}: "
        "give a SQLAlchemy URL instead"
    )


def _sibling(path: Path) -> Path:
    """Our SQLite file beside Django's: ``db.sqlite3`` → ``db.unified_messaging.sqlite3``."""
    return path.with_name(f"{path.stem}.unified_messaging{path.suffix}")
