"""The suppression list's rules: stop words matched the Turkish way, the bot's
``/stop``, and the shapes' limits."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from unified_messaging import RequestInvalid
from unified_messaging._models import parse_model
from unified_messaging.suppressions._inbound import opt_out_word
from unified_messaging.suppressions._rules import StopWords, SuppressionCreate, fold_word

WORDS = StopWords()


@pytest.mark.parametrize(
    ("text", "word"),
    [
        ("STOP", "STOP"), ("stop", "STOP"), ("  Stop! ", "STOP"), ("DUR", "DUR"), ("dur.", "DUR"),
        ("İPTAL", "İPTAL"), ("iptal", "İPTAL"), ("IPTAL", "İPTAL"), ("ıptal", "İPTAL"),
        ("İptal", "İPTAL"), ("ret", "RET"), ("RET", "RET"),
    ],
)  # fmt: skip
def test_the_default_words_match_whatever_the_case_and_dots(text: str, word: str) -> None:
    assert WORDS.match(text) == word


@pytest.mark.parametrize("text", ["", "stop it", "durum", "Dur bakalım", "STOPP", "iptal et"])
def test_a_reply_that_only_contains_a_word_is_not_an_opt_out(text: str) -> None:
    assert WORDS.match(text) is None


def test_configured_words_are_added_and_folded() -> None:
    words = StopWords(["ABONELİK İPTAL", "çıkış"])
    assert words.match("abonelik iptal") == "ABONELİK İPTAL"
    assert words.match("CIKIS") == "çıkış"
    assert words.match("STOP") == "STOP"  # the defaults stay


def test_an_empty_stop_word_is_refused() -> None:
    with pytest.raises(ValueError, match="not a usable stop word"):
        StopWords(["  !!  "])


@pytest.mark.parametrize(
    ("channel", "text", "word"),
    [("chatbot", "/stop", "/stop"), ("chatbot", "/STOP@acme_bot", "/stop"),
     ("chatbot", "DUR", "DUR"), ("bizchat", "/stop", None), ("sms", "/start", None)],
)  # fmt: skip
def test_the_bot_takes_the_stop_command(channel: str, text: str, word: str | None) -> None:
    assert opt_out_word(channel, text, WORDS) == word  # type: ignore[arg-type]


@given(st.text(max_size=200))
def test_any_text_folds_and_matches_without_an_error(text: str) -> None:
    assert isinstance(fold_word(text), str)
    assert WORDS.match(text) in (None, "STOP", "DUR", "İPTAL", "RET")


@given(st.text(max_size=300))
def test_any_reason_or_recipient_is_accepted_or_a_400(text: str) -> None:
    problem: RequestInvalid | None = None
    try:
        parse_model(SuppressionCreate, {"channel": "sms", "recipient": text, "reason": text})
    except RequestInvalid as exc:
        problem = exc
    assert problem is None or problem.details
