"""Recipient normalization per channel (unified_messaging._recipients, DESIGN.md D5)."""

from __future__ import annotations

import re
import sys
import unicodedata
from typing import Any, cast

import phonenumbers
import pytest
from hypothesis import given
from hypothesis import strategies as st

from unified_messaging._errors import InvalidRecipient
from unified_messaging._models import BulkItem, SendRequest
from unified_messaging._recipients import (
    _SPACES,
    MAX_RECIPIENT_LENGTH,
    _lookup,
    is_chat_username,
    normalize_bizchat_number,
    normalize_chat_target,
    normalize_recipient,
    normalize_turkish_mobile,
)
from unified_messaging._types import Channel

CHANNELS: tuple[Channel, ...] = ("sms", "chatbot", "bizchat")
E164 = "+905550000001"

# The magic test numbers +90 555 000 00 01 … 13.
MAGIC_NUMBERS = [f"+90555000{i:04d}" for i in range(1, 14)]

# Prefixes whose whole 7-digit range is MOBILE in phonenumbers' Turkish metadata (checked
# against every prefix 500-599). Left out on purpose: 512 (PAGER), 561 and 582 (only a few
# sub-ranges are mobile), 592 (PERSONAL_NUMBER sub-ranges), and the unallocated rest.
MOBILE_PREFIXES = [
    *range(500, 511),
    516,
    524,
    *range(530, 560),
    562,
    564,
    572,
    574,
    575,
    594,
    596,
]

FULL_WIDTH = str.maketrans("0123456789", "０１２３４５６７８９")
ARABIC_INDIC = str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")


def _rejects(func: Any, raw: Any) -> InvalidRecipient:
    with pytest.raises(InvalidRecipient) as info:
        func(raw)
    return info.value


# --- sms: accepted forms -----------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        "+905550000001",
        "+90 555 000 00 01",
        "+90 555 000 0001",
        "+90-555-000-00-01",
        "+90.555.000.00.01",
        "+90 (555) 000-00-01",
        "+90 (0555) 000 00 01",
        "+90/555/0000001",
        "05550000001",
        "0 555 000 00 01",
        "0(555) 000 00 01",
        "(0555) 000 00 01",
        "0555-000-00-01",
        "5550000001",
        "555 000 00 01",
        "(555) 000 0001",
        "905550000001",
        "90 555 000 00 01",
        "00905550000001",
        "0090 555 000 00 01",
        "00 90 555 000 00 01",
        "  +90 555 000 00 01  ",
        "\u00a0+90\u202f555\u00a0000\u00a000\u00a001\u3000",
        "+90\u2013555\u2013000\u201300\u201301",
        "５５５ ０００ ００ ０１",
        "＋９０ ５５５ ０００ ００ ０１",
        "＋90（555）000－00－01",
        "+٩٠ ٥٥٥ ٠٠٠ ٠٠ ٠١",
        "0555 000 00 0１",
    ],
)
def test_sms_accepts_every_typed_form(raw: str) -> None:
    assert normalize_turkish_mobile(raw) == E164
    assert normalize_recipient("sms", raw) == E164


@pytest.mark.parametrize("e164", MAGIC_NUMBERS)
def test_magic_test_numbers_are_mobile(e164: str) -> None:
    national = e164.removeprefix("+90")
    assert normalize_turkish_mobile(e164) == e164
    assert normalize_turkish_mobile("0" + national) == e164
    assert normalize_turkish_mobile(f"+90 {national[:3]} {national[3:6]} {national[6:]}") == e164
    assert normalize_bizchat_number(e164) == e164


@pytest.mark.parametrize(
    ("raw", "e164"),
    [
        ("0532 123 45 67", "+905321234567"),
        ("0505 999 88 77", "+905059998877"),
        ("+90 544 000 00 00", "+905440000000"),
        ("0510 000 00 00", "+905100000000"),  # 510 is a mobile range too
        ("0561 011 00 00", "+905610110000"),  # one of 561's few mobile sub-ranges
    ],
)
def test_sms_other_mobile_ranges(raw: str, e164: str) -> None:
    assert normalize_turkish_mobile(raw) == e164


# --- sms: rejections ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        # landlines
        "+90 212 555 00 00",
        "0312 555 00 00",
        "02165550000",
        "2125550000",
        # service numbers and non-mobile 5xx ranges (pinned to phonenumbers' TR metadata)
        "0850 222 00 00",  # VOIP
        "0800 000 00 00",  # toll free
        "0900 000 00 00",  # premium rate
        "444 0 444",  # UAN
        "0512 000 00 00",  # PAGER
        "0561 000 00 00",  # 561 outside its mobile sub-ranges
        "0511 000 00 00",  # unallocated
        # foreign
        "+44 7911 123456",
        "0044 7911 123456",
        "+1 202 555 0123",
        "+49 151 23456789",
        # too short / too long
        "555000000",
        "+90555000000",
        "055500000011",
        "+9055500000011",
        "5",
        "+",
        "+90",
        "0",
        "()",
        "---",
        # wrong prefixes
        "0905550000001",
        "1905550000001",
    ],
)
def test_sms_rejects_non_mobile_foreign_and_wrong_length(raw: str) -> None:
    _rejects(normalize_turkish_mobile, raw)
    _rejects(lambda value: normalize_recipient("sms", value), raw)


GARBAGE = [
    "",
    " ",
    "   \u00a0\u3000",
    "abc",
    "0555 ABC 00 01",
    "+90 555 000 00 01 ext 5",
    "+90 555 000 00 01;1",
    "tel:+905550000001",
    "+90+5550000001",
    "90 + 5550000001",
    "++905550000001",
    "'; DROP TABLE messages; --",
    "<script>alert(1)</script>",
    "+90555\x000000001",
    "+905550000001\n",
    "\t+905550000001",
    "+90555\u200b0000001",  # zero-width space (format character)
    "\u202e+905550000001",  # bidi override
    "+90555\u00ad0000001",  # soft hyphen
    "²⁵⁵⁵⁰⁰⁰⁰⁰⁰¹",  # superscripts are digits but not decimal digits
    "5" * 10_000,
    "+90 555 000 00 01" + " " * 100,
    "x" * 10_000,
]


@pytest.mark.parametrize("raw", GARBAGE)
@pytest.mark.parametrize("channel", CHANNELS)
def test_garbage_is_rejected_on_every_channel(channel: Channel, raw: str) -> None:
    err = _rejects(lambda value: normalize_recipient(channel, value), raw)
    _assert_safe_message(err.message)


def test_over_long_input_is_rejected_and_echo_truncated() -> None:
    raw = "9" * 10_000
    for func in (normalize_turkish_mobile, normalize_chat_target, normalize_bizchat_number):
        message = _rejects(func, raw).message
        assert "9" * 65 not in message
        assert len(message) < 200
        assert "10000" in message


def test_limit_is_exactly_the_contracts() -> None:
    padded = E164.center(MAX_RECIPIENT_LENGTH)
    assert normalize_turkish_mobile(padded) == E164
    _rejects(normalize_turkish_mobile, padded + " ")


def test_request_models_take_the_same_limit() -> None:
    # One constant: the models' ``to`` (REST/MCP schema) and the normalizer's check agree.
    for model in (SendRequest, BulkItem):
        assert model.model_json_schema()["properties"]["to"]["maxLength"] == MAX_RECIPIENT_LENGTH


def test_control_characters_are_escaped_in_messages() -> None:
    message = _rejects(normalize_turkish_mobile, "+90\x00\x1b[31m555\n").message
    assert "\\x00" in message
    assert "\\x1b" in message
    _assert_safe_message(message)


@pytest.mark.parametrize("channel", CHANNELS)
@pytest.mark.parametrize("raw", [None, 5550000001, b"+905550000001", ["+905550000001"]])
def test_non_strings_are_rejected(channel: Channel, raw: object) -> None:
    _rejects(lambda value: normalize_recipient(channel, cast(str, value)), raw)


def test_unknown_channel_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="unknown channel"):
        normalize_recipient(cast(Channel, "email"), "a@b.c")


def test_phonenumbers_exceptions_never_escape_the_lookup() -> None:
    # Each of these makes phonenumbers.parse raise NumberParseException.
    for candidate in ["", "+", "+0", "+999123456", "0", "00", "+9"]:
        assert _lookup(candidate) is None


def test_spaces_are_exactly_unicode_space_separators() -> None:
    zs = {chr(cp) for cp in range(sys.maxunicode + 1) if unicodedata.category(chr(cp)) == "Zs"}
    assert set(_SPACES) == zs


# --- chatbot -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("123456789", "123456789"),
        ("-1001234567890", "-1001234567890"),
        ("-42", "-42"),
        ("0", "0"),
        ("9" * 20, "9" * 20),
        ("-" + "9" * 20, "-" + "9" * 20),
        (" 123 ", "123"),
        ("\u00a0-1001234567890\u3000", "-1001234567890"),
        ("@username", "@username"),
        ("@Some_Bot_42", "@Some_Bot_42"),
        ("@abcde", "@abcde"),
        ("@" + "a" * 32, "@" + "a" * 32),
        ("@_____", "@_____"),
        ("  @username  ", "@username"),
    ],
)
def test_chat_targets_accepted(raw: str, expected: str) -> None:
    assert normalize_chat_target(raw) == expected
    assert normalize_recipient("chatbot", raw) == expected


@pytest.mark.parametrize(
    "raw",
    [
        "+123",
        "007",
        "-0",
        "-007",
        "--1",
        "1-2",
        "1 2",
        "12.0",
        "1e9",
        "0x1f",
        "9" * 21,
        "-" + "9" * 21,
        "١٢٣",  # Arabic-Indic digits: the id goes to the API as typed
        "１２３",
        "@user",
        "@" + "a" * 33,
        "@user name",
        "@user-name",
        "@üsername",
        "@@username",
        "username",
        "@",
        "@username\n",
        "123\t",
        "-",
        "@username'; DROP TABLE x; --",
    ],
)
def test_chat_targets_rejected(raw: str) -> None:
    _rejects(normalize_chat_target, raw)


def test_is_chat_username() -> None:
    assert is_chat_username("@username")
    assert not is_chat_username("-1001234567890")
    assert not is_chat_username("0")
    assert not is_chat_username("@abc")
    assert not is_chat_username("")


# --- bizchat -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "e164"),
    [
        ("+90 555 000 00 01", E164),
        ("0555 000 00 01", E164),
        ("5550000001", E164),  # bare digits: Turkish first
        ("905550000001", E164),
        ("0090 555 000 00 01", E164),
        ("+90 212 555 00 00", "+902125550000"),  # any type, landlines included
        ("0212 555 00 00", "+902125550000"),
        ("2125550000", "+902125550000"),  # valid as Turkish, so never read as +212
        ("+44 7911 123456", "+447911123456"),
        ("447911123456", "+447911123456"),  # invalid as Turkish, so read as international
        ("0044 7911 123456", "+447911123456"),
        ("+1 (202) 555-0123", "+12025550123"),
        ("12025550123", "+12025550123"),
        ("+49 151 23456789", "+4915123456789"),
        ("＋４４ ７９１１ １２３４５６", "+447911123456"),
    ],
)
def test_bizchat_accepts_any_valid_number(raw: str, e164: str) -> None:
    assert normalize_bizchat_number(raw) == e164
    assert normalize_recipient("bizchat", raw) == e164


@pytest.mark.parametrize(
    "raw",
    [
        "+999 123 456",  # no such country code
        "+44 123",
        "+90 555 000 00",
        "0044 123",
        "044 7911 123456",  # "0…" is Turkish national, never international
        "123",
        "+1 000 000 0000",
        "@username",
        "-1001234567890",
    ],
)
def test_bizchat_rejects_invalid_numbers(raw: str) -> None:
    _rejects(normalize_bizchat_number, raw)


# Tristan da Cunha (TA) alone has no example mobile number in the metadata.
EXAMPLE_MOBILES = {
    region: example
    for region in sorted(phonenumbers.SUPPORTED_REGIONS)
    if (
        example := phonenumbers.example_number_for_type(region, phonenumbers.PhoneNumberType.MOBILE)
    )
    is not None
}


@pytest.mark.parametrize("region", EXAMPLE_MOBILES)
def test_bizchat_accepts_every_regions_example_mobile(region: str) -> None:
    example = EXAMPLE_MOBILES[region]
    e164 = phonenumbers.format_number(example, phonenumbers.PhoneNumberFormat.E164)
    international = phonenumbers.format_number(
        example, phonenumbers.PhoneNumberFormat.INTERNATIONAL
    )
    assert normalize_bizchat_number(e164) == e164
    assert normalize_bizchat_number(international) == e164


# --- properties ----------------------------------------------------------------------------

SEPARATORS = st.sampled_from(["", " ", "-", ".", " - ", "\u00a0", "/"])


@st.composite
def typed_turkish_mobiles(draw: st.DrawFn) -> tuple[str, str]:
    """A valid Turkish mobile typed some way a person would, and its E.164."""
    prefix = str(draw(st.sampled_from(MOBILE_PREFIXES)))
    tail = draw(st.from_regex(r"[0-9]{7}", fullmatch=True))
    sep = draw(SEPARATORS)
    body = sep.join([tail[:3], tail[3:5], tail[5:]])
    lead, area = draw(
        st.one_of(
            # national, with or without the trunk "0"
            st.tuples(st.just(""), st.sampled_from([prefix, f"({prefix})"])),
            st.tuples(st.just(""), st.sampled_from([f"0{prefix}", f"(0{prefix})", f"0({prefix})"])),
            # international, with or without "+"
            st.tuples(
                st.sampled_from(["+90", "+90 ", "90", "0090", "00 90"]),
                st.sampled_from([prefix, f"({prefix})"]),
            ),
            # "+90 (0555) …": the trunk "0" kept after the country code
            st.tuples(st.just("+90"), st.sampled_from([f"0{prefix}", f"(0{prefix})"])),
        )
    )
    raw = f"{lead}{draw(SEPARATORS)}{area}{sep}{body}"
    if draw(st.booleans()):
        raw = raw.translate(draw(st.sampled_from([FULL_WIDTH, ARABIC_INDIC])))
    raw = draw(st.sampled_from(["", " ", "\u00a0"])) + raw + draw(st.sampled_from(["", " "]))
    return raw, f"+90{prefix}{tail}"


@given(typed_turkish_mobiles())
def test_property_every_typed_form_gives_the_same_e164(case: tuple[str, str]) -> None:
    raw, e164 = case
    assert normalize_turkish_mobile(raw) == e164
    assert normalize_bizchat_number(raw) == e164


@given(typed_turkish_mobiles())
def test_property_sms_is_idempotent(case: tuple[str, str]) -> None:
    once = normalize_turkish_mobile(case[0])
    assert normalize_turkish_mobile(once) == once


PHONE_ISH = st.from_regex(r"[+]?[0-9 ()./-]{1,20}", fullmatch=True)


@given(PHONE_ISH)
def test_property_accepted_phone_numbers_normalize_idempotently(raw: str) -> None:
    for func in (normalize_turkish_mobile, normalize_bizchat_number):
        try:
            once = func(raw)
        except InvalidRecipient:
            continue
        assert re.fullmatch(r"\+[1-9][0-9]{3,14}", once)
        assert func(once) == once


@given(st.sampled_from(sorted(phonenumbers.SUPPORTED_REGIONS)), st.data())
def test_property_bizchat_is_idempotent_across_regions(region: str, data: st.DataObject) -> None:
    kind = data.draw(
        st.sampled_from(
            [phonenumbers.PhoneNumberType.MOBILE, phonenumbers.PhoneNumberType.FIXED_LINE]
        )
    )
    example = phonenumbers.example_number_for_type(region, kind)
    if example is None:
        return
    once = normalize_bizchat_number(
        phonenumbers.format_number(example, phonenumbers.PhoneNumberFormat.INTERNATIONAL)
    )
    assert normalize_bizchat_number(once) == once


@given(st.sampled_from(CHANNELS), st.one_of(st.text(), PHONE_ISH))
def test_property_arbitrary_text_only_ever_raises_invalid_recipient(
    channel: Channel, raw: str
) -> None:
    try:
        result = normalize_recipient(channel, raw)
    except InvalidRecipient as err:
        _assert_safe_message(err.message)
    else:
        assert isinstance(result, str)
        assert result.isascii()
        assert result.isprintable()


@given(st.integers(min_value=-(10**20) + 1, max_value=10**20 - 1))
def test_property_chat_ids_round_trip(chat_id: int) -> None:
    assert normalize_chat_target(str(chat_id)) == str(chat_id)
    assert not is_chat_username(str(chat_id))


@given(st.from_regex(r"@[A-Za-z0-9_]{5,32}", fullmatch=True))
def test_property_usernames_per_pattern_are_accepted(username: str) -> None:
    assert normalize_chat_target(username) == username
    assert is_chat_username(username)


USERNAME = re.compile(r"@[A-Za-z0-9_]{5,32}", re.ASCII)


@given(st.text().map(lambda rest: "@" + rest))
def test_property_usernames_outside_the_pattern_are_rejected(raw: str) -> None:
    expected_ok = len(raw) <= MAX_RECIPIENT_LENGTH and USERNAME.fullmatch(raw.strip(_SPACES))
    if expected_ok:
        assert normalize_chat_target(raw) == raw.strip(_SPACES)
    else:
        _rejects(normalize_chat_target, raw)


# --- helpers -------------------------------------------------------------------------------


def _assert_safe_message(message: str) -> None:
    # repr() escapes every non-printable character; the longest escape is 10 characters.
    assert message.isprintable()
    assert len(message) <= 150 + 10 * 64
