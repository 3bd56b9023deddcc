"""What the shop does with a delivery: here, a line in the file UM_DJANGO_SIGNAL_LOG names
(the integration test reads it to see the signal arrive)."""

import os

from django.dispatch import receiver

from unified_messaging.contrib.django.signals import message_event


@receiver(message_event)
def note_event(sender: str, record: object, event_id: str, **details: object) -> None:
    log = os.environ.get("UM_DJANGO_SIGNAL_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as out:
            out.write(f"{sender} {record.job_id}\n")  # type: ignore[attr-defined]
