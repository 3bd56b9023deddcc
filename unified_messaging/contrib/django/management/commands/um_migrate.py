"""``manage.py um_migrate``: create or upgrade unified-messaging's tables (Alembic) in the
database the settings name; safe to run while other processes start."""

from __future__ import annotations

import asyncio
from typing import Any

from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Create or upgrade unified-messaging's tables in its database."

    def handle(self, *args: Any, **options: Any) -> None:
        from .....store.sql import migrate
        from ...settings import get_settings

        asyncio.run(migrate(get_settings().database_url))
        self.stdout.write("unified-messaging tables are at the latest schema")
