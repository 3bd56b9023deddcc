"""Views that send: what an order's "shipped" button does."""

from django.db import transaction
from django.http import HttpRequest, JsonResponse

from unified_messaging import MessagingError
from unified_messaging.contrib.django import (
    check_verification,
    send,
    send_on_commit,
    start_verification,
)

from .models import Order


def notify(request: HttpRequest) -> JsonResponse:
    order = request.POST["order"]
    try:
        sent = send(to=request.POST["to"], body=f"Siparişiniz {order} kargoya verildi.")
    except MessagingError as exc:
        return JsonResponse({"error": exc.code}, status=exc.http_status)
    return JsonResponse({"job_id": sent.job_id, "status": sent.status}, status=201)


def ship(request: HttpRequest) -> JsonResponse:
    """Ship an order inside the request's transaction (ATOMIC_REQUESTS): ``send`` at once,
    or ``send_on_commit`` with ``on_commit=1``; ``fail=1`` rolls the order back (a payment
    that failed after the order was written)."""
    order = Order.objects.create(number=request.POST["order"])
    text = f"Siparişiniz {order.number} kargoya verildi."
    if request.POST.get("on_commit"):

        def keep(sent: object) -> None:
            Order.objects.filter(pk=order.pk).update(sms_job_id=sent.job_id)  # type: ignore[attr-defined]

        send_on_commit(to=request.POST["to"], body=text, on_sent=keep)
        job_id = ""
    else:
        try:
            job_id = send(to=request.POST["to"], body=text).job_id
        except MessagingError as exc:
            transaction.set_rollback(True)
            return JsonResponse({"error": exc.code}, status=exc.http_status)
        Order.objects.filter(pk=order.pk).update(sms_job_id=job_id)
    if request.POST.get("fail"):
        transaction.set_rollback(True)
        return JsonResponse({"error": "PAYMENT_FAILED"}, status=402)
    return JsonResponse({"order": order.number, "job_id": job_id}, status=201)


def send_code(request: HttpRequest) -> JsonResponse:
    """A login form's "send me a code": the visitor's address goes to the pumping guard."""
    try:
        started = start_verification(to=request.POST["phone"], http_request=request)
    except MessagingError as exc:
        return JsonResponse({"error": exc.code}, status=exc.http_status)
    return JsonResponse({"verification": started.id}, status=201)


def check_code(request: HttpRequest) -> JsonResponse:
    try:
        checked = check_verification(request.POST["verification"], request.POST["code"])
    except MessagingError as exc:
        return JsonResponse({"error": exc.code}, status=exc.http_status)
    return JsonResponse({"ok": checked.status == "approved"})
