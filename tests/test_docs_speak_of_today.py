"""The docs say what is true today: no page, no release note and no docstring points at the
issue that built something (the history lives in git). A reader of docs/ or of ``help()``
never meets "issue 26.4"."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ISSUE = re.compile(r"\bissues? #?\d+(?:\.\d+)?\b", re.IGNORECASE)


def _mentions(paths: list[Path]) -> list[str]:
    found = []
    for path in paths:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if ISSUE.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:80]}")
    return found


def test_no_doc_page_and_no_release_note_cites_an_issue() -> None:
    pages = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md", ROOT / "CHANGELOG.md"]
    assert _mentions(pages) == []


def test_no_module_of_the_package_cites_an_issue() -> None:
    assert _mentions(sorted((ROOT / "unified_messaging").rglob("*.py"))) == []


def test_the_pattern_finds_what_it_is_for() -> None:
    assert ISSUE.search("a fallback hop (issue 26.4) reaches")
    assert ISSUE.search("Issues 13 and 14")
    assert not ISSUE.search("jookies/jasmin#963")
