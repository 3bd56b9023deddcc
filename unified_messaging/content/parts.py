"""How many SMS parts a text costs once the operator's code is on it (BTK).

BTK's board decision 2016/DK-YED/211 (article 5) has every operator that sends SMS under an
alphanumeric header append its own code to the text: ``B`` and three digits (``B038``),
after a space, 5 characters in all, on every message (campaigns, one-time codes alike; the
sources are in docs/iys.md). A 156-character text is then 161 characters on the air: two
parts, not one. The code is letters and digits of the GSM default alphabet, one unit in
every encoding, so it never changes the text's encoding; it only moves where the parts end.
The counting itself is :mod:`.._encoding`'s, once, on the text with a code appended.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from .._encoding import analyze_sms
from .._types import Encoding

__all__ = ["OPERATOR_CODE", "OPERATOR_CODE_LENGTH", "SmsParts", "count_parts"]

#: What an operator appends: a space, ``B`` and its three digits (which digits does not
#: matter to a count: each is one unit in every encoding).
OPERATOR_CODE: Final = " B000"
OPERATOR_CODE_LENGTH: Final = len(OPERATOR_CODE)


@dataclass(frozen=True, slots=True)
class SmsParts:
    """A text as an SMS: its encoding, ``characters`` (code points), ``units`` (septets or
    UTF-16 units), ``parts`` as written and ``parts_with_operator_code`` as it is sent and
    billed, the operator's 5 characters on it."""

    encoding: Encoding
    characters: int
    units: int
    parts: int
    parts_with_operator_code: int


def count_parts(text: str, *, turkish_shift: bool = True) -> SmsParts:
    """The parts of ``text`` without and with the operator's code (``turkish_shift``: may
    the Turkish single-shift table be used, as :func:`.._encoding.analyze_sms`)."""
    written = analyze_sms(text, allow_turkish_shift=turkish_shift)
    sent = analyze_sms(text + OPERATOR_CODE, allow_turkish_shift=turkish_shift)
    return SmsParts(
        encoding=written.encoding,
        characters=written.characters,
        units=written.units,
        parts=written.segments,
        parts_with_operator_code=sent.segments,
    )
