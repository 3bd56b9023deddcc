"""The uvicorn releases ``serve`` runs on: the range its guarded protocols were tested with.

The guarded protocols (``_serve_http``, ``_serve_httptools``) subclass uvicorn's h11 and
httptools protocols and build on what uvicorn offers no public API for: the constructor's
arguments, ``data_received``, ``on_response_complete``, ``send_400_response``, the parser
callbacks, and the attributes ``conn``, ``parser``, ``cycle``, ``pipeline``, ``transport``,
``connections``, ``timeout_keep_alive`` and ``access_log``; and ``serve`` itself extends
``uvicorn.Server.startup`` and relies on how uvicorn re-raises SIGINT/SIGTERM after its
graceful stop. A uvicorn release outside the
range may have changed any of them, and the failure would show only under the slow clients
and floods the guards exist for (a deadline never armed, a smuggling head let through). So
``serve`` refuses to start on such a release, with one line naming it and the range, rather
than fall back to uvicorn's own protocols, which would drop the limits the operator set.

pyproject.toml pins the same range (``tests/cli/test_serve_uvicorn.py`` keeps the two
equal), so an install brings a tested release; this check catches the rest (``--no-deps``,
a forced upgrade). CI installs the newest release in the range and runs every serve test.
To widen the range: run those tests on the new release, then move both bounds.
"""

from __future__ import annotations

import re
from importlib.metadata import PackageNotFoundError, version
from typing import Final

from .._errors import UnsupportedDependency

__all__ = ["TESTED_UVICORN", "check_uvicorn"]

#: ``(lowest, first untested)`` as (major, minor): uvicorn ``>=0.29,<0.55``.
TESTED_UVICORN: Final = ((0, 29), (0, 55))


def check_uvicorn(installed: str | None = None) -> None:
    """Raise :class:`UnsupportedDependency` unless ``installed`` (by default the installed
    uvicorn's version) is in :data:`TESTED_UVICORN`."""
    if installed is None:
        try:
            installed = version("uvicorn")
        except PackageNotFoundError:
            return  # not installed: serve's own check names the missing extra
    (low, high) = TESTED_UVICORN
    found = re.match(r"(\d+)\.(\d+)", installed)
    if found is not None and low <= (int(found[1]), int(found[2])) < high:
        return
    raise UnsupportedDependency(
        f"serve was tested with uvicorn >={_dotted(low)},<{_dotted(high)}, and uvicorn "
        f"{installed} is installed: its guarded HTTP protocols build on uvicorn's internals. "
        f"Install a tested release: pip install 'uvicorn>={_dotted(low)},<{_dotted(high)}'",
        package="uvicorn",
    )


def _dotted(release: tuple[int, int]) -> str:
    return ".".join(map(str, release))
