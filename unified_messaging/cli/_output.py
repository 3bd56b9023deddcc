"""What a command prints: one JSON document for scripts, aligned text for people.

A command returns a :class:`Report` holding both forms; :func:`emit` picks one. Keeping the
data and its text together means ``--json`` never drifts from what the table shows.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TypeAlias

__all__ = [
    "Column",
    "JsonObject",
    "JsonValue",
    "OutputClosed",
    "Report",
    "emit",
    "fields_report",
    "flush_stdout",
    "iso",
    "seconds",
    "table_report",
    "write_line",
]

JsonValue: TypeAlias = "bool | int | float | str | list[JsonValue] | dict[str, JsonValue] | None"
JsonObject: TypeAlias = "dict[str, JsonValue]"
Cell = Callable[[JsonValue], str]


@dataclass(frozen=True, slots=True)
class Report:
    """A command's result: ``data`` is printed under ``--json``, ``text`` otherwise."""

    data: JsonValue
    text: str


@dataclass(frozen=True, slots=True)
class Column:
    """A table column: its heading, the key it reads from each row, how a cell is shown."""

    heading: str
    key: str
    show: Cell | None = None


class OutputClosed(Exception):
    """Nobody reads stdout any more (``| head`` has what it wanted): the CLI exits quietly.

    Raised only for stdout, so a broken pipe elsewhere (a socket) stays an error."""


def emit(report: Report, *, as_json: bool) -> None:
    if as_json:
        # ASCII escapes keep the document valid JSON on any console encoding.
        write_line(json.dumps(report.data, ensure_ascii=True))
        return
    _tolerant_stdout()
    write_line(report.text)


def write_line(text: str) -> None:
    """Print ``text`` and a newline to stdout, now (:class:`OutputClosed` if it is closed)."""
    try:
        print(text)
    except BrokenPipeError:
        raise OutputClosed from None
    flush_stdout()


def flush_stdout() -> None:
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        raise OutputClosed from None


def fields_report(data: JsonObject, *, labels: Mapping[str, str], note: str = "") -> Report:
    """One record as ``label  value`` lines; ``labels`` picks and orders the shown keys."""
    width = max(len(label) for label in labels.values())
    lines = [f"{label:<{width}}  {cell(data.get(key))}" for key, label in labels.items()]
    if note:
        lines += ["", note]
    return Report(data, "\n".join(lines))


def table_report(rows: Sequence[JsonObject], columns: Sequence[Column], *, empty: str) -> Report:
    """Rows as an aligned table (the JSON form is the list itself); ``empty`` when none."""
    data: list[JsonValue] = list(rows)
    if not rows:
        return Report(data, empty)
    grid = [[column.heading for column in columns]]
    grid += [[(column.show or cell)(row.get(column.key)) for column in columns] for row in rows]
    widths = [max(len(line[i]) for line in grid) for i in range(len(columns))]
    text = "\n".join(
        "  ".join(value.ljust(width) for value, width in zip(line, widths, strict=True)).rstrip()
        for line in grid
    )
    return Report(data, text)


def cell(value: JsonValue) -> str:
    """How one JSON value reads in a table: ``-`` for nothing, lists comma-separated, an
    object as ``name value`` pairs (never Python's ``{'name': …}``)."""
    if value is None or value == [] or value == {}:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(cell(item) for item in value)
    if isinstance(value, dict):
        return ", ".join(f"{name.replace('_', ' ')} {cell(item)}" for name, item in value.items())
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def iso(moment: datetime | None) -> str | None:
    """The REST edge's timestamp form (pydantic's): ISO 8601, UTC as ``Z``."""
    if moment is None:
        return None
    text = moment.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def seconds(duration: timedelta) -> int | float:
    total = duration.total_seconds()
    return int(total) if total.is_integer() else total


def _tolerant_stdout() -> None:
    # Template bodies are often Turkish; a console that cannot show them gets escapes.
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(errors="backslashreplace")
