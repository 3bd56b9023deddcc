"""Commercial content hints (D33): the rules over a text, the workspace's settings, and the
admission rule, as pure functions; property tests for the Turkish folding they match with
and for the parts counted with the operator's code (BTK's 5 characters)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from unified_messaging import ContentRules, RequestInvalid
from unified_messaging._encoding import analyze_sms, split_sms
from unified_messaging.content.check import content_refusal
from unified_messaging.content.fold import contains_words, fold, words
from unified_messaging.content.parts import OPERATOR_CODE_LENGTH, count_parts
from unified_messaging.content.rules import hints_for, lint_text, normalize_mersis

BRAND = ContentRules(trade_name="Örnek Gıda A.Ş.", mersis="0123456789012345")
COMPLETE = (
    "KAMPANYA: Örnek Gıda A.Ş. kışa özel %20 indirim! Mersis: 0123 4567 8901 2345. "
    "Listeden çıkmak için RET ORNEK yazıp 3338'e gönderin."
)


def codes(text: str, rules: ContentRules | None = None) -> list[str]:
    return [hint.code for hint in hints_for(text, rules)]


# ----------------------------------------------------------------------------- the hints


def test_a_complete_text_has_no_hints() -> None:
    assert codes(COMPLETE, BRAND) == []


def test_a_bare_text_misses_everything_in_a_stable_order() -> None:
    assert codes("Yeni sezon indirimi başladı", BRAND) == [
        "OPT_OUT_MISSING", "TRADE_NAME_MISSING", "MERSIS_MISSING", "COMMERCIAL_TAG_MISSING"
    ]  # fmt: skip
    assert codes("Yeni sezon indirimi başladı") == [
        "OPT_OUT_MISSING", "BRAND_NOT_SET", "COMMERCIAL_TAG_MISSING"
    ]  # fmt: skip


@pytest.mark.parametrize(
    "opt_out",
    ["RET yazıp 3338'e gönderin", "ret yazip 3338 e gonderin", "İptal için RET ORNEK → 3338",
     "RET YAZIP 3338'E SMS", "3338'e RET yazın"],
)  # fmt: skip
def test_iys_opt_out_is_found_however_it_is_typed(opt_out: str) -> None:
    assert "OPT_OUT_MISSING" not in codes(f"KAMPANYA indirim. {opt_out}")


@pytest.mark.parametrize(
    "text",
    ["KAMPANYA ticaret merkezimizde 3338 TL indirim", "KAMPANYA RET yazın", "KAMPANYA 33380 RET",
     "KAMPANYA RETYAZIP 3338"],
)  # fmt: skip
def test_ret_and_3338_count_only_as_whole_words(text: str) -> None:
    assert "OPT_OUT_MISSING" in codes(text)


def test_the_brands_own_opt_out_phrase_counts_as_one() -> None:
    rules = ContentRules(opt_out="IPTAL yazıp 4545'e gönderin")
    assert "OPT_OUT_MISSING" not in codes("KAMPANYA indirim. İptal yazip 4545'e GÖNDERİN", rules)
    assert "OPT_OUT_MISSING" in codes("KAMPANYA indirim. İptal yazip 4546'e gönderin", rules)
    [hint] = [h for h in hints_for("KAMPANYA", rules) if h.code == "OPT_OUT_MISSING"]
    assert "IPTAL yazıp 4545'e gönderin" in hint.message


@pytest.mark.parametrize(
    "mersis_as_written",
    ["0123456789012345", "0123 4567 8901 2345", "0123-4567-8901-2345", "0123.4567.8901.2345"],
)
def test_the_mersis_number_may_be_grouped(mersis_as_written: str) -> None:
    assert "MERSIS_MISSING" not in codes(f"KAMPANYA Mersis No: {mersis_as_written}", BRAND)


@pytest.mark.parametrize(
    "text", ["KAMPANYA 90123456789012345", "KAMPANYA 01234567890123456", "KAMPANYA 012345678901234"]
)
def test_the_mersis_number_inside_a_longer_number_does_not_count(text: str) -> None:
    assert "MERSIS_MISSING" in codes(text, BRAND)


def test_the_trade_name_matches_without_case_diacritics_or_punctuation() -> None:
    assert "TRADE_NAME_MISSING" not in codes("KAMPANYA ORNEK GIDA A S", BRAND)
    assert "TRADE_NAME_MISSING" not in codes("KAMPANYA örnek gıda a.ş.", BRAND)
    assert "TRADE_NAME_MISSING" in codes("KAMPANYA Örnek Gıdalar A.Ş.", BRAND)
    only_name = ContentRules(trade_name="Örnek")
    assert codes("KAMPANYA ÖRNEK. RET 3338", only_name) == []  # MERSİS not set: not asked


@pytest.mark.parametrize("start", ["KAMPANYA", "[Tanıtım]", "Bilgilendirme:", "BİLGİLENDİRME -"])
def test_the_tag_opens_the_text(start: str) -> None:
    assert "COMMERCIAL_TAG_MISSING" not in codes(f"{start} indirim")


@pytest.mark.parametrize("text", ["İndirim KAMPANYA", "", "   ", "Kampanyalı ürünler"])
def test_a_tag_elsewhere_or_none_is_missing(text: str) -> None:
    assert "COMMERCIAL_TAG_MISSING" in codes(text)


def test_lint_counts_the_parts_with_the_operators_code() -> None:
    lint = lint_text("KAMPANYA " + "x" * 147)  # 156 characters: one part, two once sent
    assert (lint.parts.parts, lint.parts.parts_with_operator_code) == (1, 2)
    assert lint.codes == ("OPT_OUT_MISSING", "BRAND_NOT_SET")


# ----------------------------------------------------------------------------- settings


@pytest.mark.parametrize(
    ("rules", "field"),
    [
        ({"mersis": "012345678901234"}, "mersis"),
        ({"mersis": "01234567890123456"}, "mersis"),
        ({"mersis": "０１２３４５６７８９０１２３４５"}, "mersis"),  # full-width digits
        ({"trade_name": ""}, "trade_name"),
        ({"trade_name": "x" * 161}, "trade_name"),
        ({"trade_name": "Örnek\nGıda"}, "trade_name"),
        ({"opt_out": "... !!"}, "opt_out"),
        ({"refuse": True}, "refuse"),
        ({"refuse": True, "opt_out": "IPTAL 4545"}, "refuse"),
    ],
)  # fmt: skip
def test_bad_settings_are_a_400_naming_the_setting(rules: dict[str, object], field: str) -> None:
    with pytest.raises(RequestInvalid) as refused:
        ContentRules(**rules)  # type: ignore[arg-type]
    assert [detail.field for detail in refused.value.details] == [field]


def test_settings_keep_as_json_and_the_defaults_as_nothing() -> None:
    rules = ContentRules(
        trade_name="Örnek", mersis="0123456789012345", opt_out="IPTAL", refuse=True
    )
    assert ContentRules.from_json(rules.to_json()) == rules
    assert ContentRules().to_json() is None
    assert ContentRules.from_json(None) == ContentRules()


def test_a_mersis_number_keeps_its_digits() -> None:
    assert normalize_mersis(" 0123 4567-8901.2345 ") == "0123456789012345"


# ----------------------------------------------------------------------------- the refusal


def test_only_a_commercial_sms_of_a_refusing_workspace_is_refused() -> None:
    refusing = ContentRules(trade_name="Örnek", refuse=True)
    bare = "indirim"
    refusal = content_refusal(refusing, "commercial_individual", "sms", bare)
    assert refusal is not None and refusal.code == "COMMERCIAL_CONTENT_REFUSED"
    assert [h.code for h in refusal.hints] == [
        "OPT_OUT_MISSING", "TRADE_NAME_MISSING", "COMMERCIAL_TAG_MISSING"
    ]  # fmt: skip
    assert "OPT_OUT_MISSING" in refusal.message
    assert content_refusal(refusing, "commercial_merchant", "sms", bare) is not None
    assert content_refusal(refusing, "informational", "sms", bare) is None
    assert content_refusal(refusing, "commercial_individual", "bizchat", bare) is None
    assert content_refusal(ContentRules(trade_name="Örnek"), "commercial_individual", "sms",
                           bare) is None  # fmt: skip
    assert content_refusal(refusing, "commercial_individual", "sms",
                           "KAMPANYA Örnek: RET yazıp 3338'e gönderin") is None  # fmt: skip


# ----------------------------------------------------------------------------- folding

_TURKISH = "abcçdefgğhıijklmnoöprsştuüvyzABCÇDEFGĞHIİJKLMNOÖPRSŞTUÜVYZ0123456789 .,'!-:"
_TURKISH_TEXT = st.text(alphabet=_TURKISH, max_size=80)
_UPPER = str.maketrans({"i": "İ", "ı": "I"})
_LOWER = str.maketrans({"İ": "i", "I": "ı"})
_BARE = str.maketrans("çğıöşüÇĞİÖŞÜ", "cgiosuCGIOSU")


def turkish_upper(text: str) -> str:
    return text.translate(_UPPER).upper()


def turkish_lower(text: str) -> str:
    return text.translate(_LOWER).lower()


@given(st.text(max_size=200))
def test_folding_twice_changes_nothing(text: str) -> None:
    assert fold(fold(text)) == fold(text)


@given(_TURKISH_TEXT)
def test_folding_ignores_turkish_case(text: str) -> None:
    assert fold(turkish_upper(text)) == fold(text) == fold(turkish_lower(text))
    assert fold(text.upper()) == fold(text.lower()) == fold(text)  # English casing, too


@given(_TURKISH_TEXT)
def test_folding_ignores_turkish_diacritics(text: str) -> None:
    assert fold(text.translate(_BARE)) == fold(text)
    assert re.fullmatch(r"[a-z0-9 .,'!\-:]*", fold(text))


@given(st.text(max_size=200))
def test_folded_words_have_no_marks_and_no_capitals(text: str) -> None:
    for word in words(text):
        assert word == fold(word)
        assert word and word == word.lower()


@given(
    st.lists(st.text(alphabet=_TURKISH[:58], min_size=1, max_size=8), min_size=1, max_size=4),
    _TURKISH_TEXT,
    _TURKISH_TEXT,
)
def test_a_phrase_is_found_whatever_its_casing_and_marks(
    phrase_words: list[str], before: str, after: str
) -> None:
    phrase = " ".join(phrase_words)
    text = f"{before} {turkish_upper(phrase).translate(_BARE)} {after}"
    assert contains_words(words(text), words(phrase))
    rules = ContentRules(opt_out=turkish_lower(phrase))
    assert "OPT_OUT_MISSING" not in [hint.code for hint in hints_for(text, rules)]


# ----------------------------------------------------------------------------- parts

_SMS_TEXT = st.one_of(
    st.text(alphabet="abc xyz0123456789.,", max_size=700),  # GSM-7
    st.text(alphabet="abcşğıİ€{ ", max_size=700),  # the Turkish shift, 2-unit characters
    st.text(alphabet="abcжş😀 ", max_size=400),  # UCS-2, a surrogate pair
    st.text(max_size=300),
)


def reference_parts(text: str, turkish_shift: bool) -> int:
    """Independently: the parts of ``text`` once a code of 5 one-unit characters is on it."""
    return len(split_sms(text + " B123", allow_turkish_shift=turkish_shift))


@given(_SMS_TEXT, st.booleans(), st.from_regex(r"\AB[0-9]{3}\Z"))
def test_parts_with_the_code_are_those_of_the_text_as_sent(
    text: str, shift: bool, code: str
) -> None:
    counted = count_parts(text, turkish_shift=shift)
    sent = analyze_sms(f"{text} {code}", allow_turkish_shift=shift)
    assert counted.parts_with_operator_code == sent.segments == reference_parts(text, shift)
    assert counted.encoding == sent.encoding  # the code never changes the encoding
    assert counted.parts == analyze_sms(text, allow_turkish_shift=shift).segments


@given(_SMS_TEXT, st.booleans())
def test_the_code_adds_at_most_one_part(text: str, shift: bool) -> None:
    counted = count_parts(text, turkish_shift=shift)
    assert counted.parts <= counted.parts_with_operator_code <= counted.parts + 1
    assert counted.characters == len(text)


@pytest.mark.parametrize(
    ("alphabet", "single"),
    [("a", 160), ("ş", 155), ("ж", 70)],  # GSM-7, Turkish shift (ş is 2 units: see below)
)
def test_a_single_part_holds_five_characters_less(alphabet: str, single: int) -> None:
    unit = 2 if alphabet == "ş" else 1
    fits = (single - OPERATOR_CODE_LENGTH) // unit
    assert count_parts(alphabet * fits).parts_with_operator_code == 1
    assert count_parts(alphabet * (fits + 1)).parts_with_operator_code == 2
