"""The campaign's progress bar, in a real terminal: drawn on stderr when stderr is a TTY
(a pseudo-terminal from ``pty``), never when it is a pipe or ``--no-progress`` is given."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest
from _campaign_bed import TEMPLATE, Bed, make_bed, numbers, write_csv
from _cli_support import TIMEOUT, Cli

ROWS = 300


@pytest.fixture
def bed(database_url: str, master_keys: str) -> Bed:
    return make_bed(database_url, master_keys)


@pytest.fixture
def source(tmp_path: Path) -> Path:
    lines = ["phone,name,order", *(f"{to},N{i},O{i}" for i, to in enumerate(numbers(ROWS)))]
    return write_csv(tmp_path / "list.csv", "\n".join(lines) + "\n")


def _argv(bed: Bed, source: Path, *args: str) -> list[str]:
    return [
        "campaign",
        "send",
        "--workspace",
        bed.workspace_id,
        "--csv",
        str(source),
        "--template",
        TEMPLATE,
        "--chunk",
        "10",
        "--test",
        *args,
    ]


def _run_in_terminal(cli: Cli, argv: list[str], **env: str) -> tuple[int, str, str]:
    """Run the CLI with stderr on a pseudo-terminal (120 columns); stdout stays a pipe.
    Returns the exit status, stdout, and everything the terminal received."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    proc = subprocess.Popen(  # noqa: S603 - our own interpreter and fixed arguments
        [sys.executable, "-m", "unified_messaging", *argv],
        cwd=cli.cwd,
        env=cli.environ({"TERM": "xterm-256color", **env}),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=slave,
    )
    os.close(slave)
    screen = bytearray()
    try:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every writer of the terminal has closed it
                break
            if not data:
                break
            screen += data
        out, _ = proc.communicate(timeout=TIMEOUT)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, out.decode("utf-8"), screen.decode("utf-8", errors="replace")


def test_the_bar_is_drawn_when_stderr_is_a_terminal(cli: Cli, bed: Bed, source: Path) -> None:
    status, stdout, screen = _run_in_terminal(cli, _argv(bed, source))

    assert status == 0, screen
    assert "━" in screen  # rich's bar
    assert f"{ROWS}/{ROWS}" in screen  # rows done of all
    assert "rows/s" in screen  # the rate
    assert "left" in screen  # and the time left
    assert "list.csv (test)" in screen
    # The report is not part of the bar: it goes to stdout, whole and without escapes.
    assert stdout.splitlines()[0] == f"Campaign 'list.csv' (test mode): {ROWS} of {ROWS} rows"
    assert "\x1b" not in stdout
    assert len(bed.messages()) == ROWS


def test_no_bar_on_a_pipe_or_with_no_progress(cli: Cli, bed: Bed, source: Path) -> None:
    piped = cli(*_argv(bed, source, "--campaign", "piped")).ok()
    status, _, screen = _run_in_terminal(cli, _argv(bed, source, "--no-progress"))

    assert piped.stderr == ""
    assert status == 0
    assert screen == ""


def test_without_rich_a_plain_counter_is_drawn(
    cli: Cli, bed: Bed, source: Path, tmp_path: Path
) -> None:
    # A ``rich`` that cannot be imported, ahead of the real one on the path.
    stub = tmp_path / "no_rich" / "rich"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text("raise ImportError('rich is not installed')\n")

    status, _, screen = _run_in_terminal(cli, _argv(bed, source), PYTHONPATH=str(stub.parent))

    assert status == 0, screen
    assert "━" not in screen
    assert f"{ROWS:,}/{ROWS:,} rows" in screen
    assert "rows/s" in screen
    assert "\r" in screen  # redrawn in place
