"""docs/library.md names every public member of ``Messenger`` and ``SyncMessenger``.

The façade keeps SPEC's operations and groups everything else in resource namespaces
(``messenger.keys``, ``messenger.connections`` …); its reference page is where a reader finds
a method, so a method the page does not name is one nobody finds.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from unified_messaging import ManualClock, Messenger, SyncMessenger

LIBRARY = Path(__file__).resolve().parent.parent / "docs" / "library.md"


def _named_in_code_spans(text: str) -> set[str]:
    """Every identifier inside a `code span` or a fenced block of ``text``."""
    spans = re.findall(r"```.*?```|`[^`\n]+`", text, flags=re.DOTALL)
    return {name for span in spans for name in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", span)}


@pytest.mark.parametrize("facade", [Messenger, SyncMessenger])
def test_every_public_member_of_the_facade_is_named_in_the_library_page(facade: type) -> None:
    public = {name for name in dir(facade) if not name.startswith("_")}
    named = _named_in_code_spans(LIBRARY.read_text(encoding="utf-8"))
    assert sorted(public - named) == []


def test_the_reader_of_code_spans_finds_calls_and_bare_names() -> None:
    found = _named_in_code_spans(
        "`send(auth, request) -> SendResponse`, `list_connections`, prose\n"
        "```python\nmessenger.now()\n```\n"
    )
    assert {"send", "list_connections", "now"} <= found
    assert "prose" not in found


# --------------------------------------------------------------------------- namespaces


def _documented_namespaces() -> dict[str, set[str]]:
    """``### `messenger.X``` sections of docs/library.md and the methods their tables name."""
    text = LIBRARY.read_text(encoding="utf-8")
    found: dict[str, set[str]] = {}
    for section in re.split(r"^#{2,3} ", text, flags=re.M)[1:]:
        heading = re.match(r"`messenger\.(\w+)`", section)
        if heading is None:
            continue
        rows = re.findall(r"^\| (.+?) \|", section, flags=re.M)
        names = {name for row in rows for name in re.findall(r"`(\w+)\(", row)}
        found[heading.group(1)] = names
    return found


def test_docs_library_documents_every_namespace_and_each_of_its_public_methods() -> None:
    messenger = Messenger(clock=ManualClock())
    namespaces = {
        name: value
        for name, value in vars(messenger).items()
        if not name.startswith("_") and hasattr(value, "__dict__") and not callable(value)
    }
    documented = _documented_namespaces()

    assert sorted(documented) == sorted(namespaces)
    for name, namespace in namespaces.items():
        public = {m for m in dir(type(namespace)) if not m.startswith("_")}
        assert documented[name] == public, f"messenger.{name}"


def test_the_messenger_itself_keeps_specs_operations_and_the_namespaces_only() -> None:
    messenger = Messenger(clock=ManualClock())
    public = {name for name in dir(messenger) if not name.startswith("_")}
    methods = {name for name in public if callable(getattr(messenger, name))}

    assert methods == {
        "open", "aclose", "authenticate", "principal", "send", "send_bulk", "preview_send",
        "get_message",
        "list_messages", "cancel_message", "worker", "run_worker",
    }  # fmt: skip
    assert len(public) <= 36  # 12 methods, 3 properties and the namespaces
