"""One real ``serve --demo`` per module for the client's happy paths (starting one is the
slow part; each test uses recipients of its own, so the flood guard never meets them)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from _served import Served, free_port, serving

from unified_messaging.vault._core import generate_key_spec


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    cwd: Path = tmp_path_factory.mktemp("served")
    with serving(cwd, free_port(), generate_key_spec("k1"), "--demo") as served:
        yield served
