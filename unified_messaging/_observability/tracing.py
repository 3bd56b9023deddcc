"""OpenTelemetry spans, through ``opentelemetry-api`` only (the ``otel`` extra).

The package depends on the API, never on the SDK: the host application chooses the SDK, the
exporter and the sampler, and sets its tracer provider as OpenTelemetry documents. Without
``opentelemetry-api`` installed every function here is a no-op costing one attribute check;
with the API and no SDK, the API's non-recording spans cost a few microseconds.

The spans follow the semantic conventions (HTTP and messaging, stable attribute names):

======================  ========  ====================================================
span                    kind      where
======================  ========  ====================================================
``{METHOD} {route}``    server    every REST request (``asgi`` middleware); continues an
                                  incoming ``traceparent``
``send``                producer  ``Messenger.send`` and ``send_bulk`` (``messaging.*``,
                                  the job id as ``messaging.message.id``)
``send {provider}``     client    each call to a provider (its code, the outcome)
``process {provider}``  consumer  a delivery report applied
``POST``                client    each webhook delivery attempt (``http.*``, ``url.full``)
``work {kind}``         consumer  each work item the worker runs (a DLR time-out, a
                                  fallback, a webhook delivery)
======================  ========  ====================================================

Work items carry the trace: a :class:`~unified_messaging.store.base.WorkItem` made while a
span is recording keeps its W3C ``traceparent`` in its payload (``"trace"``), and the worker
runs the item in a span whose parent is that context, so a fallback minutes later, in
another process, joins the trace of the request that sent the message.

No span carries a phone number, a message body, a credential or a secret.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal, ParamSpec, TypeVar
from urllib.parse import urlsplit, urlunsplit

from .._errors import ProviderUnavailable
from .._version import __version__

if TYPE_CHECKING:
    from opentelemetry.trace import Span, TracerProvider

    from ..providers.base import SubmitOutcome, SubmitRequest

try:
    from opentelemetry import context as _otel_context
    from opentelemetry import propagate as _propagate
    from opentelemetry import trace as _trace
except ImportError:  # the otel extra is not installed: tracing is off
    _trace = None  # type: ignore[assignment]

__all__ = [
    "TRACE_KEY",
    "SpanKind",
    "carrier_of_current",
    "current_trace_id",
    "ingest_span",
    "provider_call_span",
    "send_span",
    "span",
    "tracing_enabled",
    "use_tracer_provider",
    "webhook_span",
]

#: The key of a work item's payload that holds the W3C trace context it was made in.
TRACE_KEY: Final = "trace"
SCOPE_NAME: Final = "unified_messaging"

SpanKind = Literal["internal", "server", "client", "producer", "consumer"]
AttributeValue = str | bool | int | float

_provider: TracerProvider | None = None

P = ParamSpec("P")
R = TypeVar("R")


class _Handle:
    """What a ``with span(...)`` block may do to its span; inert when tracing is off."""

    __slots__ = ("_span",)

    def __init__(self, otel_span: Span | None) -> None:
        self._span = otel_span

    def rename(self, name: str) -> None:
        if self._span is not None:
            self._span.update_name(name)

    def set(self, name: str, value: AttributeValue | None) -> None:
        if self._span is not None and value is not None:
            self._span.set_attribute(name, value)

    def error(self, error_type: str, description: str | None = None) -> None:
        """Mark the span failed (``error.type``, status ERROR), for an outcome that is a
        failure without an exception (a provider's refusal, a webhook's 500)."""
        if self._span is None:
            return
        from opentelemetry.trace import Status, StatusCode

        self._span.set_attribute("error.type", error_type)
        self._span.set_status(Status(StatusCode.ERROR, description))


_OFF: Final = _Handle(None)


@contextlib.contextmanager
def span(
    name: str,
    *,
    kind: SpanKind = "internal",
    attributes: Mapping[str, AttributeValue | None] | None = None,
    parent: Mapping[str, Any] | None = None,
) -> Iterator[_Handle]:
    """A span around the block, current inside it; an exception that leaves the block is
    recorded on it. ``parent``: a carrier (``{"traceparent": ...}``) to continue instead of
    the current context (a work item's, or an incoming request's headers)."""
    if not tracing_enabled():
        yield _OFF
        return
    tracer = (_provider or _trace.get_tracer_provider()).get_tracer(SCOPE_NAME, __version__)
    context = _propagate.extract(parent) if parent is not None else None
    given = {k: v for k, v in (attributes or {}).items() if v is not None}
    with tracer.start_as_current_span(
        name, context=context, kind=_KINDS[kind], attributes=given
    ) as otel_span:
        yield _Handle(otel_span)


class _ProviderCall:
    __slots__ = ("_handle",)

    def __init__(self, handle: _Handle) -> None:
        self._handle = handle

    def outcomes(self, outcomes: Sequence[SubmitOutcome]) -> None:
        """The call's outcome on its span: the one kind, or ``mixed`` for a batch whose
        recipients fared differently; an unavailable provider marks the span failed."""
        if self._handle is _OFF or not outcomes:
            return
        kinds = {outcome.kind for outcome in outcomes}
        self._handle.set("unified_messaging.outcome", kinds.pop() if len(kinds) == 1 else "mixed")
        failed = [o for o in outcomes if o.kind in ("unavailable", "unknown")]
        if failed:
            error = failed[0].error
            self._handle.error(error.code if error else ProviderUnavailable.code)


@contextlib.contextmanager
def provider_call_span(provider: str, requests: Sequence[SubmitRequest]) -> Iterator[_ProviderCall]:
    """``send {provider}``: one call to a provider, for one message or a batch."""
    if not tracing_enabled():
        yield _ProviderCall(_OFF)
        return
    attributes: dict[str, AttributeValue | None] = {
        "messaging.system": SCOPE_NAME,
        "messaging.operation.type": "send",
        "messaging.operation.name": "submit",
        "messaging.destination.name": provider,
    }
    if len(requests) == 1:
        attributes["messaging.message.id"] = requests[0].job_id
        attributes["unified_messaging.attempt"] = requests[0].attempt
    else:
        attributes["messaging.batch.message_count"] = len(requests)
    with span(f"send {provider}", kind="client", attributes=attributes) as handle:
        yield _ProviderCall(handle)


class _WebhookCall:
    __slots__ = ("_handle",)

    def __init__(self, handle: _Handle) -> None:
        self._handle = handle

    def result(self, outcome: str, status_code: int | None) -> None:
        self._handle.set("http.response.status_code", status_code)
        self._handle.set("unified_messaging.outcome", outcome)
        if outcome != "success":
            self._handle.error(str(status_code) if status_code else outcome)


@contextlib.contextmanager
def webhook_span(url: str) -> Iterator[_WebhookCall]:
    """``POST``: one webhook delivery attempt (HTTP client conventions). ``url.full`` is
    the URL without its query and fragment, which may hold the receiver's own token."""
    if not tracing_enabled():
        yield _WebhookCall(_OFF)
        return
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:  # refused by the sender's own check, right after
        port = None
    attributes: dict[str, AttributeValue | None] = {
        "http.request.method": "POST",
        "url.full": urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, "", "")),
        "server.address": parts.hostname,
        "server.port": port or (443 if parts.scheme == "https" else 80),
    }
    with span("POST", kind="client", attributes=attributes) as handle:
        yield _WebhookCall(handle)


def send_span(method: Callable[P, Coroutine[Any, Any, R]]) -> Callable[P, Coroutine[Any, Any, R]]:
    """``send`` (producer) around ``Messenger.send``/``send_bulk``: the answer's job id,
    status and provider, or the batch's size; an error raised is recorded on the span."""
    if _trace is None:
        return method

    @functools.wraps(method)
    async def traced(*args: P.args, **kwargs: P.kwargs) -> R:
        if not tracing_enabled():
            return await method(*args, **kwargs)
        attributes: dict[str, AttributeValue | None] = {
            "messaging.system": SCOPE_NAME,
            "messaging.operation.type": "send",
            "messaging.operation.name": method.__name__,
        }
        with span("send", kind="producer", attributes=attributes) as handle:
            result = await method(*args, **kwargs)
            for attribute, field in _SEND_FIELDS:
                value = getattr(result, field, None)
                if isinstance(value, str | int) and not isinstance(value, bool):
                    handle.set(attribute, value)
            return result

    return traced


_SEND_FIELDS: Final = (
    ("messaging.message.id", "job_id"),
    ("messaging.destination.name", "provider"),
    ("unified_messaging.status", "status"),
    ("messaging.batch.message_count", "total"),
)


def ingest_span(method: Callable[P, Coroutine[Any, Any, R]]) -> Callable[P, Coroutine[Any, Any, R]]:
    """``process {provider}`` (consumer) around applying a batch of delivery reports
    (``Lifecycle.ingest(connection, reports, ...)``): how many came, matched and changed."""
    if _trace is None:
        return method

    @functools.wraps(method)
    async def traced(*args: P.args, **kwargs: P.kwargs) -> R:
        if not tracing_enabled():
            return await method(*args, **kwargs)
        connection = args[1] if len(args) > 1 else kwargs.get("connection")
        reports = args[2] if len(args) > 2 else kwargs.get("reports")
        provider = str(getattr(connection, "provider", "unknown"))
        attributes: dict[str, AttributeValue | None] = {
            "messaging.system": SCOPE_NAME,
            "messaging.operation.type": "process",
            "messaging.operation.name": "report",
            "messaging.destination.name": provider,
            "messaging.batch.message_count": len(reports)
            if isinstance(reports, Sequence)
            else None,
        }
        with span(f"process {provider}", kind="consumer", attributes=attributes) as handle:
            result = await method(*args, **kwargs)
            handle.set("unified_messaging.reports.matched", getattr(result, "matched", None))
            handle.set("unified_messaging.reports.changed", getattr(result, "changed", None))
            return result

    return traced


def tracing_enabled() -> bool:
    """Whether spans may record: ``opentelemetry-api`` is installed and a tracer provider is
    set (the host's SDK, or :func:`use_tracer_provider`). Without one the API would hand out
    non-recording spans at ~30 µs a request for nothing, so none are made."""
    if _trace is None:
        return False
    if _provider is not None:
        return True
    return not isinstance(_trace.get_tracer_provider(), _UNSET_PROVIDERS)


def carrier_of_current() -> dict[str, str] | None:
    """The W3C trace context of the current span, to store with durable work, or ``None``
    when no span is recording (tracing off, or nothing sampled)."""
    if _trace is None:
        return None
    current = _trace.get_current_span()
    if not current.is_recording():
        return None
    carrier: dict[str, str] = {}
    _propagate.inject(carrier)
    return carrier or None


def current_trace_id() -> str | None:
    """The current trace id in hex (for tests and log correlation), or ``None``."""
    if _trace is None:
        return None
    context = _trace.get_current_span().get_span_context()
    return f"{context.trace_id:032x}" if context.is_valid else None


@contextlib.contextmanager
def use_tracer_provider(provider: TracerProvider) -> Iterator[None]:
    """Send this package's spans to ``provider`` inside the block, whatever the global one
    is (OpenTelemetry's global provider can be set only once per process: tests use this
    with the SDK's in-memory exporter)."""
    global _provider
    previous, _provider = _provider, provider
    token = _otel_context.attach(_otel_context.Context()) if _trace is not None else None
    try:
        yield
    finally:
        _provider = previous
        if token is not None:
            _otel_context.detach(token)


if _trace is not None:
    from opentelemetry.trace import NoOpTracerProvider, ProxyTracerProvider

    _UNSET_PROVIDERS: Final[tuple[type, ...]] = (ProxyTracerProvider, NoOpTracerProvider)
    _KINDS: Final[Mapping[str, Any]] = {
        "internal": _trace.SpanKind.INTERNAL,
        "server": _trace.SpanKind.SERVER,
        "client": _trace.SpanKind.CLIENT,
        "producer": _trace.SpanKind.PRODUCER,
        "consumer": _trace.SpanKind.CONSUMER,
    }
