"""The test-mode messenger of a Django test run (see :mod:`.testing`): the simulator for every
provider, an outbox that follows Django's per-test ``mail.outbox``, and a webhook endpoint
whose events :func:`~.testing.settle` turns into the delivery signals, as the webhook view
does in production.

Apart from :mod:`.testing` so that :mod:`._messenger` (which builds this in tests) and
:mod:`.testing` (which reads the messenger) never import each other.
"""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    import httpx

    from ..._sync import SyncMessenger
    from ...providers.simulator import SimulatedSubmission
    from ...testing import Outbox, TestBed

__all__ = ["TestWebhooks", "follow_test", "in_tests", "simulated_messenger"]

#: Where the test workspace's endpoint points; no request leaves: the client is a mock.
_ENDPOINT_URL: Final = "https://testserver/messaging/webhooks/"


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


class TestWebhooks:
    """The test workspace's webhook endpoint: the requests the worker posted to it (on the
    loop's thread), kept until :meth:`take` hands them to the test's thread."""

    __test__ = False  # not a pytest test class, despite the name

    def __init__(self) -> None:
        self.secret = ""  # the endpoint's, once made
        self._lock = threading.Lock()
        self._posted: list[tuple[bytes, dict[str, str]]] = []

    def receive(self, request: httpx.Request) -> httpx.Response:
        """The mock transport's handler: keep the signed request, answer 204 as the view does."""
        import httpx

        with self._lock:
            self._posted.append((request.content, dict(request.headers)))
        return httpx.Response(204)

    def take(self) -> list[tuple[bytes, dict[str, str]]]:
        """The requests posted since the last take: each its raw body and headers."""
        with self._lock:
            posted, self._posted = self._posted, []
        return posted


def simulated_messenger() -> tuple[SyncMessenger, TestBed, TestWebhooks]:
    """A test-mode messenger, its workspace and the workspace's webhooks (:mod:`._messenger`)."""
    import httpx

    from ..._messenger import Messenger
    from ..._sync import SyncMessenger
    from ...providers.simulator import SimulatorSettings
    from ...testing import Outbox, create_testbed

    recorded = Outbox()
    webhooks = TestWebhooks()

    def record(submission: SimulatedSubmission) -> None:
        follow_test(recorded)  # a send that opens a new test empties the last one's
        recorded.record(submission)

    # Reports due at once (settle() delivers them); the real clock, as the app runs on it.
    settings = SimulatorSettings(report_delay=timedelta(0))
    client = httpx.AsyncClient(transport=httpx.MockTransport(webhooks.receive))
    messenger = Messenger(simulator_settings=settings, on_simulated=record, webhook_client=client)
    sync = SyncMessenger(messenger)
    testbed = sync._run(create_testbed(messenger=messenger, outbox=recorded))
    endpoint = sync.webhooks.create(testbed.workspace.id, _ENDPOINT_URL)
    webhooks.secret = endpoint.secret
    return sync, testbed, webhooks
