"""Every namespace of ``Messenger`` has ``tests/namespaces/test_<name>.py``, and that file calls
each public method of the namespace's class (``verifications.guard``'s too).

A call is ``<anything>.<method>(`` anywhere in the file, read with ``ast``; the blocking twin
of a method (``SyncMessenger``) has the same name, so it counts as the same method.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from unified_messaging import ManualClock, Messenger
from unified_messaging.keys._service import ApiKeys

HERE = Path(__file__).resolve().parent


def namespaces(messenger: Messenger) -> dict[str, object]:
    """The namespaces of ``messenger`` (instance attributes, not methods or properties)."""
    return {
        name: value
        for name, value in vars(messenger).items()
        if not name.startswith("_") and hasattr(value, "__dict__") and not callable(value)
    }


def public_methods(namespace: object) -> set[str]:
    """The public methods of ``namespace``'s class, with those of its own sub-namespaces
    (``verifications.guard``)."""
    found = {
        name
        for name, member in inspect.getmembers(type(namespace))
        if not name.startswith("_") and inspect.isfunction(member)
    }
    if (guard := getattr(namespace, "guard", None)) is not None:
        found |= public_methods(guard)
    return found


def called_methods(source: str) -> set[str]:
    """Every ``<something>.<name>(`` call in ``source``."""
    return {
        node.func.attr
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
    }


def missing(folder: Path, name: str, methods: set[str]) -> list[str]:
    """What ``folder/test_<name>.py`` lacks: the file itself, or the methods it never calls."""
    path = folder / f"test_{name}.py"
    if not path.is_file():
        return [f"{path.name} is missing"]
    called = called_methods(path.read_text(encoding="utf-8"))
    return [f"{path.name} never calls .{method}(" for method in sorted(methods - called)]


def test_every_namespace_has_its_file_calling_each_public_method() -> None:
    found = namespaces(Messenger(clock=ManualClock()))
    assert "keys" in found and "verifications" in found  # the reading finds namespaces
    problems = [
        problem
        for name, namespace in sorted(found.items())
        for problem in missing(HERE, name, public_methods(namespace))
    ]
    assert problems == []


def test_the_guard_of_verifications_is_counted_with_it() -> None:
    messenger = Messenger(clock=ManualClock())
    assert "admit" in public_methods(messenger.verifications)
    assert "guard" not in namespaces(messenger)


# ----------------------------------------------------------------- the checker checks


def test_a_method_added_without_a_call_is_named(tmp_path: Path) -> None:
    (tmp_path / "test_keys.py").write_text(
        "async def test_it(m):\n    await m.keys.create('w')\n    m.keys.list('w')\n",
        encoding="utf-8",
    )
    methods = {"create", "list", "revoke"}

    assert missing(tmp_path, "keys", methods) == ["test_keys.py never calls .revoke("]
    assert missing(tmp_path, "keys", {"create", "list"}) == []


def test_a_method_added_to_a_real_namespace_fails_the_check_until_its_file_calls_it() -> None:
    class KeysWithMore(ApiKeys):
        async def rename(self, key_id: str, name: str) -> None:
            """A method nobody wrote a test for."""

    messenger = Messenger(clock=ManualClock())
    messenger.keys = KeysWithMore(messenger.store, messenger.clock, messenger.workspaces)

    keys = namespaces(messenger)["keys"]
    assert missing(HERE, "keys", public_methods(keys)) == ["test_keys.py never calls .rename("]


def test_a_name_that_is_not_called_does_not_count(tmp_path: Path) -> None:
    (tmp_path / "test_vault.py").write_text(
        "# rotate(\nROTATE = 'rotate('\ndef test_it(m):\n    assert m.vault.rotate\n",
        encoding="utf-8",
    )
    assert missing(tmp_path, "vault", {"rotate"}) == ["test_vault.py never calls .rotate("]


def test_a_namespace_without_its_file_is_named(tmp_path: Path) -> None:
    assert missing(tmp_path, "reports", {"ingest"}) == ["test_reports.py is missing"]
