"""The store's ``Hot`` statements are listed in one place (docs/decisions.md):
``_sql_hot.HOT_STATEMENTS`` names every one the store modules define, and only those."""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import unified_messaging.store as store_package
from unified_messaging.store._sql_hot import HOT_STATEMENTS, Hot
from unified_messaging.store.sql import SqlStore


def module_level_hot_statements() -> set[str]:
    found: dict[int, str] = {}
    for info in sorted(pkgutil.iter_modules(store_package.__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{store_package.__name__}.{info.name}")
        source = Path(module.__file__ or "").read_text(encoding="utf-8")
        for name, value in vars(module).items():
            # Defined here, not imported from the module that defines it.
            if isinstance(value, Hot) and re.search(rf"^{name}(: Final)? = Hot\(", source, re.M):
                found[id(value)] = f"{info.name}.{name}"
    return set(found.values())


def test_every_module_level_hot_statement_is_listed() -> None:
    listed = {name for name in HOT_STATEMENTS if "(" not in name}
    assert module_level_hot_statements() == listed


def test_the_statements_built_per_dialect_are_hot(tmp_path: Path) -> None:
    store = SqlStore(f"sqlite:///{tmp_path / 'unused.db'}")  # nothing connects
    built = [name for name in HOT_STATEMENTS if "(" in name]
    assert built
    for name in built:
        kind = name.split("'")[1]
        assert isinstance(store._prebuilt(kind), Hot)
