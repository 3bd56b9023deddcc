"""The query of ``POST /v1/messages`` and ``POST /v1/messages/bulk``: ``dry_run`` (D33).

``POST /v1/messages?dry_run=true`` answers what the send would do, 200 with a
:class:`~..content.models.SendPreview`, and stores and sends nothing
(``Messenger.preview_send``). A POST takes no other query parameter: a misspelt one
(``?dryrun=true``, ``?dry_run=yes``) would otherwise send for real what was meant as a
trial, so it is a 400 naming it, before the body is read. The bulk takes none at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from .._errors import RequestInvalid

__all__ = ["DRY_RUN", "dry_run_asked"]

DRY_RUN: Final = "dry_run"
_VALUES: Final = {"true": True, "false": False}


def dry_run_asked(query: Sequence[tuple[str, str]], *, allowed: bool) -> bool:
    """Does the query ask for a dry run (``dry_run=true``)? ``False`` for ``dry_run=false``
    or none. :class:`RequestInvalid` for any other parameter, a repeated ``dry_run``, a
    value other than ``true``/``false``, or a ``dry_run`` where it is not ``allowed``."""
    asked = False
    seen = False
    for name, value in query:
        if name != DRY_RUN or not allowed:
            shown = name[:40]
            if name == DRY_RUN:
                raise RequestInvalid.for_field(shown, "is taken by POST /v1/messages only")
            raise RequestInvalid.for_field(shown, "unknown query parameter")
        if seen:
            raise RequestInvalid.for_field(DRY_RUN, "must be given once")
        if value not in _VALUES:
            raise RequestInvalid.for_field(DRY_RUN, "must be true or false")
        seen, asked = True, _VALUES[value]
    return asked
