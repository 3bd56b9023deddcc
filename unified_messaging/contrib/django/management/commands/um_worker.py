"""``manage.py um_worker``: the background worker (delivery reports, DLR time-outs, fallback,
webhooks) on the messenger the settings describe; stops cleanly on SIGTERM or Ctrl-C."""

from __future__ import annotations

import signal
import threading
from typing import Any

from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Run the unified-messaging background worker until SIGTERM or Ctrl-C."

    def handle(self, *args: Any, **options: Any) -> None:
        from ... import get_messenger

        stop = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
        messenger = get_messenger()
        self.stdout.write("unified-messaging worker started")
        self.stdout.flush()
        # The item in hand is finished first; what is left is claimed by the next worker.
        messenger.run_worker(stop)
        self.stdout.write("unified-messaging worker stopped")
