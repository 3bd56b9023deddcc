"""The records the library keeps: workspaces, keys, connections, templates, messages.

Plain frozen dataclasses, so a store can never be changed behind its back by a caller
holding a record: changes go through ``dataclasses.replace`` and a store write. They carry
no secrets in clear: API keys are hashes, credentials are vault ciphertexts, and both are
left out of ``repr``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from ._policies import (
    DEFAULT_BREAKER_POLICY,
    DEFAULT_RECIPIENT_LIMIT,
    BreakerPolicy,
    ContentRules,
    RecipientLimit,
)
from ._schedule import QuietHours
from ._types import (
    CHANNEL_OF,
    AttemptStatus,
    Channel,
    ConsentPolicy,
    DeliveryStatus,
    Encoding,
    IysMode,
    MessageStatus,
    ProviderCode,
    SendPhase,
)

__all__ = [
    "DEFAULT_DLR_TIMEOUT",
    "DEFAULT_QUEUE_TTL",
    "DEFAULT_SUBMIT_TIMEOUT",
    "ApiKey",
    "Attempt",
    "Connection",
    "DeliveryReport",
    "ErrorInfo",
    "MessageRecord",
    "Template",
    "Workspace",
]

#: How long a message waits for its delivery report before fallback or ``unknown`` (D10).
DEFAULT_DLR_TIMEOUT = timedelta(hours=24)
#: How long a ``queued`` message is retried when every provider is unavailable (D7).
DEFAULT_QUEUE_TTL = timedelta(minutes=10)
#: How long a send may take before its write-ahead rows are settled as interrupted: longer
#: than a whole fallback chain of provider calls normally takes, as short as a worker lease.
#: Here rather than in ``_delivery`` so that ``serve --help`` can show it without loading
#: the providers.
DEFAULT_SUBMIT_TIMEOUT = timedelta(minutes=2)


@dataclass(frozen=True, slots=True)
class ErrorInfo:
    """``{code, message}``: why a message or an attempt failed."""

    code: str
    message: str


@dataclass(frozen=True, slots=True)
class Workspace:
    id: str
    name: str
    created_at: datetime
    #: Logical messages per calendar month (UTC); ``None`` is unlimited (D17).
    monthly_quota: int | None = None
    #: D7 opt-in: when every provider is unavailable, answer ``queued`` and retry.
    retry_unavailable: bool = False
    #: D7: how long after the send a queued message is retried before it ends ``failed``.
    queue_ttl: timedelta = DEFAULT_QUEUE_TTL
    #: D28: at most this many messages to one recipient per window; ``None`` turns it off.
    recipient_limit: RecipientLimit | None = DEFAULT_RECIPIENT_LIMIT
    #: Sends inside this daily window wait ``queued`` until it ends; ``None``: off.
    quiet_hours: QuietHours | None = None
    #: D33: ``off`` (the providers decide) or ``local`` (our consent records decide).
    consent_policy: ConsentPolicy = "off"
    #: D33: the brand's trade name, MERSİS number and opt-out phrase the content hints look
    #: for, and whether the hints refuse a commercial SMS.
    content_rules: ContentRules = field(default_factory=ContentRules)
    #: Personal data (KVKK): show no live message's text anywhere (status records, lists,
    #: webhooks, the dashboard); off by default. Test-mode text is always shown.
    mask_live_text: bool = False


@dataclass(frozen=True, slots=True)
class ApiKey:
    """A stored API key: only the SHA-256 hash of the secret and a display prefix (D1)."""

    id: str
    workspace_id: str
    livemode: bool
    key_hash: str = field(repr=False)
    display_prefix: str
    created_at: datetime
    name: str | None = None
    expires_at: datetime | None = None
    revoked_at: datetime | None = None
    #: Per-key override of the request rate (requests per second) and burst (D16).
    rate_limit: float | None = None
    rate_burst: int | None = None

    def is_usable(self, now: datetime) -> bool:
        if self.revoked_at is not None and self.revoked_at <= now:
            return False
        return self.expires_at is None or now < self.expires_at


@dataclass(frozen=True, slots=True)
class Connection:
    """One provider account of a workspace. One connection per provider code."""

    id: str
    workspace_id: str
    provider: ProviderCode
    created_at: datetime
    #: Vault ciphertext of the provider credentials (``v1.<kid>.<nonce>.<ct>``).
    credentials: str = field(repr=False)
    default_sender: str | None = None
    #: Approved message headers; empty means the provider decides (D3).
    approved_senders: tuple[str, ...] = ()
    iys_mode: IysMode = "informational"
    is_default: bool = False
    dlr_timeout: timedelta = DEFAULT_DLR_TIMEOUT
    #: D24: may SMS text use the Turkish single-shift table instead of UCS-2?
    turkish_shift: bool = True
    #: Override of the provider's base URL (a sandbox, a proxy, a local fake).
    base_url: str | None = None
    #: Secret path token of this connection's delivery-report URL (D20).
    dlr_token: str = field(default="", repr=False)
    #: D26: when this connection's circuit breaker opens and how long it stays open.
    breaker: BreakerPolicy = DEFAULT_BREAKER_POLICY
    #: D27: at most this many messages, and provider calls, a second; ``None``: no limit.
    max_rate: float | None = None
    max_calls: float | None = None

    @property
    def channel(self) -> Channel:
        return CHANNEL_OF[self.provider]


@dataclass(frozen=True, slots=True)
class Template:
    workspace_id: str
    key: str
    body: str
    created_at: datetime
    updated_at: datetime
    description: str | None = None
    #: ``bizchat`` only: the provider-side template this maps to, and its language.
    provider_template: str | None = None
    provider_language: str | None = None


@dataclass(frozen=True, slots=True)
class DeliveryReport:
    status: DeliveryStatus
    received_at: datetime
    provider_status: str | None = None
    error: ErrorInfo | None = None


@dataclass(frozen=True, slots=True)
class Attempt:
    provider: ProviderCode
    status: AttemptStatus
    at: datetime
    provider_message_id: str | None = None
    error: ErrorInfo | None = None


@dataclass(frozen=True, slots=True)
class MessageRecord:
    """Everything known about one logical message (one ``job_id``), across its attempts."""

    job_id: str
    workspace_id: str
    livemode: bool
    status: MessageStatus
    to: str
    channel: Channel
    provider: ProviderCode
    created_at: datetime
    updated_at: datetime
    #: The rendered text that was (or will be) handed to providers; kept for re-dispatch.
    text: str = field(repr=False)
    sender: str | None = None
    template_key: str | None = None
    sent_at: datetime | None = None
    final_at: datetime | None = None
    error: ErrorInfo | None = None
    attempts: tuple[Attempt, ...] = ()
    dlr: DeliveryReport | None = None
    segments: int | None = None
    encoding: Encoding | None = None
    #: Providers still to try, in order, if the current one fails later (D6, D10).
    fallback_left: tuple[ProviderCode, ...] = ()
    #: Whether the request asked for fallback: then the send response lists ``attempts``.
    fallback_requested: bool = False
    #: Template variables for provider-side templates (``bizchat``), in placeholder order.
    template_params: tuple[str, ...] = ()
    #: Bumped by every lifecycle change, so concurrent report handlers never overwrite each
    #: other (``Store.replace_message`` compares it).
    version: int = 0
    #: The sender the request asked for (``None``: it named none). ``sender`` is the header
    #: the current provider got; a re-dispatch resolves D3 again from this one, so each
    #: fallback connection sends with its own default, never the previous one's.
    requested_sender: str | None = None
    #: ``bizchat`` provider-side template (name and language) the message is sent as, with
    #: ``template_params``; stored so every re-send sends what the submit sent (never the
    #: rendered text as free text, never a template edited since).
    template_name: str | None = None
    template_language: str | None = None
    #: Where the send itself is (see :data:`~._types.SendPhase`): the one truth of "written
    #: ahead", "refused" and "held back by our send rate" that the worker, a replay and the
    #: flood guard read.
    phase: SendPhase = "settled"
    #: When the message is (or was) to be handed over, for a send that waits for its
    #: ``send_at`` or the workspace's quiet hours (phase ``scheduled`` until then); ``None``
    #: for a send handed over at once.
    send_at: datetime | None = None
    #: The request asked to be sent even inside the workspace's quiet hours (a one-time
    #: code): the hand-over gate (D35) holds it at no hop.
    ignore_quiet_hours: bool = False
    #: When the gate last held it for quiet hours until (D35): its queue TTL counts from
    #: then, as from ``send_at`` for a scheduled send. ``None``: never held.
    held_until: datetime | None = None
    #: Its İYS class (D33), fixed at acceptance: the request's ``category`` and
    #: ``recipient_type``, else its primary connection's. ``None``: stored before D33 (each
    #: hop then sends with its connection's mode).
    iys_mode: IysMode | None = None
    #: D34: a code message's text with its code masked (``******``): what live mode shows in
    #: the status record and webhooks. ``None``: not a code message (shown as sent).
    masked_text: str | None = field(default=None, repr=False)
    #: The API key the message was sent with (``None``: sent without one, by the dashboard,
    #: the command line or the library). A key's name never changes, so the name kept here
    #: is the key's name; it spares every status read a key lookup.
    api_key_id: str | None = None
    api_key_name: str | None = None
    #: D36: seconds the message waits for ``delivered`` on its channel before the next
    #: channel of its chain sends it (``None``: no escalation across channels).
    escalate_after: float | None = None
