"""unified-messaging in a Django project (the ``django`` extra), after django-anymail's shape.

- ``INSTALLED_APPS += ["unified_messaging.contrib.django"]`` and a ``UNIFIED_MESSAGING`` dict
  in the settings (read in one place: :mod:`.settings`);
- :func:`get_messenger`: the process's :class:`~unified_messaging.SyncMessenger`, made on first
  use (after a pre-fork server forked) and closed at exit; :func:`send`,
  :func:`send_on_commit` (after the transaction commits) and :func:`get_principal` for the
  configured workspace; :func:`start_verification` and :func:`check_verification` for
  one-time codes;
- management commands ``um_worker``, ``um_migrate`` and ``um_send``;
- ``path("messaging/", include("unified_messaging.contrib.django.urls"))``: receives our own
  signed webhooks and sends the signals of :mod:`.signals`;
- in tests (Django's runner and pytest-django alike) every send goes to the simulator, and
  :data:`.testing.outbox` holds what was sent, like ``django.core.mail.outbox``.
"""

from __future__ import annotations

from ._messenger import get_messenger, get_principal, send, send_on_commit
from ._verify import check_verification, start_verification

__all__ = [
    "check_verification",
    "get_messenger",
    "get_principal",
    "send",
    "send_on_commit",
    "start_verification",
]
