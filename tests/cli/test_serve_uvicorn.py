"""``serve`` runs only on the uvicorn releases its guarded protocols were tested with.

The protocols build on uvicorn's internals (``cli/_serve_uvicorn.py`` lists them), so a
release outside the range pinned in pyproject.toml stops ``serve`` before it opens the store
or binds a port, with one line naming the release and the range (exit 78). CI installs the
newest release in the range, so the installed one passing here is that release passing.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path

import pytest
from _cli_support import Cli

from unified_messaging import UnsupportedDependency
from unified_messaging.cli._serve_limits import ServeLimits
from unified_messaging.cli._serve_protocols import guarded_protocol
from unified_messaging.cli._serve_uvicorn import TESTED_UVICORN, check_uvicorn

PYPROJECT = Path(__file__).parents[2] / "pyproject.toml"


def test_the_range_checked_is_the_range_pyproject_pins() -> None:
    server = tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"]["server"]
    [pin] = [spec for spec in server if spec.startswith("uvicorn")]
    (low, high) = TESTED_UVICORN

    assert pin == f"uvicorn>={low[0]}.{low[1]},<{high[0]}.{high[1]}"


def test_the_installed_uvicorn_is_in_the_tested_range() -> None:
    check_uvicorn()  # CI: the newest release pip picks within the pin


@pytest.mark.parametrize("release", ["0.29.0", "0.29.1", "0.40.0", "0.54.0", "0.54.9"])
def test_a_release_in_the_range_is_accepted(release: str) -> None:
    check_uvicorn(release)


@pytest.mark.parametrize(
    "release", ["0.28.1", "0.55.0", "0.55.0rc1", "0.60.2", "1.0.0", "1.54.0", "unknown"]
)
def test_a_release_outside_the_range_is_refused_by_name(release: str) -> None:
    with pytest.raises(UnsupportedDependency) as refused:
        check_uvicorn(release)

    assert refused.value.package == "uvicorn"
    assert refused.value.setting == "uvicorn"
    assert f"uvicorn {release} is installed" in refused.value.message
    assert "uvicorn >=0.29,<0.55" in refused.value.message


def test_the_guarded_protocols_are_not_built_on_an_untested_uvicorn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(_site_with("0.99.0", tmp_path))

    for http in ("h11", "httptools"):
        with pytest.raises(UnsupportedDependency, match=r"uvicorn 0\.99\.0 is installed"):
            guarded_protocol(ServeLimits(max_connections=10), http)  # type: ignore[arg-type]


def _site_with(release: str, tmp_path: Path) -> str:
    """A folder where importlib.metadata finds uvicorn ``release``, while ``import
    uvicorn`` still finds the real package: another release, as pip records it."""
    site = tmp_path / "site"
    info = site / f"uvicorn-{release}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: uvicorn\nVersion: {release}\n")
    return str(site)


def _installed_as(release: str, tmp_path: Path) -> str:
    """A PYTHONPATH on which uvicorn ``release`` is installed (:func:`_site_with`)."""
    paths = [_site_with(release, tmp_path), os.environ.get("PYTHONPATH", "")]
    return os.pathsep.join(path for path in paths if path)


def test_serve_on_an_untested_uvicorn_stops_before_it_opens_anything(
    cli: Cli, tmp_path: Path, database_url: str
) -> None:
    result = cli("serve", "--port", "0", PYTHONPATH=_installed_as("0.55.0", tmp_path))

    assert result.returncode == 78, result.stderr
    assert "Traceback" not in result.stderr
    [line] = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert line.startswith("error: configuration: serve was tested with uvicorn >=0.29,<0.55")
    assert "uvicorn 0.55.0 is installed" in line
    assert re.search(r"pip install 'uvicorn>=0\.29,<0\.55'", line)
    assert not Path(database_url.removeprefix("sqlite+aiosqlite:///")).exists()


def test_serve_workers_on_an_untested_uvicorn_starts_no_child(cli: Cli, tmp_path: Path) -> None:
    result = cli(
        "serve", "--port", "0", "--workers", "2", PYTHONPATH=_installed_as("0.28.0", tmp_path)
    )

    assert result.returncode == 78, result.stderr
    assert result.stderr.count("uvicorn 0.28.0 is installed") == 1
