"""Every install line in the docs works on a fresh machine.

The package is not on an index yet, so a line that installs ``unified-messaging`` by name
fails; each one must install from a clone (``.``) or a built wheel, and name only extras that
``pyproject.toml`` declares.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parent.parent
PAGES: Final = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
_INSTALL = re.compile(r"pip install\s+(?:--\S+\s+)*['\"]?([^'\"`\s]+)")
_EXTRAS = re.compile(r"\[([^\]]*)\]$")


def _install_targets() -> list[tuple[str, str]]:
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        found += [(page.name, m.group(1)) for m in _INSTALL.finditer(text)]
    return found


def test_no_install_line_names_the_package_on_an_index() -> None:
    targets = _install_targets()
    assert targets  # the pattern still finds the docs' install lines
    by_name = [(page, t) for page, t in targets if t.startswith("unified-messaging")]
    assert by_name == []


def test_every_extra_an_install_line_names_exists() -> None:
    declared = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
                   ["optional-dependencies"])  # fmt: skip
    for page, target in _install_targets():
        extras = _EXTRAS.search(target)
        if extras is None or not (target.startswith(".") or target.endswith(".whl]")
                                  or ".whl[" in target):  # fmt: skip
            continue
        named = {extra.strip() for extra in extras.group(1).split(",")}
        assert named <= declared, (page, target)
