"""The admission rule of commercial content (D33): a commercial SMS whose text misses what
its workspace requires is refused before anything is stored, when the workspace's content
rules ``refuse``; otherwise the hints stay warnings (the dry run, the template editor).

Asked once per message at acceptance (``Messenger.send``, each bulk item, and so each
campaign row), on the text as rendered: a scheduled or retried message was checked when it
was accepted. Informational messages and chat channels are never checked.
"""

from __future__ import annotations

from .._types import Channel, IysMode
from .errors import CommercialContentRefused
from .rules import ContentRules, hints_for

__all__ = ["content_refusal"]


def content_refusal(
    rules: ContentRules, iys_mode: IysMode, channel: Channel, text: str
) -> CommercialContentRefused | None:
    """D33's content rule: the refusal of ``text`` sent as ``iys_mode`` on ``channel`` by a
    workspace with ``rules``, or ``None`` (most sends: rules that only warn cost nothing)."""
    if not rules.refuse or iys_mode == "informational" or channel != "sms":
        return None
    refusing = [hint for hint in hints_for(text, rules) if hint.refuses]
    return CommercialContentRefused.of(refusing) if refusing else None
