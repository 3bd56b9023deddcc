"""Testing helpers for host applications: the outbox, the testbed, and the pytest plugin.

The plugin is registered through the ``pytest11`` entry point; its fixtures are
``um_testbed``, ``um_messenger``, ``um_sync_messenger``, ``um_outbox``, ``um_principal``,
``um_api_key`` and ``um_clock``.
"""

from ..providers.simulator import SimulatedSubmission
from ._outbox import Outbox
from ._testbed import DEFAULT_TEST_SENDER, TestBed, build_testbed, create_testbed

__all__ = [
    "DEFAULT_TEST_SENDER",
    "Outbox",
    "SimulatedSubmission",
    "TestBed",
    "build_testbed",
    "create_testbed",
]
