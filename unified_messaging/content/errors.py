"""The refusal of a commercial text by its workspace's content rules (D33).

A 422 with our code ``COMMERCIAL_CONTENT_REFUSED``; the answer's ``error.hints`` lists each
hint (``code`` and ``message``) that refused it, as :class:`~.rules.ContentHint`.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._errors import Unprocessable
from .rules import ContentHint

__all__ = ["CommercialContentRefused"]


class CommercialContentRefused(Unprocessable):
    """A commercial SMS whose text misses what its workspace requires (its content rules
    ``refuse``): nothing was stored or sent. ``hints``: what is missing."""

    code = "COMMERCIAL_CONTENT_REFUSED"
    default_message = "The workspace's content rules refuse this commercial text."

    def __init__(self, message: str | None = None, hints: Sequence[ContentHint] = ()) -> None:
        super().__init__(message)
        self.hints: tuple[ContentHint, ...] = tuple(hints)

    @classmethod
    def of(cls, hints: Sequence[ContentHint]) -> CommercialContentRefused:
        codes = ", ".join(hint.code for hint in hints)
        return cls(f"The workspace's content rules refuse this commercial text: {codes}.", hints)
