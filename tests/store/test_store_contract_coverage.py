"""Every method of the ``Store`` protocol is exercised by the shared contract suite.

The suite is every test of this folder that takes the ``store`` fixture, which runs it on
memory, SQLite and PostgreSQL alike. This runs it once more, on the memory backend (the
same test functions run on every backend), in a process of its own whose ``store``
fixtures record each protocol method called on them (``_store_calls.py``), and compares
what was called with what the protocol declares, its slices' methods included (users,
consents, verifications...). A method added to the protocol without a contract test fails
here by name.
"""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _store_calls import CALLS_ENV, store_methods

import unified_messaging
from unified_messaging.store.base import Store

HERE = Path(__file__).parent
#: The suite's memory cases, in one process (the file of calls is appended to).
SUITE_ON_MEMORY = ("-k", "memory", "-q", "-x", "-p", "no:xdist", "-p", "no:cacheprovider")


def test_the_store_protocol_is_every_store_slice() -> None:
    """A slice of the store (a concern's ``*Store`` protocol) is part of ``Store``, so its
    methods are counted below."""
    slices = {
        cls
        for module in _package_modules()
        for cls in vars(module).values()
        if inspect.isclass(cls)
        and cls.__module__ == module.__name__
        and cls.__name__.endswith("Store")
        and getattr(cls, "_is_protocol", False)
    }
    # BreakerStore: the breakers' own seam (a Redis one too); Store implements it as well.
    separate = {"BreakerStore"}

    assert {cls.__name__ for cls in slices - set(Store.__mro__)} == separate
    assert len(store_methods()) > 100


def test_every_store_method_is_exercised_by_the_contract_suite(tmp_path: Path) -> None:
    calls = tmp_path / "calls.txt"
    environ = {k: v for k, v in os.environ.items() if not k.startswith("UM_")}
    environ[CALLS_ENV] = str(calls)
    run = subprocess.run(  # noqa: S603 - our own interpreter and fixed arguments
        [sys.executable, "-m", "pytest", str(HERE), *SUITE_ON_MEMORY],
        cwd=HERE.parents[1],
        env=environ,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    called = set(calls.read_text().split())

    missing = sorted(set(store_methods()) - called)

    assert missing == [], f"Store methods no contract test calls: {missing}"


def _package_modules() -> list[object]:
    import importlib
    import pkgutil

    found = []
    for info in pkgutil.walk_packages(unified_messaging.__path__, "unified_messaging."):
        if any(
            edge in info.name
            for edge in (".contrib.", ".dashboard", ".asgi", ".cli", ".migrations")
        ):
            continue
        try:
            found.append(importlib.import_module(info.name))
        except ImportError:
            pytest.skip(f"{info.name} needs an extra that is not installed")
    return found
