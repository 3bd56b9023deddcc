"""pytest plugin (``pytest11`` entry point): fixtures for host applications' tests.

Loaded in every project that installs unified-messaging, so it only offers fixtures, all
prefixed ``um_``, none autouse, and imports nothing heavy until a fixture is used.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .._clock import ManualClock
    from .._messenger import Messenger, Principal
    from .._sync import SyncMessenger
    from ._outbox import Outbox
    from ._testbed import TestBed


@pytest.fixture
def um_testbed() -> TestBed:
    """A test-mode workspace with all seven providers connected to the simulator."""
    from ._testbed import build_testbed

    return build_testbed()


@pytest.fixture
def um_messenger(um_testbed: TestBed) -> Messenger:
    """The async ``Messenger`` of :func:`um_testbed` (use it from async tests)."""
    return um_testbed.messenger


@pytest.fixture
def um_sync_messenger(um_testbed: TestBed) -> Iterator[SyncMessenger]:
    """A ``SyncMessenger`` over the same testbed, for synchronous tests and apps."""
    from .._sync import SyncMessenger

    with SyncMessenger(um_testbed.messenger) as messenger:
        yield messenger


@pytest.fixture
def um_outbox(um_testbed: TestBed) -> Outbox:
    """Every simulated submission of the testbed, in order."""
    return um_testbed.outbox


@pytest.fixture
def um_principal(um_testbed: TestBed) -> Principal:
    """The testbed workspace in test mode: pass it to ``send``/``send_bulk``/``get_message``."""
    return um_testbed.principal


@pytest.fixture
def um_api_key(um_testbed: TestBed) -> str:
    """A ``um_test_…`` key of the testbed workspace (for the REST and MCP edges)."""
    return um_testbed.api_key


@pytest.fixture
def um_clock(um_testbed: TestBed) -> ManualClock:
    """The testbed's manual clock: ``um_clock.advance(seconds)`` moves simulated time."""
    from .._clock import ManualClock

    clock = um_testbed.clock
    assert isinstance(clock, ManualClock)  # build_testbed() always makes one
    return clock


@pytest.fixture
def um_django_outbox() -> Any:
    """With pytest-django: what the test sent through
    :func:`unified_messaging.contrib.django.get_messenger`, empty when the test starts
    (``unified_messaging.contrib.django.testing.outbox``; the ``django`` extra)."""
    from ..contrib.django.testing import outbox

    outbox.current().clear()
    return outbox
