"""The campaign's progress bar: rows done of all, rows a second, time left.

Drawn on stderr and only when stderr is a terminal: a pipe or a log file gets no escape
codes and no carriage returns, just the report at the end. ``rich`` (the ``cli`` extra)
draws it; without it a plain one-line counter is redrawn in its place.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import IO, TYPE_CHECKING, Protocol, Self

if TYPE_CHECKING:
    from rich.progress import Progress, ProgressColumn, Task
    from rich.text import Text

__all__ = ["Bar", "open_bar"]


class Bar(Protocol):
    def __enter__(self) -> Self: ...

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...

    def advance(self, rows: int) -> None: ...

    def note(self, line: str) -> None:
        """Print ``line`` above the bar (a bad row), keeping the bar below it."""
        ...


def open_bar(total: int, *, label: str, enabled: bool, stream: IO[str] | None = None) -> Bar:
    """A bar over ``total`` rows when ``enabled`` and ``stream`` (stderr) is a terminal;
    otherwise one that only prints the notes."""
    stream = stream or sys.stderr
    if not (enabled and stream.isatty()):
        return _Lines(stream)
    try:
        return _RichBar(total, label, stream)
    except ImportError:
        return _PlainBar(total, label, stream)


class _Lines:
    """No bar: notes as plain lines."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stream.flush()

    def advance(self, rows: int) -> None:
        pass

    def note(self, line: str) -> None:
        print(line, file=self._stream)


class _RichBar:
    def __init__(self, total: int, label: str, stream: IO[str]) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        console = Console(file=stream)
        self._progress: Progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            _rate_column(),
            TextColumn("left"),
            TimeRemainingColumn(),
            TimeElapsedColumn(),
            console=console,
        )
        self._task = self._progress.add_task(label, total=total)

    def __enter__(self) -> Self:
        self._progress.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._progress.stop()

    def advance(self, rows: int) -> None:
        self._progress.advance(self._task, rows)

    def note(self, line: str) -> None:
        self._progress.console.print(line, markup=False, highlight=False)


def _rate_column() -> ProgressColumn:
    from rich.progress import ProgressColumn
    from rich.text import Text

    class RateColumn(ProgressColumn):
        """Rows a second, over rich's recent window."""

        def render(self, task: Task) -> Text:
            speed = task.finished_speed or task.speed
            return Text("- rows/s" if speed is None else f"{speed:,.0f} rows/s")

    return RateColumn()


class _PlainBar:
    """``  1,200/100,000 rows  850 rows/s  1m56s left``, redrawn with a carriage return."""

    def __init__(self, total: int, label: str, stream: IO[str]) -> None:
        self._total, self._label, self._stream = total, label, stream
        self._done = 0
        self._start = time.monotonic()

    def __enter__(self) -> Self:
        self._draw()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._draw()
        self._stream.write("\n")
        self._stream.flush()

    def advance(self, rows: int) -> None:
        self._done += rows
        self._draw()

    def note(self, line: str) -> None:
        self._stream.write("\r\x1b[2K" + line + "\n")
        self._draw()

    def _draw(self) -> None:
        elapsed = time.monotonic() - self._start
        rate = self._done / elapsed if elapsed > 0 and self._done else 0.0
        left = "-" if not rate else _duration((self._total - self._done) / rate)
        self._stream.write(
            f"\r\x1b[2K{self._label}  {self._done:,}/{self._total:,} rows  "
            f"{rate:,.0f} rows/s  {left} left"
        )
        self._stream.flush()


def _duration(seconds: float) -> str:
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes}m{rest:02d}s" if minutes else f"{rest}s"
