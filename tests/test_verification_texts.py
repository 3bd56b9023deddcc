"""The default code texts (D34) fit one SMS part with the GSM-7 Turkish single shift and the
operator's suffix: Turkish operators add a short code of up to 5 characters to each message
(Vonage, "Turkey: SMS Features and Restrictions": "a short code will be added to the end of
messages"). On NetGSM's OTP route, with Turkish letters folded, they are one plain part."""

from __future__ import annotations

import pytest

from unified_messaging._encoding import analyze_sms
from unified_messaging.providers._netgsm_otp import otp_text
from unified_messaging.verifications._texts import code_text

#: The longest suffix an operator adds: five characters (a space and a 4-character code).
SUFFIX = " B001"
LOCALES = ["tr", "en"]
APP_HASHES = [None, "FA+9qCX9VSu"]


def _texts(locale: str, app_hash: str | None) -> list[str]:
    return [
        code_text("9" * length, locale=locale, template=None, app_hash=app_hash)  # type: ignore[arg-type]
        for length in range(4, 11)
    ]


@pytest.mark.parametrize("locale", LOCALES)
@pytest.mark.parametrize("app_hash", APP_HASHES)
def test_every_default_text_and_the_suffix_fit_one_part_with_the_turkish_shift(
    locale: str, app_hash: str | None
) -> None:
    for text in _texts(locale, app_hash):
        sms = analyze_sms(text + SUFFIX, allow_turkish_shift=True)
        assert sms.encoding in ("gsm7", "gsm7_turkish"), text
        assert sms.segments == 1, (text, sms)


@pytest.mark.parametrize("locale", LOCALES)
@pytest.mark.parametrize("app_hash", APP_HASHES)
def test_every_default_text_and_the_suffix_is_one_plain_part_on_the_otp_route(
    locale: str, app_hash: str | None
) -> None:
    for text in _texts(locale, app_hash):
        folded = otp_text(text + SUFFIX)
        assert folded is not None, text
        assert analyze_sms(folded, allow_turkish_shift=False).segments == 1


def test_the_turkish_text_needs_the_shift_and_the_english_one_does_not() -> None:
    turkish = code_text("123456", locale="tr", template=None, app_hash=None)
    english = code_text("123456", locale="en", template=None, app_hash=None)

    assert analyze_sms(turkish, allow_turkish_shift=True).encoding == "gsm7_turkish"
    assert analyze_sms(english, allow_turkish_shift=True).encoding == "gsm7"
    # A connection without the shift sends it as UCS-2: still one part (70 characters).
    unshifted = analyze_sms(turkish + SUFFIX, allow_turkish_shift=False)
    assert (unshifted.encoding, unshifted.segments) == ("ucs2", 1)


def test_the_sms_retriever_line_ends_the_text() -> None:
    text = code_text("123456", locale="en", template=None, app_hash="FA+9qCX9VSu")

    assert text.startswith("<#> Your verification code is 123456.")
    assert text.endswith("\nFA+9qCX9VSu")
    assert len(text.encode()) < 140  # Google: the whole message under 140 bytes
