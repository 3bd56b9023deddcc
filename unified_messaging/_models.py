"""The contract's shapes (SPEC 2.1–2.5, DESIGN D11): request and response models.

These pydantic models are the one source of shapes. REST bodies, MCP tool arguments and
CLI input are validated by them, and the OpenAPI / JSON schemas are generated from them.
Request models forbid unknown fields (D23). Rules that span fields live here too, and
raise :class:`FieldProblem` so that a validation error still names the field it is about.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Any, ClassVar, TypeVar

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)

from ._errors import ErrorDetail, RequestInvalid, field_sentence
from ._recipients import MAX_RECIPIENT_LENGTH
from ._types import (
    TEMPLATE_KEY_PATTERN,
    AttemptStatus,
    Category,
    Channel,
    DeliveryStatus,
    Encoding,
    MessageStatus,
    ProviderCode,
    RecipientType,
    SubmitStatus,
)

__all__ = [
    "MAX_BODY_LENGTH",
    "MAX_BULK_ITEMS",
    "MAX_FALLBACKS",
    "ApiKeyRef",
    "AttemptOut",
    "BulkItem",
    "BulkRequest",
    "BulkResponse",
    "BulkResult",
    "DlrOut",
    "ErrorObject",
    "FieldProblem",
    "SendRequest",
    "SendResponse",
    "StatusRecord",
    "parse_model",
]

MAX_BODY_LENGTH = 1600
MAX_SENDER_LENGTH = 32
MAX_BULK_ITEMS = 200
MAX_FALLBACKS = 3
MAX_VARIABLES = 100
MAX_VARIABLE_NAME_LENGTH = 64

# C0 controls other than TAB, LF, CR; and DEL. Providers drop or choke on them, and a NUL
# truncates a C string in more than one SMSC, so they are a 400 rather than a surprise later.
_FORBIDDEN_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


class FieldProblem(ValueError):
    """A cross-field rule failed; ``field`` says which field to blame in ``details``."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def has_control_chars(value: str) -> bool:
    """Does ``value`` hold a control character that no message may carry?"""
    return _FORBIDDEN_CONTROLS.search(value) is not None


def _no_control_chars(value: str) -> str:
    if has_control_chars(value):
        raise ValueError("must not contain control characters")
    return value


def _empty_as_none(value: object) -> object:
    # The contract treats an empty sender, and an empty body beside a template, as omitted.
    return None if value == "" else value


Recipient = Annotated[
    str,
    Field(min_length=1, max_length=MAX_RECIPIENT_LENGTH, examples=["+905551234567"]),
    AfterValidator(_no_control_chars),
]
_BodyText = Annotated[
    str,
    Field(min_length=1, max_length=MAX_BODY_LENGTH, examples=["Merhaba, siparişiniz yolda."]),
    AfterValidator(_no_control_chars),
]
Body = Annotated[_BodyText | None, BeforeValidator(_empty_as_none)]
TemplateKey = Annotated[str, Field(pattern=TEMPLATE_KEY_PATTERN, examples=["order_shipped"])]
_SenderText = Annotated[
    str,
    Field(min_length=1, max_length=MAX_SENDER_LENGTH, examples=["ACME"]),
    AfterValidator(_no_control_chars),
]
Sender = Annotated[_SenderText | None, BeforeValidator(_empty_as_none)]


def _scalar_variable(value: object) -> object:
    # Checked before the union so that a bad value is one problem at ``variables.<name>``,
    # not one per union member at ``variables.<name>.str``, ``….int`` and so on. Text gets
    # the same control-character rule as ``body``: it ends up in the same message.
    if isinstance(value, str):
        return _no_control_chars(value)
    if isinstance(value, int | float):  # bool is an int
        return value
    raise ValueError("must be a string, number or boolean")


VariableValue = Annotated[
    str | int | float | bool,
    BeforeValidator(_scalar_variable),
    Field(description="A scalar; rendered as text."),
]
Variables = Annotated[
    dict[Annotated[str, Field(min_length=1, max_length=MAX_VARIABLE_NAME_LENGTH)], VariableValue],
    Field(max_length=MAX_VARIABLES, examples=[{"name": "Ayşe", "order": "A-1042"}]),
]
Fallback = Annotated[list[ProviderCode], Field(max_length=MAX_FALLBACKS, examples=[["sms_b"]])]

#: Longer than any ISO 8601 date-time with fractions and an offset: no need to parse more.
_MAX_SEND_AT_LENGTH = 40
_SEND_AT_FORM = "an ISO 8601 date-time with an offset, e.g. 2026-12-01T09:00:00+03:00"
#: RFC 3339's profile of ISO 8601: what every JSON client writes. ``fromisoformat`` alone
#: takes more (a NUL before the ``Z`` among it), so the shape is checked first.
_SEND_AT_SHAPE = re.compile(
    r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:[Zz]|[+-]\d{2}:?\d{2})"
)


def _send_at_text(value: object) -> object:
    # Only text (or, from the library, a datetime): pydantic would read a number as seconds
    # since 1970, which no one sending JSON means. The offset is checked by AwareDatetime.
    if isinstance(value, datetime):
        return value
    if not isinstance(value, str) or len(value) > _MAX_SEND_AT_LENGTH:
        raise ValueError(f"must be {_SEND_AT_FORM}")
    if _SEND_AT_SHAPE.fullmatch(value) is None:
        if _SEND_AT_SHAPE.fullmatch(value + "Z") is not None:
            raise ValueError(f"needs an offset (Z or +03:00): {_SEND_AT_FORM}")
        raise ValueError(f"must be {_SEND_AT_FORM}")
    try:
        parsed = datetime.fromisoformat(value.upper())  # RFC 3339 allows "t" and "z" too
    except ValueError:
        raise ValueError(f"must be {_SEND_AT_FORM}") from None
    if parsed.utcoffset() is None:
        raise ValueError(f"needs an offset (Z or +03:00): {_SEND_AT_FORM}")
    return parsed


SendAt = Annotated[
    AwareDatetime,
    BeforeValidator(_send_at_text),
    Field(
        description="Hand the message over at this time (from now up to 30 days ahead; "
        "ISO 8601 with an offset). Answered 201 queued; cancel it until then.",
        examples=["2026-12-01T09:00:00+03:00"],
    ),
]
IgnoreQuietHours = Annotated[
    bool,
    Field(
        strict=True,
        description="Send even inside the workspace's quiet hours (a one-time code must "
        "not wait for the morning).",
    ),
]


MessageCategory = Annotated[
    Category,
    Field(
        description="The message's İYS class (D33): commercial needs the recipient's "
        "consent. Default: the connection's iys_mode.",
    ),
]
MessageRecipientType = Annotated[
    RecipientType,
    Field(
        description="A commercial message's recipient: an individual (BIREYSEL, the "
        "default) or a merchant (TACIR). Only with category commercial.",
    ),
]


def _check_class(category: Category | None, recipient_type: RecipientType | None) -> None:
    if recipient_type is not None and category != "commercial":
        raise FieldProblem("recipient_type", "only allowed with category commercial")


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=False)


def _check_fallback(fallback: list[ProviderCode] | None, provider: ProviderCode | None) -> None:
    if not fallback:
        return
    if len(set(fallback)) != len(fallback):
        raise FieldProblem("fallback", "must not list a provider twice")
    if provider is not None and provider in fallback:
        raise FieldProblem("fallback", "must not contain the primary provider")


class SendRequest(_Request):
    """Body of ``POST /v1/messages`` (SPEC 2.1)."""

    to: Recipient = Field(description="Recipient: Turkish mobile, chat id or @username, E.164.")
    body: Body = Field(default=None, description="Plain text. Exactly one of body / template.")
    template: TemplateKey | None = Field(
        default=None, description="Key of a template. Exactly one of body / template."
    )
    variables: Variables | None = Field(
        default=None, description="Template variables; only together with template."
    )
    sender: Sender = Field(
        default=None, description="SMS only: an approved message header. Default: connection's."
    )
    provider: ProviderCode | None = Field(
        default=None, description="Forces one provider connection. Default: the workspace's."
    )
    fallback: Fallback | None = Field(
        default=None, description="Up to 3 backup SMS providers, tried in order."
    )
    channel_fallback: list[str] | None = Field(
        default=None,
        max_length=3,
        description="D36: later channels (bizchat, chatbot, sms), tried in order when the "
        "current one fails or is not delivered within escalate_after. One message, one "
        "job_id, one quota unit; sms takes the workspace's SMS route with its fallback.",
    )
    escalate_after: float | None = Field(
        default=None,
        description="D36: seconds to wait for delivered before the next channel (5-3600, "
        "default 30). Only with channel_fallback.",
    )
    send_at: SendAt | None = None
    ignore_quiet_hours: IgnoreQuietHours = False
    category: MessageCategory | None = None
    recipient_type: MessageRecipientType | None = None

    @model_validator(mode="after")
    def _one_of_body_or_template(self) -> SendRequest:
        if self.body is None and self.template is None:
            raise FieldProblem("body", "exactly one of body or template is required")
        if self.body is not None and self.template is not None:
            raise FieldProblem("body", "must be empty when template is given")
        if self.variables is not None and self.template is None:
            raise FieldProblem("variables", "only allowed together with template")
        _check_fallback(self.fallback, self.provider)
        _check_class(self.category, self.recipient_type)
        return self


class BulkItem(_Request):
    """One recipient of a bulk request: ``body`` in plain mode, ``variables`` in template mode."""

    to: Recipient
    body: Body = None
    variables: Variables | None = None
    #: This item's own time; default: the request's ``send_at`` (or at once).
    send_at: SendAt | None = None


class BulkRequest(_Request):
    """Body of ``POST /v1/messages/bulk`` (SPEC 2.3, D8)."""

    items: list[BulkItem] = Field(min_length=1, max_length=MAX_BULK_ITEMS)
    provider: ProviderCode | None = None
    sender: Sender = None
    template: TemplateKey | None = None
    fallback: Fallback | None = None
    #: Every item's time unless the item names its own.
    send_at: SendAt | None = None
    ignore_quiet_hours: IgnoreQuietHours = False
    #: Every item's class (D33).
    category: MessageCategory | None = None
    recipient_type: MessageRecipientType | None = None

    @model_validator(mode="after")
    def _mode_rules(self) -> BulkRequest:
        template_mode = self.template is not None
        for index, item in enumerate(self.items):
            if template_mode and item.body is not None:
                raise FieldProblem(f"items.{index}.body", "not allowed in template mode")
            if not template_mode and item.body is None:
                raise FieldProblem(f"items.{index}.body", "required in plain mode")
            if not template_mode and item.variables is not None:
                raise FieldProblem(f"items.{index}.variables", "only allowed in template mode")
        _check_fallback(self.fallback, self.provider)
        _check_class(self.category, self.recipient_type)
        return self


# --------------------------------------------------------------------------- responses


class _Response(BaseModel):
    model_config = ConfigDict(frozen=True)
    #: Optional fields are left out of the JSON rather than sent as null (SPEC 2.2 "optional").
    _omit_none: ClassVar[bool] = True

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=self._omit_none)

    def to_json(self) -> bytes:
        """:meth:`to_dict` as the REST answer's bytes: compact UTF-8 JSON, the same bytes as
        ``json.dumps(to_dict(), ensure_ascii=False, separators=(",", ":"))``, made by
        pydantic-core in one pass instead of a dict and a second walk."""
        return self.__pydantic_serializer__.to_json(self, exclude_none=self._omit_none)


class ErrorObject(_Response):
    """``{code, message}`` of a failed send (SPEC 2.2)."""

    code: str = Field(
        examples=["INVALID_RECIPIENT"],
        description=(
            "A stable code. For a bulk item refused before any provider, a request code "
            "(INVALID_RECIPIENT, TEMPLATE_VARIABLE_MISSING, RECIPIENT_RATE_LIMITED, ...). In a "
            "message, its attempts and a bulk result: PROVIDER_REJECTED, IYS_CONSENT_MISSING, "
            "RECIPIENT_UNREACHABLE, CHAT_UNREACHABLE, INVALID_RECIPIENT, PROVIDER_UNAVAILABLE, "
            "PROVIDER_CIRCUIT_OPEN, SUBMIT_INTERRUPTED (status unknown: a hand-over cut off "
            "before its outcome was stored), PROVIDER_OUTCOME_UNKNOWN (the provider may have "
            "taken the message: it ends `unknown`, no fallback is tried), or an adapter's own "
            "code."
        ),
    )
    message: str = Field(
        description="Why, in words: a provider failure names its cause (DNS, refused, TLS, "
        "time-out, or the HTTP status and an excerpt of the answer), never a credential."
    )


class AttemptOut(_Response):
    """One provider tried for a message, in order (SPEC 2.5, D11)."""

    provider: ProviderCode
    status: AttemptStatus
    provider_message_id: str | None = None
    error: ErrorObject | None = None
    at: datetime


class SendResponse(_Response):
    """201 body of ``POST /v1/messages`` (SPEC 2.2)."""

    job_id: str
    status: SubmitStatus
    to: str
    provider: ProviderCode
    created_at: datetime
    error: ErrorObject | None = None
    template: str | None = None
    template_key: str | None = None
    attempts: list[AttemptOut] | None = None
    segments: int | None = Field(default=None, description="SMS parts (SMS only).")
    encoding: Encoding | None = Field(default=None, description="SMS data coding (SMS only).")
    send_at: datetime | None = Field(
        default=None,
        description="A send that waits: when it will be handed over (its send_at, or the "
        "end of the workspace's quiet hours).",
    )


class BulkResult(_Response):
    to: str
    status: SubmitStatus
    job_id: str
    error: ErrorObject | None = None
    provider: ProviderCode | None = None
    attempts: list[AttemptOut] | None = None
    send_at: datetime | None = None


class BulkResponse(_Response):
    """201 body of ``POST /v1/messages/bulk`` (SPEC 2.4, D8)."""

    total: int
    sent: int
    failed: int
    provider: ProviderCode
    created_at: datetime
    results: list[BulkResult]
    template: str | None = None
    template_key: str | None = None


class DlrOut(_Response):
    _omit_none = False

    status: DeliveryStatus
    provider_status: str | None = None
    error: ErrorObject | None = None
    received_at: datetime


class ApiKeyRef(_Response):
    """The API key a message was sent with: its id and its name (never the key itself)."""

    _omit_none = False

    id: str = Field(description="The key's id (key_...).")
    name: str | None = Field(description="The name given when the key was created, if any.")


def _every_field_required(schema: dict[str, Any]) -> None:
    # The JSON always has every field (null or not), defaults or not: the schema says so.
    schema["required"] = list(schema.get("properties", {}))


class StatusRecord(_Response):
    """200 body of ``GET /v1/messages/{job_id}`` (D11). Every field is present, null or not."""

    model_config = ConfigDict(frozen=True, json_schema_extra=_every_field_required)
    _omit_none = False

    job_id: str
    status: MessageStatus
    to: str
    channel: Channel
    provider: ProviderCode
    sender: str | None
    template: str | None
    template_key: str | None
    created_at: datetime
    updated_at: datetime
    sent_at: datetime | None
    final_at: datetime | None
    error: ErrorObject | None
    attempts: list[AttemptOut]
    dlr: DlrOut | None
    segments: int | None
    encoding: Encoding | None
    livemode: bool
    send_at: datetime | None = Field(
        default=None,  # added later: a record built without it still validates
        description="When a send that waited (send_at, quiet hours) is or was to be handed over.",
    )
    category: Category | None = Field(
        default=None,  # added later (D33); null for a message stored before it
        description="Its İYS class: informational or commercial (D33).",
    )
    recipient_type: RecipientType | None = Field(
        default=None, description="A commercial message's recipient: BIREYSEL or TACIR (D33)."
    )
    body: str | None = Field(
        default=None,  # added later (D34); null for a record built without it
        description=(
            "The message's text as handed to providers: a template send's text rendered "
            "with its variables. In live mode a one-time code (D34) reads as ******, and "
            "the whole text does where the workspace masks live text (personal data); test "
            "mode shows it."
        ),
    )
    api_key: ApiKeyRef | None = Field(
        default=None,  # added later; null for a message sent without an API key
        description=(
            "The API key the message was sent with (id and name); null for one sent from "
            "the dashboard, the command line or the library without a key."
        ),
    )


# --------------------------------------------------------------------------- parsing

M = TypeVar("M", bound=BaseModel)


def _field_path(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in loc) or "body"


def _details(error: ValidationError) -> list[ErrorDetail]:
    details: list[ErrorDetail] = []
    for problem in error.errors(include_url=False, include_input=False):
        cause = (problem.get("ctx") or {}).get("error")
        if isinstance(cause, FieldProblem):
            details.append(ErrorDetail(cause.field, str(cause)))
            continue
        loc = problem["loc"]
        message = problem["msg"]
        if problem["type"] == "extra_forbidden":
            message = "unknown field"
        elif problem["type"] == "value_error" and isinstance(cause, ValueError):
            message = str(cause)  # our own wording, without pydantic's "Value error, "
        elif problem["type"] == "literal_error":
            message = "unknown provider code; " + message
        details.append(ErrorDetail(_field_path(loc), message))
    return details


def parse_model(model: type[M], data: object) -> M:
    """Validate ``data`` (a mapping from JSON, or a model) into ``model``.

    Raises :class:`RequestInvalid` whose ``details`` name every offending field by its
    dotted path (``items.3.to``), the shape the REST edge reports.
    """
    if isinstance(data, model):
        return data
    if isinstance(data, BaseModel):
        data = data.model_dump(exclude_unset=True)
    if not isinstance(data, Mapping):
        raise RequestInvalid.for_field("body", "must be a JSON object")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        details = _details(exc)
        first = details[0]
        summary = field_sentence(first.field, first.message)
        if len(details) > 1:
            summary += f" (and {len(details) - 1} more)"
        raise RequestInvalid(summary, details) from None
