"""A message's class for İYS (D33): ``category`` and ``recipient_type`` as a send names them,
and the one :data:`~._types.IysMode` every adapter reads (NetGSM ``iysfilter``, Verimor
``is_commercial`` + ``iys_recipient_type``, İletimerkezi ``iys`` + ``iysList``).

A send that names no ``category`` takes its primary connection's ``iys_mode``, as before
D33; the class is fixed when the message is accepted, so every hop of its chain (fallback,
retry, a later hand-over) marks it the same way.
"""

from __future__ import annotations

from typing import Final

from ._types import Category, IysMode, RecipientType

__all__ = ["class_of", "iys_mode_for"]

_COMMERCIAL: Final[dict[RecipientType, IysMode]] = {
    "BIREYSEL": "commercial_individual",
    "TACIR": "commercial_merchant",
}


def iys_mode_for(category: Category, recipient_type: RecipientType | None) -> IysMode:
    """The IYS mode of a message of ``category``; a commercial one's recipient is an
    individual unless ``recipient_type`` says ``TACIR``."""
    if category == "informational":
        return "informational"
    return _COMMERCIAL[recipient_type or "BIREYSEL"]


def class_of(mode: IysMode) -> tuple[Category, RecipientType | None]:
    """``(category, recipient_type)`` of a message sent in ``mode`` (the status record's)."""
    if mode == "commercial_individual":
        return "commercial", "BIREYSEL"
    if mode == "commercial_merchant":
        return "commercial", "TACIR"
    return "informational", None
