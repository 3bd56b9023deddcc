"""``manage.py um_send --to 0555… --body "…"``: one message as the configured principal, a
quick check that the settings work."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser


class Command(BaseCommand):
    help = "Send one message as UNIFIED_MESSAGING's API_KEY or WORKSPACE (a settings check)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--to", required=True, help="the recipient")
        parser.add_argument("--body", help="plain text (or --template)")
        parser.add_argument("--template", help="a template key (with --var NAME=VALUE)")
        parser.add_argument("--var", action="append", default=[], metavar="NAME=VALUE")
        parser.add_argument("--provider", help="a provider code (default: the workspace's)")

    def handle(self, *args: Any, **options: Any) -> None:
        from ....._errors import MessagingError
        from ... import send

        request: dict[str, Any] = {"to": options["to"]}
        for name in ("body", "template", "provider"):
            if options[name] is not None:
                request[name] = options[name]
        if options["var"]:
            pairs = [item.partition("=") for item in options["var"]]
            request["variables"] = {name: value for name, _, value in pairs}
        try:
            response = send(request)
        except MessagingError as exc:
            raise CommandError(f"{exc.code}: {exc.message}") from None
        self.stdout.write(json.dumps(response.to_dict(), ensure_ascii=False))
