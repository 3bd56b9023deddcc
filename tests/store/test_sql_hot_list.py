"""The store's ``Hot`` statements are listed in one place (docs/decisions.md, issue 25):
``_sql_hot.HOT_STATEMENTS`` names every one the store modules define, and only those."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import unified_messaging.store as store_package
from unified_messaging.store._sql_hot import HOT_STATEMENTS, Hot
from unified_messaging.store.sql import SqlStore


def module_level_hot_statements() -> set[str]:
    found = set()
    for info in pkgutil.iter_modules(store_package.__path__):
        module = importlib.import_module(f"{store_package.__name__}.{info.name}")
        for name, value in vars(module).items():
            if isinstance(value, Hot):
                found.add(f"{info.name}.{name}")
    return found


def test_every_module_level_hot_statement_is_listed() -> None:
    listed = {name for name in HOT_STATEMENTS if "(" not in name}
    assert module_level_hot_statements() == listed


def test_the_statements_built_per_dialect_are_hot(tmp_path: Path) -> None:
    store = SqlStore(f"sqlite:///{tmp_path / 'unused.db'}")  # nothing connects
    built = [name for name in HOT_STATEMENTS if "(" in name]
    assert built
    for name in built:
        kind = name.split("'")[1]
        assert isinstance(store._insert_new(kind), Hot)
