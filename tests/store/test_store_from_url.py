"""Choosing a store from a URL, and what a SQL store shows of its URL."""

from __future__ import annotations

import pytest

from unified_messaging.store.base import Store
from unified_messaging.store.memory import MemoryStore
from unified_messaging.store.sql import DEFAULT_DATABASE_URL, SqlStore, store_from_url

PASSWORD = "s3cret-Pa55"


@pytest.mark.parametrize("url", [None, "memory", " memory "])
def test_no_url_or_memory_is_the_memory_store(url: str | None) -> None:
    assert isinstance(store_from_url(url), MemoryStore)


@pytest.mark.parametrize(
    ("url", "dialect", "shown"),
    [
        (DEFAULT_DATABASE_URL, "sqlite", "sqlite+aiosqlite:///./unified_messaging.db"),
        ("sqlite:////tmp/um.db", "sqlite", "sqlite+aiosqlite:////tmp/um.db"),
        ("postgresql://u@db/um", "postgresql", "postgresql+asyncpg://u@db/um"),
        ("postgres://u@db/um", "postgresql", "postgresql+asyncpg://u@db/um"),
        ("postgresql+asyncpg://u@db/um", "postgresql", "postgresql+asyncpg://u@db/um"),
    ],
)
def test_sql_urls_get_the_async_driver(url: str, dialect: str, shown: str) -> None:
    store = store_from_url(url)
    assert isinstance(store, SqlStore)
    assert (store.dialect, store.url) == (dialect, shown)


def test_every_backend_implements_the_protocol() -> None:
    assert isinstance(MemoryStore(), Store)
    assert isinstance(SqlStore(DEFAULT_DATABASE_URL), Store)


def test_repr_and_url_mask_the_password() -> None:
    store = SqlStore(f"postgresql+asyncpg://um:{PASSWORD}@127.0.0.1/test")
    assert PASSWORD not in repr(store)
    assert PASSWORD not in store.url
    assert repr(store) == "SqlStore('postgresql+asyncpg://um:***@127.0.0.1/test')"


def test_an_unsupported_url_is_a_value_error_without_the_password() -> None:
    with pytest.raises(ValueError, match="Unsupported") as caught:
        store_from_url(f"mysql+aiomysql://um:{PASSWORD}@127.0.0.1/test")
    assert PASSWORD not in str(caught.value)
    with pytest.raises(ValueError, match="Not a database URL"):
        store_from_url(f"::{PASSWORD}::")
