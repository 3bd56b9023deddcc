"""Tests of a Django project: every send goes to the simulator, and :data:`outbox` shows it.

Under Django's test runner and pytest-django (both call ``setup_test_environment``, which
makes ``django.core.mail.outbox``), :func:`~unified_messaging.contrib.django.get_messenger`
is a test-mode messenger on an in-memory store: one workspace with all seven providers
simulated, the magic numbers of DESIGN §6 included, reports due at once.

``outbox`` is emptied for each ``TestCase`` test, as ``mail.outbox`` is (Django gives every
test a new ``mail.outbox`` list; ours follows it). pytest-django empties ``mail.outbox`` in
place, so there ask for the ``um_django_outbox`` fixture, which starts each test empty.
:func:`settle` runs the background work that is due (simulated delivery reports).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..._sync import SyncMessenger
    from ...providers.simulator import SimulatedSubmission
    from ...testing import Outbox, TestBed

__all__ = ["in_tests", "outbox", "settle"]


def in_tests() -> bool:
    """Whether Django's test environment is set up (``mail.outbox`` exists only then)."""
    from django.core import mail

    return hasattr(mail, "outbox")


class _TestOutbox:
    """The simulated sends of the running test: :class:`~unified_messaging.testing.Outbox`'s
    list and filters (``recipients()``, ``texts()``, …), emptied when a new test begins."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._mail_outbox: object = None

    def current(self) -> Outbox:
        from ._messenger import _current

        testbed = _current().testbed
        if testbed is None:
            raise RuntimeError("the test outbox exists only under Django's test environment")
        self.follow_test(testbed.outbox)
        return testbed.outbox

    def follow_test(self, ours: Outbox) -> None:
        """Empty ``ours`` when Django has begun a new test (a new ``mail.outbox`` list)."""
        from django.core import mail

        with self._lock:
            theirs = getattr(mail, "outbox", None)
            if theirs is not self._mail_outbox:
                if self._mail_outbox is not None:
                    ours.clear()
                self._mail_outbox = theirs

    def __len__(self) -> int:
        return len(self.current())

    def __getitem__(self, index: int) -> SimulatedSubmission:
        return self.current()[index]

    def __iter__(self) -> Iterator[SimulatedSubmission]:
        return iter(list(self.current()))

    def __bool__(self) -> bool:
        return len(self) > 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.current(), name)

    def __repr__(self) -> str:
        return f"<unified-messaging test outbox: {list(self.current())!r}>"


#: What the running test sent, one entry per provider try (see the module's docstring).
outbox = _TestOutbox()


def settle() -> int:
    """Run the background work that is due (simulated reports, fallbacks, webhooks) until
    none is left; how many items ran."""
    from ._messenger import _current

    made = _current()
    if made.testbed is None:
        raise RuntimeError("settle() is for Django's test environment")
    return made.messenger._run(made.testbed.settle())


def simulated_messenger() -> tuple[SyncMessenger, TestBed]:
    """A test-mode messenger and its workspace, for :mod:`._messenger`."""
    from ..._messenger import Messenger
    from ..._sync import SyncMessenger
    from ...providers.simulator import SimulatorSettings
    from ...testing import Outbox, create_testbed

    recorded = Outbox()

    def record(submission: SimulatedSubmission) -> None:
        outbox.follow_test(recorded)  # a send that opens a new test empties the last one's
        recorded.record(submission)

    # Reports due at once (settle() delivers them); the real clock, as the app runs on it.
    settings = SimulatorSettings(report_delay=timedelta(0))
    messenger = Messenger(simulator_settings=settings, on_simulated=record)
    sync = SyncMessenger(messenger)
    testbed = sync._run(create_testbed(messenger=messenger, outbox=recorded))
    return sync, testbed
