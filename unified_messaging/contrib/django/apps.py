"""The Django app: ``INSTALLED_APPS += ["unified_messaging.contrib.django"]``."""

from __future__ import annotations

from django.apps import AppConfig


class UnifiedMessagingConfig(AppConfig):
    name = "unified_messaging.contrib.django"
    label = "unified_messaging"
    verbose_name = "unified-messaging"

    def ready(self) -> None:
        from .settings import check_settings

        check_settings()  # a misspelt key fails at start-up, not at the first send
