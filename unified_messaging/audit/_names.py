"""The audit log's vocabulary (D32): the action names an audit row may carry.

Plain data, importing nothing of the package: the recording decorator (``_audit_actions``),
the records (``_audit``) and the command line's ``--help`` all read it without pulling each
other (or pydantic) in.
"""

from __future__ import annotations

from typing import Final, Literal
from typing import get_args as _get_args

__all__ = ["AUDIT_ACTIONS", "MAX_FIELD_LENGTH", "AuditAction"]

#: What an audit row says was done. Closed: a new admin change needs a new name here (and a
#: line in docs/operations.md), so a reader of the log knows every value it can meet.
AuditAction = Literal[
    "workspace.create",
    "workspace.quota",
    "workspace.retry_unavailable",
    "workspace.queue_ttl",
    "workspace.recipient_limit",
    "workspace.quiet_hours",
    "workspace.consent_policy",
    "workspace.text_masking",
    "workspace.verify_limits",
    "workspace.content_rules",
    "workspace.verify_guard",
    "api_key.create",
    "api_key.revoke",
    "connection.add",
    "connection.remove",
    "connection.default",
    "connection.breaker_policy",
    "connection.send_rate",
    "connection.senders",
    "connection.balance_threshold",
    "template.set",
    "template.delete",
    "allowlist.add",
    "allowlist.remove",
    "suppression.add",
    "suppression.remove",
    "suppression.import",
    "consent.record",
    "consent.iys_change",
    "iys.connect",
    "iys.disconnect",
    "webhook_endpoint.create",
    "webhook_endpoint.remove",
    "webhook_endpoint.rotate_secret",
    "webhook_endpoint.enable",
    "webhook_endpoint.disable",
    "webhook_endpoint.events",
    "vault.rotate",
    "user.create",
    "user.disable",
    "verification.fraud_refused",
    "message.send",
]
AUDIT_ACTIONS: Final[tuple[str, ...]] = _get_args(AuditAction)

#: Where a row's text fields stop: ids and keys are far shorter; the bound keeps a row
#: small whatever a caller passes.
MAX_FIELD_LENGTH: Final = 255
