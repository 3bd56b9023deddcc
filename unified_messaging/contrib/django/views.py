"""The webhook view: our signed events in, Django signals out (:mod:`.signals`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.views.decorators.csrf import csrf_exempt

from ...webhooks import WebhookVerificationError, verify
from .settings import get_settings
from .signals import BY_TYPE, message_event

__all__ = ["signal_event", "webhook"]


@csrf_exempt  # the signature is the proof of origin, not a browser session
def webhook(request: HttpRequest) -> HttpResponse:
    """``POST``: verify the Standard Webhooks signature over the raw body with the settings'
    ``WEBHOOK_SECRET`` (a list while rotating), then send the event's signals. 204 when
    handled, 400 when the request is not a genuine, fresh event from us, 405 for other
    methods. A receiver that raises makes a 500, so we deliver the event again later."""
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    secret = get_settings().webhook_secret
    if not secret:
        return HttpResponse("UNIFIED_MESSAGING['WEBHOOK_SECRET'] is not set", status=500)
    try:
        signal_event(request.body, request.headers, secret)
    except WebhookVerificationError as exc:
        return HttpResponse(f"not a verified webhook: {exc.reason}", status=400)
    return HttpResponse(status=204)


def signal_event(body: bytes, headers: Mapping[str, str], secret: str | Sequence[str]) -> None:
    """Verify one delivered event (raises :class:`WebhookVerificationError`), then send its
    type's signal and ``message_event``: the view's work, and ``testing.settle()``'s for the
    events the simulated workspace delivers in tests."""
    event = verify(body, headers, secret)
    from ..._models import StatusRecord
    from ...accounts.models import ProviderAccountOut
    from ...consents.models import ConsentOut
    from ...suppressions._inbound import InboundRecord
    from ...verifications._models import VerificationOut

    event_type = str(event.get("type", ""))
    model: type[
        StatusRecord | InboundRecord | VerificationOut | ConsentOut | ProviderAccountOut
    ] = StatusRecord
    if event_type == "message.inbound":
        model = InboundRecord
    elif event_type.startswith("verification."):
        model = VerificationOut
    elif event_type.startswith("consent."):
        model = ConsentOut
    elif event_type.startswith("connection."):
        model = ProviderAccountOut
    record = model.model_validate(event.get("data"))
    stamp = event.get("timestamp")
    details = {
        "record": record,
        "event_type": event_type,
        "event_id": headers.get("webhook-id", ""),
        "timestamp": datetime.fromisoformat(stamp) if isinstance(stamp, str) else datetime.now(UTC),
        "livemode": record.livemode,
    }
    signal = BY_TYPE.get(event_type)
    if signal is not None:
        signal.send(sender=event_type, **details)
    message_event.send(sender=event_type, **details)
