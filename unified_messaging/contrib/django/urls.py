"""``path("messaging/", include("unified_messaging.contrib.django.urls"))``: the webhook
endpoint at ``messaging/webhooks/`` (the URL to give ``webhooks add``)."""

from __future__ import annotations

from django.urls import path

from .views import webhook

app_name = "unified_messaging"
urlpatterns = [path("webhooks/", webhook, name="webhook")]
