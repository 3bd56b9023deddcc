"""What the browser tests share besides fixtures (a module of its own: every test folder has
a ``conftest``, so importing from one by that name depends on which was loaded first)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Demo"]


@dataclass(frozen=True)
class Demo:
    """What ``serve --demo --json`` printed."""

    url: str
    api_key: str
    workspace_id: str
    login_url: str
