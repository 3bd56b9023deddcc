"""Tests of a Django project: every send goes to the simulator, and :data:`outbox` shows it.

Under Django's test runner and pytest-django (both call ``setup_test_environment``, which
makes ``django.core.mail.outbox``), :func:`~unified_messaging.contrib.django.get_messenger`
is a test-mode messenger on an in-memory store: one workspace with all seven providers
simulated, the magic numbers of DESIGN §6 included, reports due at once.

``outbox`` is emptied for each ``TestCase`` test, as ``mail.outbox`` is (Django gives every
test a new ``mail.outbox`` list; ours follows it). pytest-django empties ``mail.outbox`` in
place, so there ask for the ``um_django_outbox`` fixture, which starts each test empty.
:func:`settle` runs the background work that is due (simulated delivery reports) and sends
the delivery signals of :mod:`.signals` for the events it made, as the webhook view does in
production.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ._messenger import _current
from ._simulated import follow_test, in_tests

if TYPE_CHECKING:
    from ...providers.simulator import SimulatedSubmission
    from ...testing import Outbox

__all__ = ["in_tests", "outbox", "settle"]


class _TestOutbox:
    """The simulated sends of the running test: :class:`~unified_messaging.testing.Outbox`'s
    list and filters (``recipients()``, ``texts()``, …), emptied when a new test begins."""

    def current(self) -> Outbox:
        testbed = _current().testbed
        if testbed is None:
            raise RuntimeError("the test outbox exists only under Django's test environment")
        follow_test(testbed.outbox)
        return testbed.outbox

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
    none is left, then send the signals of the events it delivered (``message_sent``,
    ``message_delivered`` …) on this thread, where the receivers see the test's database;
    how many items ran."""
    from .views import signal_event

    made = _current()
    if made.testbed is None or made.webhooks is None:
        raise RuntimeError("settle() is for Django's test environment")
    ran = made.messenger._run(made.testbed.settle())
    for body, headers in made.webhooks.take():
        signal_event(body, headers, made.webhooks.secret)
    return ran
