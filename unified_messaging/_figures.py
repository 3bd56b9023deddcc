"""How a figure is shown to a person: the one rule for the command line and the dashboard."""

from __future__ import annotations

__all__ = ["percent", "plural"]


def percent(rate: float) -> str:
    """``rate`` (0–1) to one decimal, never rounded onto an end it has not reached: 1,999
    delivered of 2,000 reads ``99.9%``, not ``100.0%``, and 1 of 2,000 ``0.1%``, not ``0.0%``."""
    shown = round(rate * 100, 1)
    if 0 < rate < 1:
        shown = min(max(shown, 0.1), 99.9)
    return f"{shown:.1f}%"


def plural(count: int, word: str) -> str:
    """``count`` and ``word`` as English says them: ``1 segment``, ``2 segments``, ``0 segments``
    (never ``segment(s)``). ``word`` is a noun whose plural adds an ``s``."""
    return f"{count} {word}" + ("" if count == 1 else "s")
