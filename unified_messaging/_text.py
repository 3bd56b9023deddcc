"""Text the store can keep and look up: the one rule shared by every way text comes in.

PostgreSQL's ``text`` cannot hold NUL, and no backend can take a lone surrogate (a ``str``
code point in U+D800–U+DFFF, which has no UTF-8 form): either makes a query fail, and a
failed query would be a 500. So text from outside is checked before it reaches the store:
an identifier that cannot be stored cannot name anything stored either (a lookup by it finds
nothing, without asking), and free text from a provider is scrubbed rather than refused.
Request bodies keep their own, stricter rule (no control characters at all, ``_models``).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Final

from ._domain import ErrorInfo
from .providers.base import ProviderReport

__all__ = ["REPLACEMENT", "scrubbed", "storable", "storable_report"]

#: U+FFFD, what Unicode itself puts where a character could not be read.
REPLACEMENT: Final = "\ufffd"
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def storable(text: str) -> bool:
    """Can ``text`` be stored and looked up in every backend (no NUL, no lone surrogate)?"""
    return _UNSTORABLE.search(text) is None


def scrubbed(text: str) -> str:
    """``text`` with every character the store cannot keep replaced by U+FFFD."""
    return _UNSTORABLE.sub(REPLACEMENT, text)


def storable_report(report: ProviderReport) -> ProviderReport | None:
    """``report`` as it can be stored, or ``None`` when it cannot be about any stored message.

    A provider message id the store cannot hold was never stored, so no message of ours has
    it: the report is "nothing for us" (D20, answered 200 so the provider stops retrying).
    The report's free text (status word, error, recipient) is kept with the unstorable
    characters replaced: the status it carries is what matters, and it is already read.
    """
    if not storable(report.provider_message_id):
        return None
    error = report.error
    if error is not None:
        error = ErrorInfo(scrubbed(error.code), scrubbed(error.message))
    to = None if report.to is None else scrubbed(report.to)
    return replace(report, provider_status=scrubbed(report.provider_status), error=error, to=to)
