"""A campaign's CSV, read as a stream: the header's rules, then one row at a time.

The file is never held in memory: a text stream over the bytes (UTF-8 with a byte-order mark
skipped, or the encoding the caller names, e.g. ``cp1254`` for a Turkish Excel export; any
line ending) feeds the ``csv`` module a line at a time, and a line longer than
:data:`MAX_LINE_CHARS` is refused before it is built, so a file of one endless line costs no
more memory than a short one.

Two kinds of problem, two answers:

- the file as a whole cannot be used (not text in its encoding, no header, no rows, the
  recipient column missing, a column the template needs missing, a malformed quote, a NUL
  byte): a
  :class:`~unified_messaging.RequestInvalid` naming ``csv``, found by :meth:`CsvSource.scan`
  before anything is sent;
- one row is bad (no number, too many cells): that row fails alone, at send time.

Rows are numbered as a spreadsheet numbers them: the header is row 1, so the first data row
is row 2 (a quoted cell spanning lines counts from the line the row starts on).
"""

from __future__ import annotations

import codecs
import csv
import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Final

from .._errors import RequestInvalid
from .._models import MAX_VARIABLE_NAME_LENGTH, MAX_VARIABLES

__all__ = [
    "DEFAULT_ENCODING",
    "MAX_LINE_CHARS",
    "CsvRow",
    "CsvSource",
    "csv_problem",
    "text_encoding",
]

#: The longest line read (characters): far above any SMS row, far below a file's size.
MAX_LINE_CHARS: Final = 1 << 20
#: The field name of every whole-file problem, as the REST edge names a body field.
FIELD: Final = "csv"
_UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
_SAVE_AS_UTF8 = 'save it as UTF-8 (in Excel: "CSV UTF-8 (comma delimited)")'
#: What to do about a file that is not text in the encoding it was read in.
_NAME_THE_ENCODING = (
    "give its encoding with --encoding (e.g. --encoding cp1254 for a Turkish Excel or Windows "
    "export) or " + _SAVE_AS_UTF8
)
#: The default, and what "utf-8" reads as: UTF-8 with a byte-order mark skipped if present.
DEFAULT_ENCODING: Final = "utf-8"


def text_encoding(name: str) -> str:
    """The codec to read a CSV in for ``name`` (``utf-8``, ``cp1254``, ``windows-1254``,
    ``iso-8859-9`` …): UTF-8 as ``utf-8-sig`` (Excel writes a byte-order mark). A name Python
    does not know is :class:`RequestInvalid` naming ``--encoding``."""
    try:
        info = codecs.lookup(name)
    except (LookupError, ValueError):
        raise csv_problem(
            f"{name[:40]!r} is not a text encoding; --encoding takes a name such as utf-8, "
            "cp1254 (Windows Turkish) or iso-8859-9"
        ) from None
    if not getattr(info, "_is_text_encoding", True):  # e.g. base64, rot13: bytes to bytes
        raise csv_problem(f"{name[:40]!r} is not a text encoding; use e.g. utf-8 or cp1254")
    return "utf-8-sig" if info.name in ("utf-8", "utf-8-sig") else info.name


def csv_problem(message: str) -> RequestInvalid:
    return RequestInvalid.for_field(FIELD, message)


@dataclass(frozen=True, slots=True)
class CsvRow:
    """One data row: its row number in the file and its cells by column name.

    ``cells`` holds the non-empty cells, stripped: a CSV cannot tell an empty value from a
    missing one, and a message that reads "Dear ," is worse than a row refused for it.
    ``extra`` counts the cells past the header's columns (a row in error).
    """

    number: int
    cells: dict[str, str]
    extra: int = 0


class CsvSource:
    """A CSV file, opened afresh for each pass (:meth:`scan`, then :meth:`rows`).

    ``to_column`` names the recipient column; ``required`` the other columns that must be
    there (the template's placeholders). Both are checked against the header. ``encoding``:
    the file's (:func:`text_encoding`; default UTF-8, a byte-order mark skipped).
    ``to_column_option``: the option that names another recipient column, which the error
    for a missing one suggests (``None``: a caller whose column is fixed).
    :meth:`of_text` reads text already in memory (a form's field) by the same rules.
    """

    def __init__(
        self,
        path: Path | str,
        *,
        to_column: str = "phone",
        delimiter: str = ",",
        required: tuple[str, ...] = (),
        encoding: str = DEFAULT_ENCODING,
        to_column_option: str | None = "--to-column",
    ) -> None:
        if len(delimiter) != 1 or delimiter in '\r\n"':
            raise csv_problem("the delimiter must be one character, not a quote or line end")
        self.encoding = text_encoding(encoding)
        self.path = Path(path)
        self.to_column = to_column
        self.delimiter = delimiter
        self.required = required
        self.to_column_option = to_column_option
        self._text: str | None = None

    @classmethod
    def of_text(
        cls, text: str, *, to_column: str, to_column_option: str | None = None
    ) -> CsvSource:
        """A CSV given as text (a form's field): the same header and row rules, read from
        memory; the delimiter is a comma."""
        source = cls("<text>", to_column=to_column, to_column_option=to_column_option)
        source._text = text.removeprefix("\ufeff")
        return source

    def scan(self) -> int:
        """Read the whole file once, checking it can be read; the number of data rows.

        Raises :class:`RequestInvalid` (``csv: …``) for a whole-file problem, with the row it
        was found at. Nothing is kept: memory stays flat whatever the file's size.
        """
        count = 0
        for _ in self.rows():
            count += 1
        if count == 0:
            raise csv_problem("the file has a header and no rows: nothing to send")
        return count

    def rows(self) -> Iterator[CsvRow]:
        """The data rows, in file order, one at a time."""
        with self._open() as stream:
            lines = _BoundedLines(stream, self.path, self.encoding)
            reader = csv.reader(lines, delimiter=self.delimiter, strict=True)
            header = self._header(_next_record(reader, lines))
            width = len(header)
            last_line = reader.line_num
            while True:
                record = _next_record(reader, lines)
                if record is None:
                    return
                number, last_line = last_line + 1, reader.line_num
                if not record or (len(record) == 1 and not record[0].strip()):
                    continue  # a blank line
                cells = {
                    name: value.strip()
                    for name, value in zip(header, record, strict=False)
                    if value.strip()
                }
                yield CsvRow(number, cells, max(0, len(record) - width))

    # -- the header

    def _header(self, record: list[str] | None) -> tuple[str, ...]:
        if record is None:
            raise csv_problem("the file is empty: its first row must name the columns")
        names = tuple(name.strip() for name in record)
        for index, name in enumerate(names, start=1):
            if not name:
                raise csv_problem(f"column {index} of the header row has no name")
            if len(name) > MAX_VARIABLE_NAME_LENGTH:
                raise csv_problem(
                    f"column {index}'s name is longer than {MAX_VARIABLE_NAME_LENGTH} characters"
                )
        seen: set[str] = set()
        for name in names:
            if name in seen:
                raise csv_problem(f"the header names the column {name!r} twice")
            seen.add(name)
        if len(names) > MAX_VARIABLES:
            raise csv_problem(f"the file has {len(names)} columns; at most {MAX_VARIABLES}")
        shown = ", ".join(names)
        if self.to_column not in seen:
            hint = (
                "" if self.to_column_option is None else f"; name it with {self.to_column_option}"
            )
            raise csv_problem(
                f"no column {self.to_column!r} for the recipient (the columns are: {shown})" + hint
            )
        missing = [name for name in self.required if name not in seen]
        if missing:
            raise csv_problem(
                f"the text uses {', '.join(missing)}, which the file has no column for "
                f"(the columns are: {shown})"
            )
        return names

    def _open(self) -> IO[str]:
        if self._text is not None:
            return io.StringIO(self._text, newline="")
        try:
            raw = self.path.open("rb")
        except FileNotFoundError:
            raise csv_problem(f"no such file: {self.path}") from None
        except IsADirectoryError:
            raise csv_problem(f"{self.path} is a directory, not a CSV file") from None
        except PermissionError:
            raise csv_problem(f"{self.path} cannot be read (permission denied)") from None
        if self.encoding == "utf-8-sig" and raw.peek(2)[:2] in _UTF16_BOMS:
            raw.close()
            raise csv_problem(
                f"the file is UTF-16 text; --encoding utf-16 reads it, or {_SAVE_AS_UTF8}"
            )
        # utf-8-sig skips a byte-order mark (Excel writes one); newline="" hands the csv
        # module every line end as it is, so \r\n, \n and quoted line breaks all read right.
        return io.TextIOWrapper(raw, encoding=self.encoding, errors="strict", newline="")


class _BoundedLines:
    """The stream's lines, refusing one longer than :data:`MAX_LINE_CHARS` before it is
    read whole (``readline`` with a limit). Counts lines for error messages."""

    def __init__(self, stream: IO[str], path: Path, encoding: str) -> None:
        self._stream = stream
        self._path = path
        self._encoding = encoding
        self.line = 0

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        try:
            line = self._stream.readline(MAX_LINE_CHARS + 1)
        except UnicodeDecodeError:
            raise _not_text(self._path, self._encoding) from None
        if not line:
            raise StopIteration
        self.line += 1
        if len(line) > MAX_LINE_CHARS:
            raise csv_problem(
                f"row {self.line} is longer than {MAX_LINE_CHARS} characters: "
                "is this a CSV file with a line per row?"
            )
        return line


def _not_text(path: Path, encoding: str) -> RequestInvalid:
    """The error for a file that is not text in ``encoding``, naming the first row and byte
    that is not, and ``--encoding``.

    The text stream decodes ahead of the line it hands out, so its error does not say
    where; a second pass over the bytes, a line at a time, does (only on this path)."""
    shown = "UTF-8" if encoding == "utf-8-sig" else encoding
    decoder = codecs.getincrementaldecoder(encoding)()
    with path.open("rb") as raw:
        for number, line in enumerate(iter(lambda: raw.readline(MAX_LINE_CHARS), b""), 1):
            try:
                decoder.decode(line)
            except UnicodeDecodeError as exc:
                byte = line[exc.start : exc.start + 1].hex()
                return csv_problem(
                    f"the file is not {shown} text (row {number} has the byte 0x{byte}); "
                    + _NAME_THE_ENCODING
                )
    return csv_problem(f"the file is not {shown} text; {_NAME_THE_ENCODING}")


def _next_record(reader: Iterator[list[str]], lines: _BoundedLines) -> list[str] | None:
    try:
        return next(reader)
    except StopIteration:
        return None
    except csv.Error as exc:
        # "line contains NUL", "unexpected end of data", "field larger than field limit"...
        raise csv_problem(f"row {lines.line} cannot be read as CSV: {exc}") from None
