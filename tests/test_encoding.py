"""SMS encoding choice, unit counting and part splitting (unified_messaging._encoding)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from unified_messaging._encoding import (
    _GSM7_BASIC_TABLE,
    _GSM7_DEFAULT_EXTENSION,
    _GSM7_TURKISH_SINGLE_SHIFT,
    SmsEncoding,
    analyze_sms,
    gsm7_units,
    split_sms,
)

TURKISH = "Şişli'de ığdır çok güzel, İstanbul"
EMOJI = "\U0001f600"  # 😀, outside the BMP: a surrogate pair in UTF-16

CAPACITY = {"gsm7": (160, 153), "gsm7_turkish": (155, 149), "ucs2": (70, 67)}


def _utf16_units(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


# --- the tables themselves -------------------------------------------------------------


def test_basic_table_is_128_distinct_septets() -> None:
    assert len(_GSM7_BASIC_TABLE) == 128
    assert len(set(_GSM7_BASIC_TABLE)) == 128


@pytest.mark.parametrize(
    ("char", "septet"),
    [
        ("@", 0x00),
        ("£", 0x01),
        ("$", 0x02),
        ("¥", 0x03),
        ("Ç", 0x09),
        ("\n", 0x0A),
        ("\r", 0x0D),
        ("Δ", 0x10),
        ("_", 0x11),
        ("Ξ", 0x1A),
        ("Æ", 0x1C),
        ("É", 0x1F),
        (" ", 0x20),
        ("¤", 0x24),
        ("¡", 0x40),
        ("Ü", 0x5E),
        ("§", 0x5F),
        ("¿", 0x60),
        ("à", 0x7F),
    ],
)
def test_basic_table_positions(char: str, septet: int) -> None:
    assert _GSM7_BASIC_TABLE.index(char) == septet


def test_turkish_single_shift_table() -> None:
    turkish_only = {
        k: v for k, v in _GSM7_TURKISH_SINGLE_SHIFT.items() if k not in _GSM7_DEFAULT_EXTENSION
    }
    assert turkish_only == {
        0x47: "Ğ",
        0x49: "İ",
        0x53: "Ş",
        0x63: "ç",
        0x67: "ğ",
        0x69: "ı",
        0x73: "ş",
    }
    # The shift table keeps every default extension character at the same septet.
    assert _GSM7_DEFAULT_EXTENSION.items() <= _GSM7_TURKISH_SINGLE_SHIFT.items()
    assert set(_GSM7_DEFAULT_EXTENSION.values()) == set("\x0c^{}\\[~]|€")


# --- known strings ----------------------------------------------------------------------


def test_merhaba() -> None:
    assert analyze_sms("Merhaba") == SmsEncoding("gsm7", 1, 7, 7, 160)
    assert split_sms("Merhaba") == ["Merhaba"]


def test_empty_text_has_no_segments() -> None:
    assert analyze_sms("") == SmsEncoding("gsm7", 0, 0, 0, 160)
    assert split_sms("") == []
    assert gsm7_units("") == 0


@pytest.mark.parametrize(
    ("length", "segments"),
    [(1, 1), (160, 1), (161, 2), (306, 2), (307, 3), (459, 3), (460, 4), (1600, 11)],
)
def test_gsm7_boundaries(length: int, segments: int) -> None:
    text = "a" * length
    info = analyze_sms(text)
    assert (info.encoding, info.units, info.segments) == ("gsm7", length, segments)
    assert info.per_segment == (160 if segments == 1 else 153)
    assert len(split_sms(text)) == segments


def test_whole_basic_table_is_gsm7() -> None:
    text = _GSM7_BASIC_TABLE.replace("\x1b", "")
    info = analyze_sms(text)
    assert (info.encoding, info.units, info.segments) == ("gsm7", 127, 1)


@pytest.mark.parametrize("char", list("\x0c^{}\\[~]|€"))
def test_extension_char_costs_two_septets(char: str) -> None:
    assert gsm7_units(char) == 2
    info = analyze_sms("a" * 158 + char)
    assert (info.encoding, info.units, info.segments) == ("gsm7", 160, 1)
    info = analyze_sms("a" * 159 + char)
    assert (info.encoding, info.units, info.segments) == ("gsm7", 161, 2)


def test_euro_at_limit_splits_into_two_parts() -> None:
    parts = split_sms("a" * 159 + "€")
    assert parts == ["a" * 153, "a" * 6 + "€"]


def test_escape_sequence_is_not_split_at_a_part_boundary() -> None:
    # 152 'a' leave one septet in part 1; the 2-septet '€' must open part 2.
    text = "a" * 152 + "€" + "a" * 152
    info = analyze_sms(text)
    # 306 units would fit 2 × 153 if the escape could be split; it cannot.
    assert (info.units, info.segments) == (306, 3)
    parts = split_sms(text)
    assert parts == ["a" * 152, "€" + "a" * 151, "a"]


def test_escape_that_exactly_fills_a_part_stays_in_it() -> None:
    text = "a" * 151 + "€" + "a" * 153
    assert split_sms(text) == ["a" * 151 + "€", "a" * 153]
    assert analyze_sms(text).segments == 2


def test_turkish_text_uses_single_shift() -> None:
    info = analyze_sms(TURKISH)
    # Ş ş ı ğ ı ç İ are shifted (2 septets each); ü, ' and the rest are default table.
    assert info == SmsEncoding("gsm7_turkish", 1, len(TURKISH) + 7, len(TURKISH), 155)
    assert gsm7_units(TURKISH) is None
    assert gsm7_units(TURKISH, turkish_shift=True) == len(TURKISH) + 7


def test_turkish_text_without_shift_is_ucs2() -> None:
    info = analyze_sms(TURKISH, allow_turkish_shift=False)
    assert info == SmsEncoding("ucs2", 1, len(TURKISH), len(TURKISH), 70)
    assert split_sms(TURKISH, allow_turkish_shift=False) == [TURKISH]


def test_lowercase_c_cedilla_needs_the_turkish_shift() -> None:
    # The default table has only capital Ç (0x09); ç is in the Turkish shift table.
    assert analyze_sms("Ç").encoding == "gsm7"
    assert gsm7_units("Ç") == 1
    assert gsm7_units("ç") is None
    assert gsm7_units("ç", turkish_shift=True) == 2
    assert analyze_sms("ç") == SmsEncoding("gsm7_turkish", 1, 2, 1, 155)
    assert analyze_sms("ç", allow_turkish_shift=False).encoding == "ucs2"


def test_default_extension_text_prefers_plain_gsm7() -> None:
    # Pure default text never takes the smaller Turkish capacity, even with escapes.
    info = analyze_sms("{" + "a" * 157)
    assert (info.encoding, info.units, info.segments) == ("gsm7", 159, 1)


def test_turkish_and_extension_chars_together() -> None:
    info = analyze_sms("ş€[")
    assert (info.encoding, info.units) == ("gsm7_turkish", 6)


def test_turkish_plus_non_gsm_is_ucs2() -> None:
    assert analyze_sms("şж").encoding == "ucs2"
    assert analyze_sms("ş`").encoding == "ucs2"  # backtick is in no GSM table


@pytest.mark.parametrize(
    ("filler", "segments"),
    [(153, 1), (154, 2), (296, 2), (297, 3)],
)
def test_turkish_boundaries(filler: int, segments: int) -> None:
    text = "ş" + "a" * filler
    info = analyze_sms(text)
    assert (info.encoding, info.units, info.segments) == ("gsm7_turkish", filler + 2, segments)
    assert info.per_segment == (155 if segments == 1 else 149)
    assert len(split_sms(text)) == segments


def test_turkish_shift_char_not_split_at_part_boundary() -> None:
    text = "a" * 148 + "ğ" + "a" * 148  # 298 units; 2 × 149 only if ğ could be split
    assert analyze_sms(text).segments == 3
    assert split_sms(text) == ["a" * 148, "ğ" + "a" * 147, "a"]


@pytest.mark.parametrize("char", ["ж", "م"])  # Cyrillic, Arabic
@pytest.mark.parametrize(
    ("length", "segments"), [(70, 1), (71, 2), (134, 2), (135, 3), (201, 3), (202, 4)]
)
def test_ucs2_boundaries(char: str, length: int, segments: int) -> None:
    text = char * length
    info = analyze_sms(text)
    assert (info.encoding, info.units, info.segments) == ("ucs2", length, segments)
    assert info.per_segment == (70 if segments == 1 else 67)
    step = 70 if segments == 1 else 67
    assert split_sms(text) == [text[i : i + step] for i in range(0, length, step)]


def test_emoji_counts_two_units() -> None:
    assert analyze_sms(EMOJI) == SmsEncoding("ucs2", 1, 2, 1, 70)
    info = analyze_sms("ж" * 66 + EMOJI)  # 68 units: still a single SMS
    assert (info.units, info.segments) == (68, 1)
    info = analyze_sms("ж" * 69 + EMOJI)  # 71 units
    assert (info.units, info.segments) == (71, 2)


def test_surrogate_pair_is_not_split_at_part_boundary() -> None:
    # 66 units in part 1 leave one free; the pair needs two, so it opens part 2.
    text = "ж" * 66 + EMOJI + "ж" * 66
    info = analyze_sms(text)
    assert (info.units, info.segments) == (134, 3)  # 2 × 67 would need a split pair
    parts = split_sms(text)
    assert parts == ["ж" * 66, EMOJI + "ж" * 65, "ж"]


def test_surrogate_pair_that_exactly_fills_a_part_stays_in_it() -> None:
    text = "ж" * 65 + EMOJI + "ж" * 67
    assert split_sms(text) == ["ж" * 65 + EMOJI, "ж" * 67]


def test_gsm_with_emoji_falls_back_to_ucs2() -> None:
    info = analyze_sms("Merhaba " + EMOJI)
    assert (info.encoding, info.units, info.characters) == ("ucs2", 10, 9)


@pytest.mark.parametrize(
    ("single", "double"), [("a", "€"), ("a", "ş"), ("ş", "a"), ("ж", EMOJI), (EMOJI, "ж")]
)
def test_every_position_around_boundaries(single: str, double: str) -> None:
    # Put one odd character at each position across the first two part boundaries.
    for at in range(130, 310):
        text = single * at + double + single * (320 - at)
        encoding = analyze_sms(text).encoding
        assert split_sms(text) == _reference_split(text, encoding), at


def test_lone_surrogate_counts_one_unit() -> None:
    # Only a malformed str can hold one; it must not crash the count.
    assert analyze_sms("a\ud800") == SmsEncoding("ucs2", 1, 2, 2, 70)


# --- properties -------------------------------------------------------------------------

_ALPHABET = st.sampled_from(
    [
        *"aZ09 @£\n\rÇÉß",  # default table
        *"€{}[]~|^\\\x0c",  # default extension
        *"ĞİŞçğış",  # Turkish shift
        "ж",
        "م",
        "`",
        EMOJI,
        "\U0001f1f9",  # regional indicator, also astral
    ]
)
_TEXTS = st.one_of(
    st.text(alphabet=_ALPHABET, max_size=700),
    st.text(max_size=400),
)


@given(_TEXTS, st.booleans())
def test_split_reassembles_and_matches_segments(text: str, allow: bool) -> None:
    parts = split_sms(text, allow_turkish_shift=allow)
    info = analyze_sms(text, allow_turkish_shift=allow)
    assert "".join(parts) == text
    assert info.segments == len(parts)
    assert all(parts)
    assert info.characters == len(text)


@given(_TEXTS, st.booleans())
def test_every_part_fits_its_capacity(text: str, allow: bool) -> None:
    info = analyze_sms(text, allow_turkish_shift=allow)
    parts = split_sms(text, allow_turkish_shift=allow)
    single, concatenated = CAPACITY[info.encoding]
    cap = single if len(parts) <= 1 else concatenated
    assert info.per_segment == cap
    for part in parts:
        if info.encoding == "ucs2":
            used = _utf16_units(part)
        else:
            shifted = gsm7_units(part, turkish_shift=info.encoding == "gsm7_turkish")
            assert shifted is not None
            used = shifted
        assert used <= cap


def _reference_split(text: str, encoding: str) -> list[str]:
    """Character-by-character greedy packing, written independently of the module."""
    shift = "ĞİŞçğış" if encoding == "gsm7_turkish" else ""
    doubles = set("\x0c^{}\\[~]|€" + shift)
    cost: Callable[[str], int] = (
        _utf16_units if encoding == "ucs2" else (lambda ch: 2 if ch in doubles else 1)
    )

    single, concatenated = CAPACITY[encoding]
    if sum(map(cost, text)) <= single:
        return [text] if text else []
    parts: list[str] = []
    current, used = "", 0
    for ch in text:
        if used + cost(ch) > concatenated:
            parts.append(current)
            current, used = "", 0
        current += ch
        used += cost(ch)
    return [*parts, current]


@given(_TEXTS, st.booleans())
def test_split_matches_reference_greedy_packing(text: str, allow: bool) -> None:
    encoding = analyze_sms(text, allow_turkish_shift=allow).encoding
    assert split_sms(text, allow_turkish_shift=allow) == _reference_split(text, encoding)


@given(
    st.lists(st.sampled_from(["a", "€", "ş", "ж", EMOJI]), max_size=40),
    st.integers(0, 200),
)
def test_split_near_boundaries(pieces: list[str], filler: int) -> None:
    # Long single-unit runs put the 2-unit characters at and around part boundaries.
    text = "a" * filler + "".join(pieces) + "a" * (200 - filler)
    encoding = analyze_sms(text).encoding
    assert split_sms(text) == _reference_split(text, encoding)


@given(_TEXTS, st.booleans())
def test_encoding_choice_is_sound(text: str, allow: bool) -> None:
    info = analyze_sms(text, allow_turkish_shift=allow)
    plain = gsm7_units(text)
    turkish = gsm7_units(text, turkish_shift=True)
    if info.encoding == "gsm7":
        assert plain == info.units
    elif info.encoding == "gsm7_turkish":
        assert allow
        assert plain is None
        assert turkish == info.units
    else:
        assert plain is None
        assert turkish is None or not allow
    if info.encoding != "ucs2":
        assert info.units >= info.characters
