"""A view that sends: what an order's "shipped" button does."""

from django.http import HttpRequest, JsonResponse

from unified_messaging import MessagingError
from unified_messaging.contrib.django import send


def notify(request: HttpRequest) -> JsonResponse:
    order = request.POST["order"]
    try:
        sent = send(to=request.POST["to"], body=f"Siparişiniz {order} kargoya verildi.")
    except MessagingError as exc:
        return JsonResponse({"error": exc.code}, status=exc.http_status)
    return JsonResponse({"job_id": sent.job_id, "status": sent.status}, status=201)
