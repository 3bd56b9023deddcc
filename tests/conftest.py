"""Shared fixtures: only what several test modules arrange the same way."""

from __future__ import annotations

import pytest

# The hook lives with its helper, so its own test can load it as a plugin.
from _skip_summary import pytest_terminal_summary  # noqa: F401

from unified_messaging.testing import TestBed, create_testbed

#: A Django project's own tests, run by tests/django/ under its own settings and pytest.ini.
collect_ignore = ["django_project"]


@pytest.fixture
async def bed() -> TestBed:
    """A test-mode workspace with all seven providers on the simulator (sender ``UMTEST``)."""
    return await create_testbed()
