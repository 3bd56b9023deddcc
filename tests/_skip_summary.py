"""The end-of-run summary of skipped tests, counted by the service they need (conftest.py
prints it); a module of its own so its test can import it (every test folder has a
``conftest``, so importing one by that name depends on which was loaded first)."""

from __future__ import annotations

import pytest

#: What a skip's reason names, and the one line that says how to run those tests instead.
_SERVICES = {
    "UM_TEST_POSTGRES_URL": "PostgreSQL: set UM_TEST_POSTGRES_URL="
    "postgresql+asyncpg://postgres@127.0.0.1:5432/test",
    "UM_TEST_REDIS_URL": "Redis: set UM_TEST_REDIS_URL=redis://127.0.0.1:6379/0",
}


def skip_summary(reasons: list[str]) -> list[str]:
    """One line per missing service (with how to turn its tests on) and per other reason,
    each with its count, instead of a line per skipped test."""
    counts: dict[str, int] = {}
    for reason in reasons:
        line = next((how for env, how in _SERVICES.items() if env in reason), reason)
        counts[line] = counts.get(line, 0) + 1
    return [f"{count:>4} skipped  {line}" for line, count in sorted(counts.items())]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    skipped = terminalreporter.stats.get("skipped", [])
    reasons = [
        str(report.longrepr[2]).removeprefix("Skipped: ")
        for report in skipped
        if isinstance(getattr(report, "longrepr", None), tuple)
    ]
    if reasons:
        terminalreporter.section("skipped tests, by reason")
        for line in skip_summary(reasons):
            terminalreporter.line(line)
