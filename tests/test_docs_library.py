"""docs/library.md names every public member of ``Messenger`` and ``SyncMessenger``.

The façade has one flat surface (docs/decisions.md, "Messenger keeps one flat surface"); its
reference page is where a reader finds a method, so a method the page does not name is one
nobody finds.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from unified_messaging import Messenger, SyncMessenger

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
