"""SMS data coding and segment counting (3GPP TS 23.038 alphabets, TS 23.040 UDH sizes).

Owns the choice of an SMS body's encoding (``gsm7``, ``gsm7_turkish`` or ``ucs2``), how many
units it costs, and how it is cut into concatenated parts. Pure functions over tables built
at import time; nothing here does I/O.

Counting rules:

* ``gsm7``: GSM 03.38 default alphabet (1 septet a character) plus the default extension
  table (ESC + character, 2 septets). 160 septets in a single SMS, 153 a part when
  concatenated (6-octet concatenation UDH).
* ``gsm7_turkish``: default alphabet plus the Turkish national language single-shift table
  (TS 23.038 A.2.1), each shifted character 2 septets. The language-indicator IE adds to the
  UDH, leaving 155 septets single and 149 a part concatenated.
* ``ucs2``: UTF-16 code units (a character outside the BMP is a surrogate pair, 2 units).
  70 units single, 67 a part concatenated.

No part ever ends in the middle of an escape sequence or a surrogate pair: a character that
does not fit wholly in the current part opens the next one. The empty text is reported as
``gsm7`` with 0 segments, and ``split_sms("")`` is ``[]``, so ``segments`` always equals
``len(split_sms(text))``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import pairwise
from typing import Final

from ._types import Encoding

__all__ = ["SmsEncoding", "analyze_sms", "gsm7_units", "split_sms"]

# The default alphabet, indexed by septet value. 0x1B is ESC (the way into the extension
# table), which no text character maps to; the placeholder is dropped below.
_ESC_PLACEHOLDER: Final = "\x1b"
_GSM7_BASIC_TABLE: Final[str] = (
    "@\u00a3$\u00a5\u00e8\u00e9\u00f9\u00ec\u00f2\u00c7\n\u00d8\u00f8\r\u00c5\u00e5"  # 0x00
    "\u0394_\u03a6\u0393\u039b\u03a9\u03a0\u03a8\u03a3\u0398\u039e"  # 0x10-0x1A
    + _ESC_PLACEHOLDER
    + "\u00c6\u00e6\u00df\u00c9"  # 0x1C-0x1F
    " !\"#\u00a4%&'()*+,-./"  # 0x20
    "0123456789:;<=>?"  # 0x30
    "\u00a1ABCDEFGHIJKLMNO"  # 0x40
    "PQRSTUVWXYZ\u00c4\u00d6\u00d1\u00dc\u00a7"  # 0x50
    "\u00bfabcdefghijklmno"  # 0x60
    "pqrstuvwxyz\u00e4\u00f6\u00f1\u00fc\u00e0"  # 0x70
)

# Extension tables as {septet after ESC: character}; the septet values are kept so the
# tables can be checked against the standard, though counting only needs the characters.
_GSM7_DEFAULT_EXTENSION: Final[dict[int, str]] = {
    0x0A: "\x0c",  # form feed (page break)
    0x14: "^",
    0x28: "{",
    0x29: "}",
    0x2F: "\\",
    0x3C: "[",
    0x3D: "~",
    0x3E: "]",
    0x40: "|",
    0x65: "\u20ac",  # €
}
_GSM7_TURKISH_SINGLE_SHIFT: Final[dict[int, str]] = {
    **_GSM7_DEFAULT_EXTENSION,
    0x47: "\u011e",  # Ğ
    0x49: "\u0130",  # İ
    0x53: "\u015e",  # Ş
    0x63: "\u00e7",  # ç (the default table only has Ç, at 0x09)
    0x67: "\u011f",  # ğ
    0x69: "\u0131",  # ı
    0x73: "\u015f",  # ş
}

_BASIC: Final[frozenset[str]] = frozenset(_GSM7_BASIC_TABLE) - {_ESC_PLACEHOLDER}
_EXT_DEFAULT: Final[frozenset[str]] = frozenset(_GSM7_DEFAULT_EXTENSION.values())
_EXT_TURKISH: Final[frozenset[str]] = frozenset(_GSM7_TURKISH_SINGLE_SHIFT.values())
_ALL_DEFAULT: Final[frozenset[str]] = _BASIC | _EXT_DEFAULT
_ALL_TURKISH: Final[frozenset[str]] = _BASIC | _EXT_TURKISH
_EXT_DEFAULT_CHARS: Final[tuple[str, ...]] = tuple(sorted(_EXT_DEFAULT))
_EXT_TURKISH_CHARS: Final[tuple[str, ...]] = tuple(sorted(_EXT_TURKISH))

# (single-part capacity, per-part capacity when concatenated), in the encoding's units.
_CAPACITY: Final[dict[Encoding, tuple[int, int]]] = {
    "gsm7": (160, 153),
    "gsm7_turkish": (155, 149),
    "ucs2": (70, 67),
}


def _char_class(chars: frozenset[str]) -> re.Pattern[str]:
    return re.compile("[" + "".join(re.escape(c) for c in sorted(chars)) + "]")


# Matches exactly the characters that cost 2 units in each encoding.
_DOUBLE_RE: Final[dict[Encoding, re.Pattern[str]]] = {
    "gsm7": _char_class(_EXT_DEFAULT),
    "gsm7_turkish": _char_class(_EXT_TURKISH),
    "ucs2": re.compile("[\U00010000-\U0010ffff]"),
}


@dataclass(frozen=True, slots=True)
class SmsEncoding:
    """How an SMS body is encoded and what it costs."""

    encoding: Encoding
    #: Number of SMS parts; 0 for the empty text.
    segments: int
    #: Septets for GSM (an escaped character counts 2), UTF-16 code units for UCS-2.
    units: int
    #: ``len(text)``: code points.
    characters: int
    #: Capacity of each part in ``units``: the single-SMS size when ``segments <= 1``.
    per_segment: int


def _measure(text: str, allow_turkish_shift: bool) -> tuple[Encoding, int]:
    """The encoding for ``text`` and the units it takes in it."""
    # issuperset walks the str without building a set (which would allocate a str per
    # non-Latin-1 character) and stops at the first character outside the alphabet.
    if _ALL_DEFAULT.issuperset(text):
        return "gsm7", _count_units(text, _EXT_DEFAULT_CHARS)
    if allow_turkish_shift and _ALL_TURKISH.issuperset(text):
        return "gsm7_turkish", _count_units(text, _EXT_TURKISH_CHARS)
    # surrogatepass: a lone surrogate (only reachable from a malformed str) is one unit.
    return "ucs2", len(text.encode("utf-16-le", "surrogatepass")) // 2


def _count_units(text: str, doubles: tuple[str, ...]) -> int:
    # One C-level str.count a 2-unit character beats a Python loop over the text.
    return len(text) + sum(map(text.count, doubles))


def _part_starts(text: str, encoding: Encoding, units: int, cap: int) -> list[int]:
    """Start index of every part after the first, packing greedily."""
    if units == len(text):
        # Every character costs 1, so parts are plain slices of ``cap`` characters.
        return list(range(cap, len(text), cap))
    # Walk from one 2-unit character to the next rather than character by character: runs
    # of 1-unit characters between them are settled by arithmetic.
    doubles = [m.start() for m in _DOUBLE_RE[encoding].finditer(text)]
    starts: list[int] = []
    pos = used = 0  # next unplaced index; units already in the current part
    end = len(text)
    k = 0
    while True:
        nxt = doubles[k] if k < len(doubles) else end
        room = cap - used
        if nxt - pos >= room and pos + room < end:
            # The current part fills up within the run of 1-unit characters.
            pos += room
            starts.append(pos)
            used = 0
            continue
        if nxt == end:
            return starts
        used += nxt - pos
        if used + 2 > cap:
            starts.append(nxt)
            used = 0
        used += 2
        pos = nxt + 1
        k += 1


def analyze_sms(text: str, *, allow_turkish_shift: bool = True) -> SmsEncoding:
    """Pick the cheapest encoding for ``text`` and count its units and parts.

    ``gsm7`` when every character is in the default alphabet or its extension table; else
    ``gsm7_turkish`` when allowed and the Turkish single-shift table covers the rest; else
    ``ucs2``.
    """
    encoding, units = _measure(text, allow_turkish_shift)
    single, cap = _CAPACITY[encoding]
    if units <= single:
        return SmsEncoding(encoding, 1 if text else 0, units, len(text), single)
    # Greedy packing leaves at most 1 unit unused in a full part (only when a 2-unit
    # character does not fit), so the count is pinned between these two bounds; walking the
    # text is only needed near a part boundary.
    segments = -(-units // cap)
    at_most = segments if units == len(text) else -(-units // (cap - 1))
    if segments != at_most:
        segments = len(_part_starts(text, encoding, units, cap)) + 1
    return SmsEncoding(encoding, segments, units, len(text), cap)


def gsm7_units(text: str, *, turkish_shift: bool = False) -> int | None:
    """Septets ``text`` takes in GSM-7, or ``None`` if it is not representable.

    With ``turkish_shift`` the Turkish single-shift table replaces the default extension
    table (it is a superset of it).
    """
    if turkish_shift:
        if not _ALL_TURKISH.issuperset(text):
            return None
        return _count_units(text, _EXT_TURKISH_CHARS)
    if not _ALL_DEFAULT.issuperset(text):
        return None
    return _count_units(text, _EXT_DEFAULT_CHARS)


def split_sms(text: str, *, allow_turkish_shift: bool = True) -> list[str]:
    """The parts ``text`` is sent as, in order; ``"".join`` of them is ``text``."""
    encoding, units = _measure(text, allow_turkish_shift)
    single, cap = _CAPACITY[encoding]
    if units <= single:
        return [text] if text else []
    starts = _part_starts(text, encoding, units, cap)
    bounds = [0, *starts, len(text)]
    return [text[a:b] for a, b in pairwise(bounds)]
