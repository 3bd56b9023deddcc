"""The one exception hierarchy. Every error the library raises on purpose is here.

Each class carries the HTTP status and the stable error ``code`` of DESIGN.md D14, so the
edges (REST, MCP, CLI) render any of them the same way without a lookup table of their own.
Some also subclass the matching builtin, so callers can catch either (aiosmtplib's habit).

    MessagingError                      (500 INTERNAL_ERROR)
    ├── RequestInvalid                  400 VALIDATION_ERROR  (+ details: field path, message)
    ├── Unauthorized                    401 UNAUTHORIZED
    ├── IpNotAllowed                    403 IP_NOT_ALLOWED
    ├── NotFound                        404
    │   ├── ProviderNotConnected            PROVIDER_NOT_CONNECTED
    │   ├── MessageNotFound                 MESSAGE_NOT_FOUND
    │   ├── TemplateNotFound                TEMPLATE_NOT_FOUND
    │   ├── VerificationNotFound            VERIFICATION_NOT_FOUND (D34; also another's)
    │   └── ResourceNotFound                NOT_FOUND (admin: workspace, key, connection …)
    ├── Conflict                        409
    │   ├── IdempotencyConflict             IDEMPOTENCY_CONFLICT
    │   ├── IdempotencyInProgress           IDEMPOTENCY_IN_PROGRESS
    │   ├── MessageNotCancelable            MESSAGE_NOT_CANCELABLE (a provider has it already)
    │   ├── VerificationAlreadyApproved     VERIFICATION_ALREADY_APPROVED (D34: approved once)
    │   └── AlreadyExists                   ALREADY_EXISTS (admin)
    ├── PayloadTooLarge                 413 PAYLOAD_TOO_LARGE
    ├── Unprocessable                   422
    │   ├── InvalidRecipient                INVALID_RECIPIENT
    │   ├── ChatUnreachable                 CHAT_UNREACHABLE
    │   ├── SenderNotApproved               SENDER_NOT_APPROVED
    │   ├── SenderRequired                  SENDER_REQUIRED
    │   ├── FallbackNotAllowed              FALLBACK_NOT_ALLOWED
    │   ├── TemplateVariableMissing         TEMPLATE_VARIABLE_MISSING
    │   ├── BodyTooLong                     BODY_TOO_LONG
    │   ├── SendAtOutOfRange                SEND_AT_OUT_OF_RANGE (past, or over 30 days ahead)
    │   ├── RecipientSuppressed             RECIPIENT_SUPPRESSED (on the suppression list)
    │   ├── ChannelNotSupported             CHANNEL_NOT_SUPPORTED (D34: no code by it)
    │   ├── EscalationInvalid               ESCALATION_INVALID (D36)
    │   └── InvalidCredentials              INVALID_CREDENTIALS (admin)
    ├── TooManyRequests                 429
    │   ├── RateLimited                     RATE_LIMITED   (+ retry_after)
    │   ├── QuotaExceeded                   QUOTA_EXCEEDED
    │   ├── RecipientRateLimited            RECIPIENT_RATE_LIMITED (D28; + retry_after)
    │   └── VerificationRateLimited         VERIFICATION_RATE_LIMITED (D34; + retry_after)
    │       └── VerificationFraudSuspected      VERIFICATION_FRAUD_SUSPECTED (D34: the pumping
    │                                           guard; + retry_after)
    ├── ProviderUnavailable             502 PROVIDER_UNAVAILABLE  (ConnectionError; + job_id)
    ├── ProviderOutcomeUnknown          502 PROVIDER_OUTCOME_UNKNOWN (a record's code, not raised
    │                                       by a send: the provider may have taken it)
    ├── SubmitInterrupted               SUBMIT_INTERRUPTED: never raised; the error of a message
    │                                   whose hand-over outcome was never recorded (201/200)
    ├── StorageUnavailable              503 STORAGE_UNAVAILABLE   (ConnectionError)
    ├── ConfigurationError              500 INTERNAL_ERROR (the operator's settings; CLI exit 78)
    │   ├── MissingExtra                    an extra a setting needs is missing (also ImportError)
    │   ├── UnsupportedDependency           an installed release we were not tested with (+ package)
    │   └── MasterKeyError                  UM_MASTER_KEYS malformed or missing (also a VaultError)
    │       └── UnknownKeyId                    sealed under a key id not configured (+ key_id;
    │                                           also a DecryptionFailed)
    └── VaultError                      500 INTERNAL_ERROR
        └── DecryptionFailed                (wrong key, tampered or mis-bound ciphertext)

Messages never contain secrets: no API key, credential or webhook secret is ever formatted
into one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar, Final, Protocol

__all__ = [
    "AlreadyExists",
    "BodyTooLong",
    "ChannelNotSupported",
    "ChatUnreachable",
    "ConfigurationError",
    "Conflict",
    "DecryptionFailed",
    "ErrorDetail",
    "EscalationInvalid",
    "FallbackNotAllowed",
    "IdempotencyConflict",
    "IdempotencyInProgress",
    "InvalidCredentials",
    "InvalidRecipient",
    "IpNotAllowed",
    "MasterKeyError",
    "MessageNotCancelable",
    "MessageNotFound",
    "MessagingError",
    "MissingExtra",
    "NotFound",
    "PayloadTooLarge",
    "ProviderNotConnected",
    "ProviderOutcomeUnknown",
    "ProviderUnavailable",
    "QuotaExceeded",
    "RateLimited",
    "RecipientRateLimited",
    "RecipientSuppressed",
    "RequestInvalid",
    "ResourceNotFound",
    "SendAtOutOfRange",
    "SenderNotApproved",
    "SenderRequired",
    "StorageUnavailable",
    "SubmitInterrupted",
    "TemplateNotFound",
    "TemplateVariableMissing",
    "TooManyRequests",
    "Unauthorized",
    "UnknownKeyId",
    "Unprocessable",
    "UnsupportedDependency",
    "VaultError",
    "VerificationAlreadyApproved",
    "VerificationFraudSuspected",
    "VerificationNotFound",
    "VerificationRateLimited",
]


@dataclass(frozen=True, slots=True)
class ErrorDetail:
    """One field-level problem of a 400: the dotted field path and what is wrong with it."""

    field: str
    message: str


class MessagingError(Exception):
    """Base of every error the library raises on purpose."""

    http_status: ClassVar[int] = 500
    code: ClassVar[str] = "INTERNAL_ERROR"
    default_message: ClassVar[str] = "Internal error."
    #: The server's ``X-Request-ID`` when the error came over HTTP (:class:`Client`).
    request_id: str | None = None

    def __init__(self, message: str | None = None) -> None:
        self.message = message or self.default_message
        super().__init__(self.message)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, message={self.message!r})"


class RequestInvalid(MessagingError):
    """The request does not match the schema (D13: ``details`` lists each field)."""

    http_status = 400
    code = "VALIDATION_ERROR"
    default_message = "The request is invalid."

    def __init__(self, message: str | None = None, details: Sequence[ErrorDetail] = ()) -> None:
        super().__init__(message)
        self.details: tuple[ErrorDetail, ...] = tuple(details)

    @classmethod
    def for_field(cls, field: str, message: str) -> RequestInvalid:
        """One field's problem: ``details`` keeps the field's name as the request spells it;
        the message says it in English (:func:`field_sentence`)."""
        return cls(field_sentence(field, message), [ErrorDetail(field, message)])


#: How a few fields are called in a sentence; any other reads as its name, ``_`` as spaces.
_FIELD_NOUNS: Final[Mapping[str, str]] = {
    "cidr": "allowlist entry",
    "csv": "CSV file",
    "url": "URL",
    "base_url": "base URL",
    "email": "e-mail address",
    "expires_at": "expiry time",
    "since": "since time",
    "dlr_timeout": "DLR time-out",
    "queue_ttl": "queue TTL",
    "iys_mode": "IYS mode",
}
# A problem that begins so continues the field's name as a sentence ("The URL must be ...").
_PREDICATE = re.compile(r"(must|is|are|has|needs|cannot|should|points|uses|names)\b")


def field_sentence(field: str, problem: str) -> str:
    """A field's ``problem`` said as English, not as ``field: problem``: "The allowlist entry
    must be an IPv4 ...", or "Invalid quiet hours: the window must not be empty" when the
    problem is not a predicate of its own. A header is called one ("The Idempotency-Key
    header must ..."); a dotted path (``items.3.to``) keeps its dots, so it can be found."""
    if problem == "unknown field":  # pydantic's, for a field the request may not have
        return f"Unknown field {field}"
    noun = _FIELD_NOUNS.get(field)
    if noun is None:
        is_header = "-" in field and field[:1].isupper()
        noun = (
            f"{field} header" if is_header else field if "." in field else field.replace("_", " ")
        )
    if _PREDICATE.match(problem):
        return f"The {noun} {problem}"
    return f"Invalid {noun}: {problem}"


class Unauthorized(MessagingError):
    # One code and one message for every cause (D1): no hint which part of a key was wrong.
    http_status = 401
    code = "UNAUTHORIZED"
    default_message = "Missing or invalid API key."


class IpNotAllowed(MessagingError):
    http_status = 403
    code = "IP_NOT_ALLOWED"
    default_message = "The caller's IP address is not on the workspace allowlist."


class NotFound(MessagingError):
    http_status = 404
    code = "NOT_FOUND"
    default_message = "Not found."


class ProviderNotConnected(NotFound):
    code = "PROVIDER_NOT_CONNECTED"
    default_message = "The provider is not connected in this workspace."


class MessageNotFound(NotFound):
    code = "MESSAGE_NOT_FOUND"
    default_message = "No message with this job id."


class TemplateNotFound(NotFound):
    code = "TEMPLATE_NOT_FOUND"
    default_message = "No template with this key."


class VerificationNotFound(NotFound):
    code = "VERIFICATION_NOT_FOUND"
    default_message = "No such verification."


class ResourceNotFound(NotFound):
    """An admin object (workspace, API key, connection) that does not exist."""


class Conflict(MessagingError):
    http_status = 409
    code = "CONFLICT"
    default_message = "Conflict."


class IdempotencyConflict(Conflict):
    code = "IDEMPOTENCY_CONFLICT"
    default_message = "This Idempotency-Key was already used with a different request."


class IdempotencyInProgress(Conflict):
    code = "IDEMPOTENCY_IN_PROGRESS"
    default_message = "A request with this Idempotency-Key is still being processed."


class MessageNotCancelable(Conflict):
    """A cancel came too late: the message was handed to a provider already (or is being
    handed over right now), or it has ended. Only a message still waiting for its
    ``send_at``, quiet hours, a send slot or a retry can be canceled."""

    code = "MESSAGE_NOT_CANCELABLE"
    default_message = "The message was already handed to a provider; it cannot be canceled."


class VerificationAlreadyApproved(Conflict):
    """D34: a code approves its verification once; a second check (a replay) is refused."""

    code = "VERIFICATION_ALREADY_APPROVED"
    default_message = "This verification was already approved; start a new one."


class AlreadyExists(Conflict):
    code = "ALREADY_EXISTS"
    default_message = "The object already exists."


class PayloadTooLarge(MessagingError):
    http_status = 413
    code = "PAYLOAD_TOO_LARGE"
    default_message = "The request body is too large."

    @classmethod
    def over(cls, max_bytes: int) -> PayloadTooLarge:
        """A body past a cap of ``max_bytes``: the one wording for REST and MCP."""
        return cls(f"The request body is larger than {max_bytes} bytes.")


class Unprocessable(MessagingError):
    http_status = 422
    code = "UNPROCESSABLE"
    default_message = "The request cannot be processed."


class InvalidRecipient(Unprocessable):
    code = "INVALID_RECIPIENT"
    default_message = "The recipient is not valid for this channel."


class ChatUnreachable(Unprocessable):
    """The bot cannot reach the chat. The refused job is kept as ``failed`` (and announced to
    webhooks): ``job_id`` names it, as for ``PROVIDER_UNAVAILABLE``."""

    code = "CHAT_UNREACHABLE"
    default_message = "The chat cannot be reached by the bot."

    def __init__(self, message: str | None = None, job_id: str | None = None) -> None:
        super().__init__(message)
        self.job_id = job_id


class SenderNotApproved(Unprocessable):
    code = "SENDER_NOT_APPROVED"
    default_message = "The sender is not approved for this connection."


class SenderRequired(Unprocessable):
    code = "SENDER_REQUIRED"
    default_message = "A sender is required: the connection has no default sender."


class FallbackNotAllowed(Unprocessable):
    code = "FALLBACK_NOT_ALLOWED"
    default_message = "Fallback works only from SMS to SMS providers."


class TemplateVariableMissing(Unprocessable):
    code = "TEMPLATE_VARIABLE_MISSING"
    default_message = "A template variable is missing."


class BodyTooLong(Unprocessable):
    """The text is longer than allowed: 1-1600 characters (D9), or longer than the provider
    takes (its part limit). In the latter case the refused job is kept as ``failed``:
    ``job_id`` names it, as for ``CHAT_UNREACHABLE``."""

    code = "BODY_TOO_LONG"
    default_message = "The message text must be 1-1600 characters."

    def __init__(self, message: str | None = None, job_id: str | None = None) -> None:
        super().__init__(message)
        self.job_id = job_id


class SendAtOutOfRange(Unprocessable):
    """A well-formed ``send_at`` the service cannot honour: in the past, or more than 30
    days ahead (a malformed one, such as a time without an offset, is a 400)."""

    code = "SEND_AT_OUT_OF_RANGE"
    default_message = "send_at must be from now up to 30 days ahead."


class RecipientSuppressed(Unprocessable):
    """The recipient is on the workspace's suppression list for this channel (they replied
    STOP, blocked the bot, or were added by hand): nothing was stored or sent."""

    code = "RECIPIENT_SUPPRESSED"
    default_message = "The recipient is on the workspace's suppression list."


class ChannelNotSupported(Unprocessable):
    code = "CHANNEL_NOT_SUPPORTED"
    default_message = "Verification codes cannot go by this channel."


class EscalationInvalid(Unprocessable):
    """D36: an escalation order that cannot be followed: an unknown or repeated channel, a
    channel with no connection, a recipient one of its channels cannot reach, or an
    ``escalate_after`` out of range (5-3600 seconds)."""

    code = "ESCALATION_INVALID"
    default_message = "The escalation across channels cannot be followed."


class InvalidCredentials(Unprocessable):
    """Provider credentials that do not match the provider's schema (names what is missing)."""

    code = "INVALID_CREDENTIALS"
    default_message = "The provider credentials are incomplete or invalid."


class TooManyRequests(MessagingError):
    http_status = 429
    code = "TOO_MANY_REQUESTS"
    default_message = "Too many requests."


class RateLimited(TooManyRequests):
    code = "RATE_LIMITED"
    default_message = "Rate limit exceeded for this API key."

    def __init__(self, message: str | None = None, retry_after: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class QuotaExceeded(TooManyRequests):
    code = "QUOTA_EXCEEDED"
    default_message = "The workspace's monthly message quota is used up."


class RecipientRateLimited(TooManyRequests):
    """D28: the recipient has had the workspace's limit of messages in its window (the
    per-recipient flood guard). Nothing was stored or sent for it.

    ``retry_after``: seconds until the window lets one more message through. ``refusals``
    (from the store) name each recipient over its limit and how many more it may get now,
    so a bulk refuses only the items past the limit.
    """

    code = "RECIPIENT_RATE_LIMITED"
    default_message = "This recipient has had too many messages; try again later."

    def __init__(
        self,
        message: str | None = None,
        retry_after: float = 1.0,
        refusals: Sequence[RecipientOverLimit] = (),
    ) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.refusals: tuple[RecipientOverLimit, ...] = tuple(refusals)


class VerificationRateLimited(TooManyRequests):
    """D34: a re-send inside the cooldown, past the re-send limit, or past the recipient's
    hourly limit of verifications. Nothing was sent. ``retry_after``: seconds until a
    request could pass (``None``: not within this verification; start a new one later)."""

    code = "VERIFICATION_RATE_LIMITED"
    default_message = "Too many verification codes for this recipient; try again later."

    def __init__(self, message: str | None = None, retry_after: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class VerificationFraudSuspected(VerificationRateLimited):
    """D34's SMS-pumping guard: too many starts to numbers of one range (``reason``
    ``prefix``) or for one client address (``address``) in a short time (``None``: not
    known, as in an answer read by the client). Nothing was sent and no provider was paid.
    A :class:`VerificationRateLimited`, so a caller that handles that handles this too."""

    code = "VERIFICATION_FRAUD_SUSPECTED"
    default_message = "Too many verifications in a short time from this range or address."

    def __init__(
        self, message: str | None = None, retry_after: float = 1.0, reason: str | None = None
    ) -> None:
        super().__init__(message, retry_after)
        self.reason = reason


class RecipientOverLimit(Protocol):
    """One recipient over its limit, as :class:`RecipientRateLimited` carries it
    (``_access.flood_guard.RecipientRefusal``). A protocol, so the errors, a core record,
    import no feature module, not even for a type."""

    @property
    def to(self) -> str: ...
    @property
    def free(self) -> int: ...
    @property
    def retry_after(self) -> float: ...
    @property
    def message(self) -> str: ...
    def error(self) -> RecipientRateLimited: ...


class ProviderUnavailable(MessagingError, ConnectionError):
    """No provider could take the message (D7). The job is kept as ``failed``: see ``job_id``."""

    http_status = 502
    code = "PROVIDER_UNAVAILABLE"
    default_message = "No provider could be reached."

    def __init__(self, message: str | None = None, job_id: str | None = None) -> None:
        super().__init__(message)
        self.job_id = job_id


class ProviderOutcomeUnknown(MessagingError):
    """The provider may or may not have taken the message: it answered 2xx in a
    form we could not read, or gave no answer after the whole request was sent.

    A code carried by a message record and its attempt (the message ends ``unknown``), not
    an exception a send raises: the send answers 201, the quota unit is kept (D17), and no
    fallback provider is tried, since that could deliver the SMS twice. A later delivery
    report that names the attempt settles it.
    """

    http_status = 502
    code = "PROVIDER_OUTCOME_UNKNOWN"
    default_message = "The provider may have taken the message; its answer could not be read."


class SubmitInterrupted(MessagingError):
    """Not raised: the ``error`` a message carries (status ``unknown``, in a replayed send
    answer, a status record, ``campaign status``) when its hand-over to a provider was cut
    off before the outcome was stored (the process died mid-call, the store was down): a
    provider may have it, so it is not sent again. A message that never reached a provider
    is ``queued`` instead, and the worker sends it."""

    http_status = 500
    code = "SUBMIT_INTERRUPTED"
    default_message = (
        "The outcome of handing the message to the provider was never recorded (the process "
        "stopped, or the store was down); it was not sent again, so that it cannot arrive twice."
    )


class StorageUnavailable(MessagingError, ConnectionError):
    http_status = 503
    code = "STORAGE_UNAVAILABLE"
    default_message = "The message store is unavailable."


class VaultError(MessagingError):
    default_message = "Credential vault error."


class DecryptionFailed(VaultError):
    default_message = "Stored credentials could not be decrypted."


class ConfigurationError(MessagingError):
    """The operator's configuration is wrong or incomplete: not a bug, and nothing the
    caller of an API can fix. ``setting`` names what to change (an environment variable).

    The REST edge still answers 500 ``INTERNAL_ERROR`` (D14: the caller learns nothing of
    the server's set-up) and logs the message; the CLI prints it on one line and exits 78
    (``EX_CONFIG``). Messages name settings and key ids, never a value or key material.
    """

    default_message = "The server is not configured correctly."

    def __init__(self, message: str | None = None, *, setting: str) -> None:
        super().__init__(message)
        self.setting = setting


class MissingExtra(ConfigurationError, ImportError):
    """A setting needs an optional extra that is not installed (``UM_REDIS_URL`` without
    redis, a database URL without the ``sql`` extra). Also an :class:`ImportError`, so code
    that guards an optional import catches it as before; the CLI prints one line and exits 78.
    The one place the install hint is worded."""

    default_message = "An optional extra is not installed."

    def __init__(self, purpose: str, *, extra: str, setting: str) -> None:
        super().__init__(
            f"{purpose} needs the '{extra}' extra, which is not installed: "
            f"pip install '.[{extra}]' in a clone of unified-messaging "
            f"(or its wheel with [{extra}])",
            setting=setting,
        )
        self.extra = extra


class UnsupportedDependency(ConfigurationError):
    """An installed package is a release this version of unified-messaging was not tested
    with, where it builds on that package's internals (uvicorn's protocols under ``serve``),
    or it lacks what the store relies on (SQLAlchemy's compiled SQL). Raised when the
    server or store starts, before it serves anything; ``package`` names the package and
    the message the installed release and the tested range."""

    default_message = "An installed dependency is a release that was not tested."

    def __init__(self, message: str, *, package: str) -> None:
        super().__init__(message, setting=package)
        self.package = package


class MasterKeyError(ConfigurationError, VaultError):
    """``UM_MASTER_KEYS`` (or a key file) is malformed, or missing where a durable store
    needs it. Raised when the vault is built, so a bad value stops a process at start-up."""

    default_message = "The master keys (UM_MASTER_KEYS) are not configured correctly."

    def __init__(self, message: str | None = None, *, setting: str = "UM_MASTER_KEYS") -> None:
        super().__init__(message, setting=setting)


class UnknownKeyId(MasterKeyError, DecryptionFailed):
    """Data was sealed under a key id that the configured master keys do not hold (an old
    key dropped before ``vault rotate`` ran, or another deployment's key). Raised when the
    data is opened; ``key_id`` names the missing key, which is safe to show."""

    default_message = "Sealed data uses a master key id that is not configured."

    def __init__(self, message: str | None = None, *, key_id: str) -> None:
        super().__init__(message)
        self.key_id = key_id
