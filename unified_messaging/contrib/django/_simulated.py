"""The test-mode messenger of a Django test run (see :mod:`.testing`): the simulator for every
provider, and an outbox that follows Django's per-test ``mail.outbox``.

Apart from :mod:`.testing` so that :mod:`._messenger` (which builds this in tests) and
:mod:`.testing` (which reads the messenger) never import each other.
"""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..._sync import SyncMessenger
    from ...providers.simulator import SimulatedSubmission
    from ...testing import Outbox, TestBed

__all__ = ["follow_test", "in_tests", "simulated_messenger"]


def in_tests() -> bool:
    """Whether Django's test environment is set up (``mail.outbox`` exists only then)."""
    from django.core import mail

    return hasattr(mail, "outbox")


_lock = threading.Lock()
_mail_outbox: object = None


def follow_test(ours: Outbox) -> None:
    """Empty ``ours`` when Django has begun a new test (a new ``mail.outbox`` list)."""
    global _mail_outbox
    from django.core import mail

    with _lock:
        theirs = getattr(mail, "outbox", None)
        if theirs is not _mail_outbox:
            if _mail_outbox is not None:
                ours.clear()
            _mail_outbox = theirs


def simulated_messenger() -> tuple[SyncMessenger, TestBed]:
    """A test-mode messenger and its workspace, for :mod:`._messenger`."""
    from ..._messenger import Messenger
    from ..._sync import SyncMessenger
    from ...providers.simulator import SimulatorSettings
    from ...testing import Outbox, create_testbed

    recorded = Outbox()

    def record(submission: SimulatedSubmission) -> None:
        follow_test(recorded)  # a send that opens a new test empties the last one's
        recorded.record(submission)

    # Reports due at once (settle() delivers them); the real clock, as the app runs on it.
    settings = SimulatorSettings(report_delay=timedelta(0))
    messenger = Messenger(simulator_settings=settings, on_simulated=record)
    sync = SyncMessenger(messenger)
    testbed = sync._run(create_testbed(messenger=messenger, outbox=recorded))
    return sync, testbed
