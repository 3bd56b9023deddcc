"""Which ``Store`` protocol methods a run of the store tests called (see
``test_store_contract_coverage.py``): each test's ``store`` fixture records them when
:data:`CALLS_ENV` names a file.

Not in ``conftest.py``: every test folder has a ``conftest`` module, so importing names from
one by that name depends on which was loaded first.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
from collections.abc import Callable, Iterator
from typing import Any

from unified_messaging.store.base import Store

__all__ = ["CALLS_ENV", "calls_recorded", "store_methods"]

#: test_store_contract_coverage.py runs the suite with this set to a file: each test's
#: ``store`` then records the protocol methods called on it, appended there at its end.
CALLS_ENV = "UM_TEST_STORE_CALLS"


@contextlib.contextmanager
def calls_recorded(store: Store) -> Iterator[None]:
    path = os.environ.get(CALLS_ENV)
    if not path:
        yield
        return
    called: set[str] = set()

    def recording(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(method)
        def record(*args: Any, **kwargs: Any) -> Any:
            called.add(name)
            return method(*args, **kwargs)

        return record

    for name in store_methods():
        # On the instance: the class, and every other test's store, stay as they are.
        setattr(store, name, recording(name, getattr(store, name)))
    try:
        yield
    finally:
        with open(path, "a", encoding="utf-8") as calls:
            calls.writelines(f"{name}\n" for name in sorted(called))


def store_methods() -> list[str]:
    """Every public method of the ``Store`` protocol, its slices' included."""
    return sorted(
        name
        for name, value in inspect.getmembers(Store)
        if not name.startswith("_") and inspect.isfunction(value)
    )
