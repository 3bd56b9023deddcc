"""Signals for our own webhooks (D19), sent by the webhook view after the signature checked.

Each is sent with ``sender`` the event type's string and these keyword arguments:

- ``record``: the message's :class:`~unified_messaging.StatusRecord` (D11);
- ``event_type``: ``"message.delivered"`` …;
- ``event_id``: the ``webhook-id``, the same on every retry of one event (deduplicate on it);
- ``timestamp``: when the event happened (an aware ``datetime``);
- ``livemode``: ``False`` for test-mode messages.

``message_event`` is sent for every type too, after the type's own signal.
"""

from __future__ import annotations

from typing import Final

from django.dispatch import Signal

__all__ = [
    "BY_TYPE",
    "connection_balance_low",
    "consent_changed",
    "message_delivered",
    "message_event",
    "message_expired",
    "message_failed",
    "message_fallback",
    "message_inbound",
    "message_rejected",
    "message_sent",
    "message_unknown",
    "verification_approved",
    "verification_expired",
    "verification_failed",
]

message_sent = Signal()
message_delivered = Signal()
message_failed = Signal()
message_expired = Signal()
message_rejected = Signal()
message_unknown = Signal()
message_fallback = Signal()
#: A reply from a recipient: ``data`` is the inbound document, not a status record.
message_inbound = Signal()
#: D34: a verification ended; ``record`` is the verification (``VerificationOut``), not a message.
verification_approved = Signal()
verification_failed = Signal()
verification_expired = Signal()
#: D33: a consent changed in İYS (pulled); ``record`` is the consent (``ConsentOut``).
consent_changed = Signal()
#: A connection's provider balance went below its threshold; ``record`` is the account.
connection_balance_low = Signal()
message_event = Signal()

#: The signal of each event type of D19 (``EVENT_TYPES``; a test keeps them in step).
BY_TYPE: Final = {
    "message.sent": message_sent,
    "message.delivered": message_delivered,
    "message.failed": message_failed,
    "message.expired": message_expired,
    "message.rejected": message_rejected,
    "message.unknown": message_unknown,
    "message.fallback": message_fallback,
    "message.inbound": message_inbound,
    "verification.approved": verification_approved,
    "verification.failed": verification_failed,
    "verification.expired": verification_expired,
    "consent.changed": consent_changed,
    "connection.balance_low": connection_balance_low,
}
