"""The suite's end summary counts skipped tests by the service they need (a plain
``scripts/test`` printed one line per skipped test, 170 of them), and says how to turn them on."""

from __future__ import annotations

import pytest
from _skip_summary import skip_summary


def test_skips_are_counted_by_service_with_the_variable_to_set() -> None:
    reasons = [
        "set UM_TEST_REDIS_URL (e.g. redis://127.0.0.1:6379/5)",
        "set UM_TEST_REDIS_URL for the Redis tests",
        "set UM_TEST_POSTGRES_URL to run the PostgreSQL store tests",
        "root ignores directory permissions",
    ]

    assert skip_summary(reasons) == [
        "   1 skipped  PostgreSQL: set UM_TEST_POSTGRES_URL="
        "postgresql+asyncpg://postgres@127.0.0.1:5432/test",
        "   2 skipped  Redis: set UM_TEST_REDIS_URL=redis://127.0.0.1:6379/0",
        "   1 skipped  root ignores directory permissions",
    ]


def test_a_run_prints_the_summary_not_a_line_per_skip(pytester: pytest.Pytester) -> None:
    # The suite's own hook (tests/_skip_summary.py), as a plugin of the inner run.
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.parametrize("n", range(5))
        def test_needs_redis(n):
            pytest.skip("set UM_TEST_REDIS_URL for the Redis tests")
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:xdist", "-p", "_skip_summary")

    result.stdout.fnmatch_lines(["*5 skipped  Redis: set UM_TEST_REDIS_URL=*"])
    assert "SKIPPED [" not in result.stdout.str()
