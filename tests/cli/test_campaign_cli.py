"""``campaign send`` and ``campaign status``, run as the real command line on a SQLite file.

The workspace is set up in this process (test mode: the simulator sends); the commands run
as subprocesses, and what they stored is read back through the store.
"""

from __future__ import annotations

import csv
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from _campaign_bed import TEMPLATE, Bed, make_bed, numbers, write_csv
from _cli_support import TIMEOUT, Cli


@pytest.fixture
def bed(database_url: str, master_keys: str) -> Bed:
    return make_bed(database_url, master_keys)


def _campaign(bed: Bed, path: Path, *args: str) -> list[str]:
    return [
        "campaign",
        "send",
        "--workspace",
        bed.workspace_id,
        "--csv",
        str(path),
        "--template",
        TEMPLATE,
        "--test",
        *args,
    ]


def _results(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as file:
        return list(csv.DictReader(file))


# An Excel "CSV UTF-8" export: a byte-order mark, Windows line ends, a quoted cell with a
# comma, and the usual bad rows.
EXCEL = (
    "\ufeffphone,name,order\r\n"
    "0532 100 00 01,Ayşe,A-1\r\n"
    '05321000002,"Yılmaz, Mehmet",A-2\r\n'
    "12345,Veli,A-3\r\n"
    "05321000004,,A-4\r\n"
    "05321000005,Ece,A-5\r\n"
)


def test_a_campaign_sends_the_rows_and_reports_each_one(cli: Cli, bed: Bed, tmp_path: Path) -> None:
    source = write_csv(tmp_path / "spring.csv", EXCEL)
    results = tmp_path / "out.csv"

    run = cli(*_campaign(bed, source, "--results", str(results))).ok()

    rows = _results(results)
    assert [(r["row"], r["status"], r["error"]) for r in rows] == [
        ("2", "sent", ""),
        ("3", "sent", ""),
        ("4", "failed", "INVALID_RECIPIENT"),
        ("5", "failed", "TEMPLATE_VARIABLE_MISSING"),
        ("6", "sent", ""),
    ]
    stored = {m.job_id: m for m in bed.messages()}
    assert {r["job_id"] for r in rows} == set(stored)
    texts = {m.to: m.text for m in stored.values() if m.status == "sent"}
    assert texts["+905321000001"] == "Merhaba Ayşe, siparişiniz A-1 yolda."
    assert texts["+905321000002"] == "Merhaba Yılmaz, Mehmet, siparişiniz A-2 yolda."
    # The bad rows are named on stderr as they happen; the summary goes to stdout.
    assert "row 4: INVALID_RECIPIENT: " in run.stderr
    assert "row 5: TEMPLATE_VARIABLE_MISSING: Missing template variable(s): name" in run.stderr
    assert run.stdout.splitlines()[0] == "Campaign 'spring.csv' (test mode): 5 of 5 rows"
    assert "\x1b[" not in run.stderr  # stderr is a pipe here: no progress bar


def test_running_the_same_campaign_again_sends_nothing_twice(
    cli: Cli, bed: Bed, tmp_path: Path
) -> None:
    source = write_csv(tmp_path / "spring.csv", EXCEL)
    first, second = tmp_path / "first.csv", tmp_path / "second.csv"
    cli(*_campaign(bed, source, "--results", str(first), "--chunk", "2")).ok()
    jobs = {m.job_id for m in bed.messages()}

    again = cli(*_campaign(bed, source, "--results", str(second), "--chunk", "2", "--json"))

    assert len(jobs) == 5  # every row has a job: the bad ones are stored failed
    assert {m.job_id for m in bed.messages()} == jobs
    assert _results(second) == _results(first)  # the same jobs, replayed
    summary = again.json()
    assert (summary["done"], summary["replayed"]) == (5, 5)


def test_a_killed_campaign_resumes_and_no_row_is_sent_twice(
    cli: Cli, bed: Bed, tmp_path: Path
) -> None:
    rows = 1500
    lines = ["phone,name,order", *(f"{to},N{i},O{i}" for i, to in enumerate(numbers(rows)))]
    source = write_csv(tmp_path / "big.csv", "\n".join(lines) + "\n")
    results = tmp_path / "out.csv"
    argv = _campaign(bed, source, "--results", str(results), "--chunk", "20")
    proc = subprocess.Popen(  # noqa: S603 - our own interpreter and fixed arguments
        [sys.executable, "-m", "unified_messaging", *argv],
        cwd=tmp_path,
        env=cli.environ(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for_lines(results, 200, proc)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(TIMEOUT)
    sent_before = len(bed.messages())
    assert 0 < sent_before < rows

    resumed = cli(*argv, "--json").json()

    counts = Counter(m.to for m in bed.messages())
    assert len(counts) == rows
    assert set(counts.values()) == {1}
    assert resumed["done"] == rows
    assert resumed["replayed"] >= sent_before - 20  # all but (at most) the chunk in flight
    assert len(_results(results)) == rows


def _wait_for_lines(path: Path, count: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the campaign ended before it could be stopped"
        if path.exists() and path.read_bytes().count(b"\n") >= count:
            return
        time.sleep(0.02)
    raise AssertionError(f"{path} never reached {count} lines")


def test_campaign_status_reports_from_the_store(cli: Cli, bed: Bed, tmp_path: Path) -> None:
    source = write_csv(tmp_path / "spring.csv", EXCEL + ",Nobody,A-6\r\n")
    cli(*_campaign(bed, source, "--campaign", "Spring 2027")).ok()

    status_argv = ["campaign", "status", "--workspace", bed.workspace_id, "--test"]
    as_json, as_text, live, unknown = cli.many(
        [
            [*status_argv, "--campaign", "Spring 2027", "--json"],
            [*status_argv, "--campaign", "Spring 2027"],
            ["campaign", "status", "--workspace", bed.workspace_id, "--campaign", "Spring 2027"],
            [*status_argv, "--campaign", "spring.csv"],
        ]
    )

    status = as_json.json()
    assert (status["campaign"], status["file"], status["rows"], status["rows_done"]) == (
        "Spring 2027",
        "spring.csv",
        6,
        6,
    )
    assert status["by_status"] == {"sent": 3, "failed": 2}
    assert (status["messages"], status["not_sent"]) == (5, 1)
    assert status["errors"] == {"INVALID_RECIPIENT": 1, "TEMPLATE_VARIABLE_MISSING": 1}
    assert status["finished_at"] is not None
    text = as_text.ok().stdout
    assert "Rows done  6" in text
    assert [line.split() for line in text.splitlines() if line.startswith("sent")] == [
        ["sent", "3"]
    ]
    for missing in (live, unknown):  # another mode, another name: another campaign
        assert missing.returncode == 1
        assert missing.stderr.startswith("error: NOT_FOUND: No campaign")


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "Invalid CSV file: the file is empty: its first row must name the columns"),
        (
            b"phone,name,order\r\n",
            "Invalid CSV file: the file has a header and no rows: nothing to send",
        ),
        (b"\xef\xbb\xbfphone,name,order\n\n\n", "the file has a header and no rows"),
        (
            "phone,name,order\n05321000001,Ayşe,A-1\n".encode("latin-1", errors="replace").replace(
                b"?", b"\xfe"
            ),
            "Invalid CSV file: the file is not UTF-8 text (row 2 has the byte 0xfe)",
        ),
        ("phone,name,order\n".encode("utf-16"), "Invalid CSV file: the file is UTF-16 text"),
        (
            b"tel,name,order\n05321000001,A,1\n",
            "Invalid CSV file: no column 'phone' for the recipient",
        ),
        (
            b"phone,order\n05321000001,1\n",
            "Invalid CSV file: the text uses name, which the file has no col",
        ),
        (
            b"phone,name,name\n05321000001,A,B\n",
            "Invalid CSV file: the header names the column 'name' twice",
        ),
        (b'phone,name,order\n"05321000001,A,1\n', "Invalid CSV file: row 2 cannot be read as CSV"),
        (
            b"phone,name,order\n" + b"x" * (1 << 20) + b"\n",
            "Invalid CSV file: row 2 is longer than",
        ),
    ],
)
def test_a_file_that_cannot_be_used_is_refused_before_anything_is_sent(
    cli: Cli, bed: Bed, tmp_path: Path, content: bytes, message: str
) -> None:
    source = tmp_path / "bad.csv"
    source.write_bytes(content)

    result = cli(*_campaign(bed, source))

    assert result.returncode == 1
    assert result.stderr.startswith("error: VALIDATION_ERROR: ")
    assert message in result.stderr
    assert len(result.stderr.splitlines()) == 1  # one line, no traceback
    assert bed.messages() == []


def test_other_bad_arguments_are_clear_errors(cli: Cli, bed: Bed, tmp_path: Path) -> None:
    source = write_csv(tmp_path / "spring.csv", EXCEL)
    missing, directory, to_itself, chunk, rate, no_template = cli.many(
        [
            _campaign(bed, tmp_path / "nope.csv"),
            _campaign(bed, tmp_path),
            _campaign(bed, source, "--results", str(source)),
            _campaign(bed, source, "--chunk", "500"),
            _campaign(bed, source, "--rate", "0"),
            [*_campaign(bed, source)[:-3], "--template", "nope", "--test"],
        ]
    )

    assert (missing.returncode, directory.returncode) == (1, 1)
    assert f"Invalid CSV file: no such file: {tmp_path / 'nope.csv'}" in missing.stderr
    assert "is a directory, not a CSV file" in directory.stderr
    assert (to_itself.returncode, chunk.returncode, rate.returncode) == (2, 2, 2)
    assert "--results: must not be the input file" in to_itself.stderr
    assert "'500' is not 1-200" in chunk.stderr
    assert "is not a positive number" in rate.stderr
    assert no_template.returncode == 1
    assert no_template.stderr.startswith("error: TEMPLATE_NOT_FOUND: ")
    for result in (missing, directory, to_itself, chunk, rate, no_template):
        assert "Traceback" not in result.output
    assert bed.messages() == []
    assert source.read_bytes() == EXCEL.encode()


def test_a_results_file_that_cannot_be_written_is_an_error(
    cli: Cli, bed: Bed, tmp_path: Path
) -> None:
    source = write_csv(tmp_path / "spring.csv", EXCEL)

    result = cli(*_campaign(bed, source, "--results", str(tmp_path / "no" / "such" / "dir.csv")))

    assert result.returncode == 1
    assert result.stderr.startswith("error: cannot write --results ")
    assert bed.messages() == []


def test_semicolon_files_read_with_delimiter(cli: Cli, bed: Bed, tmp_path: Path) -> None:
    source = write_csv(tmp_path / "tr.csv", "phone;name;order\n05321000001;Ayşe;A-1\n")

    cli(*_campaign(bed, source, "--delimiter", ";")).ok()

    [message] = bed.messages()
    assert message.text == "Merhaba Ayşe, siparişiniz A-1 yolda."


def test_a_windows_1254_export_reads_with_encoding(cli: Cli, bed: Bed, tmp_path: Path) -> None:
    # Excel's plain "CSV" in Turkey: Windows-1254 bytes (ş 0xFE, ı 0xFD, ğ 0xF0), semicolons.
    source = tmp_path / "tr.csv"
    source.write_bytes("phone;name;order\r\n05321000001;Ayşe Yılmaz;Ağ-1\r\n".encode("cp1254"))

    refused = cli(*_campaign(bed, source, "--delimiter", ";"))
    assert refused.returncode == 1
    assert "the file is not UTF-8 text (row 2 has the byte 0xfe)" in refused.stderr
    assert "--encoding cp1254" in refused.stderr  # the way out is named
    assert bed.messages() == []

    cli(*_campaign(bed, source, "--delimiter", ";", "--encoding", "cp1254")).ok()
    [message] = bed.messages()
    assert message.text == "Merhaba Ayşe Yılmaz, siparişiniz Ağ-1 yolda."


def test_a_file_not_valid_in_the_named_encoding_or_an_unknown_one_is_refused(
    cli: Cli, bed: Bed, tmp_path: Path
) -> None:
    utf8 = write_csv(tmp_path / "utf8.csv", "phone,name,order\n05321000001,Ayşe,A-1\n")
    undefined = tmp_path / "undefined.csv"  # 0x81 has no character in Windows-1254
    undefined.write_bytes(b"phone,name,order\n05321000001,A\x81,A-1\n")

    bad_byte, unknown, with_bom = cli.many(
        [
            _campaign(bed, undefined, "--encoding", "cp1254"),
            _campaign(bed, utf8, "--encoding", "klingon"),
            _campaign(bed, utf8, "--encoding", "UTF8"),  # any spelling of UTF-8
        ]
    )

    assert bad_byte.returncode == 1
    assert "the file is not cp1254 text (row 2 has the byte 0x81)" in bad_byte.stderr
    assert "--encoding" in bad_byte.stderr and "Traceback" not in bad_byte.stderr
    assert unknown.returncode == 1
    assert "'klingon' is not a text encoding; --encoding takes a name" in unknown.stderr
    assert with_bom.returncode == 0, with_bom.stderr
    assert [m.text for m in bed.messages()] == ["Merhaba Ayşe, siparişiniz A-1 yolda."]


def test_help_lists_send_and_campaign(cli: Cli) -> None:
    result = cli("--help").ok()
    assert "send" in result.stdout
    assert "campaign" in result.stdout
