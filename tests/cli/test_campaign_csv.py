"""The campaign's CSV reader: it streams, numbers rows as a spreadsheet does, and keeps its
memory flat whatever the file's size or shape."""

from __future__ import annotations

import os
import threading
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from unified_messaging import RequestInvalid
from unified_messaging.campaigns._csv import MAX_LINE_CHARS, CsvRow, CsvSource


def _source(tmp_path: Path, content: bytes, **options: object) -> CsvSource:
    path = tmp_path / "rows.csv"
    path.write_bytes(content)
    return CsvSource(path, **options)  # type: ignore[arg-type]


def _peak_bytes(work: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        work()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_rows_are_numbered_as_a_spreadsheet_numbers_them(tmp_path: Path) -> None:
    source = _source(
        tmp_path,
        b"\xef\xbb\xbfphone , name\r\n"  # a BOM, a padded header name
        b"05321000001,Ali\r\n"
        b"\r\n"  # a blank line is no row, but keeps its number
        b'05321000002,"Ay\xc5\x9fe\r\nsecond line"\r\n'  # a quoted cell over two lines
        b"05321000003, Can ,surplus\r\n",
    )

    rows = list(source.rows())

    assert rows == [
        CsvRow(2, {"phone": "05321000001", "name": "Ali"}),
        CsvRow(4, {"phone": "05321000002", "name": "Ayşe\r\nsecond line"}),
        CsvRow(6, {"phone": "05321000003", "name": "Can"}, extra=1),
    ]
    assert source.scan() == 3


@pytest.mark.parametrize("end", [b"\n", b"\r\n", b"\r"])
def test_every_line_end_reads_the_same(tmp_path: Path, end: bytes) -> None:
    source = _source(tmp_path, end.join([b"phone,name", b"05321000001,A", b"05321000002,B", b""]))

    assert [row.cells["name"] for row in source.rows()] == ["A", "B"]


def test_rows_come_while_the_file_is_still_being_written(tmp_path: Path) -> None:
    # A FIFO: the writer holds the rest back until the reader has had the first row, so
    # a reader that wanted the whole file first would wait forever (here: time out).
    fifo = tmp_path / "rows.fifo"
    os.mkfifo(fifo)
    first_row_read = threading.Event()
    written = threading.Event()

    def write() -> None:
        with fifo.open("wb") as pipe:
            pipe.write(b"phone,name\n05321000001,A\n")
            pipe.flush()
            first_row_read.wait(timeout=10)
            pipe.write(b"05321000002,B\n")
        written.set()

    writer = threading.Thread(target=write)
    writer.start()
    try:
        rows: Iterator[CsvRow] = CsvSource(fifo).rows()
        assert next(rows).cells["name"] == "A"
        assert not written.is_set()  # the first row came before the file was whole
        first_row_read.set()
        assert [row.cells["name"] for row in rows] == ["B"]
    finally:
        first_row_read.set()
        writer.join()


def test_scanning_a_large_file_keeps_memory_flat(tmp_path: Path) -> None:
    path = tmp_path / "large.csv"
    with path.open("w", encoding="utf-8", newline="") as file:
        file.write("phone,name,order,city\r\n")
        for i in range(100_000):
            file.write(f"0532{i:07d},Müşteri {i},ORD-{i:08d},İstanbul\r\n")
    size = path.stat().st_size
    source = CsvSource(path)

    peak = _peak_bytes(source.scan)

    assert size > 4_000_000
    assert peak < 300_000, f"scanning {size} bytes peaked at {peak} bytes"


def test_an_endless_line_is_refused_after_the_limit_not_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "one-line.csv"
    with path.open("wb") as file:
        file.write(b"phone,name\n05321000001,")
        chunk = b"x" * (1 << 20)
        for _ in range(32):  # 32 MiB without a line end
            file.write(chunk)
    source = CsvSource(path)

    def scan() -> None:
        with pytest.raises(RequestInvalid, match=f"row 2 is longer than {MAX_LINE_CHARS}"):
            source.scan()

    assert _peak_bytes(scan) < 6 * MAX_LINE_CHARS


def test_a_cell_past_the_csv_modules_field_limit_is_a_clear_error(tmp_path: Path) -> None:
    big = b"x" * 200_000  # the csv module stops at 131072 characters a field
    source = _source(tmp_path, b"phone,name\n05321000001," + big + b"\n")

    with pytest.raises(RequestInvalid, match="row 2 cannot be read as CSV: field larger"):
        source.scan()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"to_column": "gsm"}, "no column 'gsm' for the recipient"),
        ({"required": ("name", "city", "order")}, "the text uses city, order, which the file"),
        ({"delimiter": ";;"}, "the delimiter must be one character"),
    ],
)
def test_header_problems_name_what_is_missing(
    tmp_path: Path, options: dict[str, object], message: str
) -> None:
    with pytest.raises(RequestInvalid, match=message) as raised:
        _source(tmp_path, b"phone,name\n05321000001,A\n", **options).scan()
    assert raised.value.details[0].field == "csv"


def test_a_header_with_an_unnamed_column_is_refused(tmp_path: Path) -> None:
    # Excel's trailing separator: a column nobody named, so no variable could use it.
    with pytest.raises(RequestInvalid, match="column 3 of the header row has no name"):
        _source(tmp_path, b"phone,name,\n05321000001,A,\n").scan()
