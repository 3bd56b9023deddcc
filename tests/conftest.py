"""Shared fixtures: only what several test modules arrange the same way."""

from __future__ import annotations

import pytest

from unified_messaging.testing import TestBed, create_testbed


@pytest.fixture
async def bed() -> TestBed:
    """A test-mode workspace with all seven providers on the simulator (sender ``UMTEST``)."""
    return await create_testbed()


# ---------------------------------------------------------------- the summary of skips
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
