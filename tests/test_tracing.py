"""OpenTelemetry spans: through the API only, checked with the SDK's in-memory
exporter. One request over a real socket, with a caller's ``traceparent``, to a number whose
simulated report fails, with ``sms_b`` as fallback and a webhook receiver on loopback: the
server span, the provider calls (the first and, minutes later in the worker, the fallback),
the work items and the webhook delivery are all one trace, and no span holds a number, a body
or a key."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta

import httpx
import pytest
from fakes._server import serve
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from unified_messaging import ManualClock, Messenger, ProviderUnavailable
from unified_messaging._observability.tracing import (
    TRACE_KEY,
    current_trace_id,
    span,
    use_tracer_provider,
)
from unified_messaging.asgi import create_app
from unified_messaging.store.base import WorkItem
from unified_messaging.testing import create_testbed
from unified_messaging.webhooks._sender import TargetPolicy

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_SPAN = "00f067aa0ba902b7"
FAILS_BY_REPORT = "+905550000006"  # the simulator: accepted, then a failed report
BODY = "Kargo kodunuz 4471"


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with use_tracer_provider(provider):
        yield exporter


def of_trace(spans: tuple[ReadableSpan, ...], trace_id: str) -> list[ReadableSpan]:
    return [s for s in spans if s.context is not None and f"{s.context.trace_id:032x}" == trace_id]


async def test_one_trace_from_the_request_through_fallback_and_webhooks(
    exporter: InMemorySpanExporter,
) -> None:
    received: list[bytes] = []

    async def hook(request: Request) -> Response:
        received.append(await request.body())
        return Response(status_code=204)

    clock = ManualClock()
    messenger = Messenger(clock=clock, webhook_policy=TargetPolicy(allow_private=True))
    bed = await create_testbed(messenger=messenger, report_delay=timedelta(seconds=2))
    receiver = Starlette(routes=[Route("/hook", hook, methods=["POST"])])
    async with serve(receiver) as receiver_url, serve(create_app(messenger)) as base_url:
        await messenger.webhooks.create(
            bed.workspace.id, receiver_url + "/hook?token=receiver-own-secret"
        )
        async with httpx.AsyncClient(base_url=base_url) as client:
            sent = await client.post(
                "/v1/messages",
                json={"to": FAILS_BY_REPORT, "body": BODY, "fallback": ["sms_b"]},
                headers={
                    "Authorization": f"Bearer {bed.api_key}",
                    "traceparent": f"00-{TRACE_ID}-{PARENT_SPAN}-01",
                },
            )
        assert sent.status_code == 201, sent.text
        await bed.settle(timedelta(seconds=5))  # the report fails: fallback to sms_b

    spans = of_trace(exporter.get_finished_spans(), TRACE_ID)
    names = [s.name for s in spans]
    [server] = [s for s in spans if s.kind is SpanKind.SERVER]
    assert server.name == "POST /v1/messages"
    assert server.parent is not None and f"{server.parent.span_id:016x}" == PARENT_SPAN
    assert server.attributes is not None
    assert server.attributes["http.route"] == "/v1/messages"
    assert server.attributes["http.response.status_code"] == 201
    [send] = [s for s in spans if s.name == "send" and s.kind is SpanKind.PRODUCER]
    assert send.parent is not None and server.context is not None
    assert send.parent.span_id == server.context.span_id
    assert send.attributes is not None
    assert send.attributes["messaging.message.id"] == sent.json()["job_id"]
    assert send.attributes["unified_messaging.status"] == "sent"
    # The simulated report, applied by the worker, in the same trace.
    reports = [s for s in spans if s.name == "process sms_a" and s.kind is SpanKind.CONSUMER]
    assert reports and reports[0].attributes is not None
    assert reports[0].attributes["unified_messaging.reports.changed"] == 1
    # The first provider call, under the request; the fallback's, under a work item.
    first = [s for s in spans if s.name == "send sms_a"]
    fallback = [s for s in spans if s.name == "send sms_b"]
    assert len(first) == 1 and len(fallback) == 1, names
    assert first[0].kind is SpanKind.CLIENT
    assert first[0].attributes is not None
    assert first[0].attributes["messaging.destination.name"] == "sms_a"
    assert first[0].attributes["unified_messaging.outcome"] == "accepted"
    work_spans = [s for s in spans if s.name.startswith("work ")]
    assert work_spans and all(s.kind is SpanKind.CONSUMER for s in work_spans)
    work_ids = {s.context.span_id for s in work_spans if s.context is not None}
    assert fallback[0].parent is not None and fallback[0].parent.span_id in work_ids
    # Webhook deliveries, in the same trace, without the receiver's query string.
    posts = [s for s in spans if s.name == "POST" and s.kind is SpanKind.CLIENT]
    assert received and len(posts) == len(received)
    assert all(s.attributes is not None for s in posts)
    assert {s.attributes["http.response.status_code"] for s in posts if s.attributes} == {204}
    for post in posts:
        assert post.attributes is not None
        assert post.attributes["url.full"] == receiver_url + "/hook"
    # Nothing a span carries is a number, a body or a key.
    dumped = json.dumps([dict(s.attributes or {}) for s in exporter.get_finished_spans()])
    for secret in (FAILS_BY_REPORT, FAILS_BY_REPORT[1:], BODY, bed.api_key, "receiver-own-secret"):
        assert secret not in dumped


async def test_a_work_item_made_under_a_span_carries_its_trace(
    exporter: InMemorySpanExporter,
) -> None:
    outside = WorkItem("w1", "k", "r", due_at=_now(), created_at=_now())
    with span("parent"):
        trace_id = current_trace_id()
        inside = WorkItem("w2", "k", "r", due_at=_now(), created_at=_now(), payload={"a": 1})
        kept = WorkItem(
            "w3", "k", "r", due_at=_now(), created_at=_now(), payload={TRACE_KEY: {"x": "y"}}
        )
    assert TRACE_KEY not in outside.payload
    carrier = inside.payload[TRACE_KEY]
    assert isinstance(carrier, dict) and trace_id is not None
    assert carrier["traceparent"].split("-")[1] == trace_id
    assert inside.payload["a"] == 1
    assert kept.payload[TRACE_KEY] == {"x": "y"}


async def test_a_failed_provider_call_is_an_error_span(exporter: InMemorySpanExporter) -> None:
    bed = await create_testbed()
    with pytest.raises(ProviderUnavailable):  # the simulator: the provider times out
        await bed.messenger.send(bed.principal, {"to": "+905550000003", "body": "x"})
    [call] = [s for s in exporter.get_finished_spans() if s.name == "send sms_a"]
    assert call.status.status_code is StatusCode.ERROR
    assert call.attributes is not None and call.attributes["error.type"]


def _now():  # type: ignore[no-untyped-def]
    from datetime import UTC, datetime

    return datetime(2026, 1, 1, tzinfo=UTC)


def test_without_a_tracer_provider_no_span_is_made() -> None:
    """With the API but no SDK set up, the API would hand out non-recording spans (~30 µs a
    request on the REST edge) for nothing: none are made, and work items carry no trace."""
    from unified_messaging._observability.tracing import tracing_enabled

    assert not tracing_enabled()
    with span("nothing") as handle:
        assert current_trace_id() is None
        item = WorkItem("w", "k", "r", due_at=_now(), created_at=_now())
    handle.set("ignored", 1)  # inert
    assert TRACE_KEY not in item.payload
