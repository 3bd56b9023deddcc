"""A setting whose optional extra is not installed: one line naming the extra, exit 78.

The interpreter of the command gets a ``redis`` package that fails to import, as on a machine
installed without the ``redis`` extra (it once printed a 46-line traceback and exited 1).
"""

from __future__ import annotations

from pathlib import Path

from _cli_support import Cli


def _without(package: str, tmp_path: Path) -> str:
    blocked = tmp_path / "blocked" / package
    blocked.mkdir(parents=True)
    (blocked / "__init__.py").write_text(f'raise ImportError("No module named {package!r}")\n')
    return str(blocked.parent)


def test_redis_url_without_the_redis_extra_is_a_configuration_error(
    cli: Cli, tmp_path: Path
) -> None:
    result = cli(
        "workspaces", "list", PYTHONPATH=_without("redis", tmp_path),
        UM_REDIS_URL="redis://127.0.0.1:6379/0",
    )  # fmt: skip

    assert result.returncode == 78, result.stderr
    assert "Traceback" not in result.stderr
    [line] = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert line.startswith("error: configuration: ")
    assert "needs the 'redis' extra" in line
    assert "pip install '.[redis]'" in line


def test_serve_http_httptools_without_httptools_is_a_configuration_error(
    cli: Cli, tmp_path: Path
) -> None:
    result = cli("serve", "--http", "httptools", PYTHONPATH=_without("httptools", tmp_path))

    assert result.returncode == 78, result.stderr
    assert "Traceback" not in result.stderr
    [line] = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert "serve --http httptools needs the 'server' extra" in line
