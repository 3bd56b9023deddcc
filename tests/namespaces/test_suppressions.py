"""``messenger.suppressions``: add, add_many, list, remove through the library (a listed
recipient is refused at send), their refusals and audit rows; and the list's rules: stop
words matched the Turkish way, the bot's ``/stop``, and the shapes' limits."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from namespaces._audit import audit_rows
from unified_messaging import (
    InvalidRecipient,
    RequestInvalid,
    ResourceNotFound,
)
from unified_messaging._errors import RecipientSuppressed  # not typed by the lazy export
from unified_messaging._models import parse_model
from unified_messaging.suppressions._inbound import opt_out_word
from unified_messaging.suppressions._rules import StopWords, SuppressionCreate, fold_word
from unified_messaging.testing import TestBed

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


# ------------------------------------------------------------------ the namespace


async def test_a_listed_recipient_is_refused_at_send_until_removed(bed: TestBed) -> None:
    suppressions = bed.messenger.suppressions
    added = await suppressions.add(
        bed.principal, {"channel": "sms", "recipient": "0532 123 45 67", "reason": "asked"}
    )
    assert (added.recipient, added.source, added.livemode) == ("+905321234567", "library", False)
    again = await suppressions.add(bed.principal, {"channel": "sms", "recipient": "+905321234567"})
    assert (again.id, again.reason) == (added.id, "asked")  # idempotent: the first one stays

    with pytest.raises(RecipientSuppressed) as refused:
        await bed.messenger.send(bed.principal, {"to": "+905321234567", "body": "x"})
    assert refused.value.code == "RECIPIENT_SUPPRESSED"

    removed = await suppressions.remove(
        bed.principal, {"channel": "sms", "recipient": "+905321234567"}
    )
    assert removed.id == added.id
    assert (await bed.messenger.send(bed.principal, {"to": "+905321234567", "body": "x"})).status
    rows = [row for row in await audit_rows(bed.messenger) if row[0].startswith("suppression")]
    assert rows == [
        ("suppression.remove", bed.workspace.id, added.id),
        ("suppression.add", bed.workspace.id, added.id),
        ("suppression.add", bed.workspace.id, added.id),
    ]


async def test_add_many_counts_added_existing_and_refused_rows_in_one_audit_row(
    bed: TestBed,
) -> None:
    suppressions = bed.messenger.suppressions
    await suppressions.add(bed.principal, {"channel": "sms", "recipient": "+905321234567"})

    result = await suppressions.add_many(
        bed.principal,
        [
            {"channel": "sms", "recipient": "+905321234567"},
            {"channel": "sms", "recipient": "+905339876543"},
            {"channel": "sms", "recipient": "12"},
            {"channel": "fax", "recipient": "+905339876543"},
        ],
    )

    assert (result.added, result.existing) == (1, 1)
    assert [number for number, _ in result.refused] == [3, 4]
    page = await suppressions.list(bed.principal, {"channel": "sms", "limit": 1})
    assert page.has_more and len(page.data) == 1
    listed = await suppressions.list(bed.principal)
    assert sorted(entry.recipient for entry in listed.data) == ["+905321234567", "+905339876543"]
    assert [row[0] for row in await audit_rows(bed.messenger)].count("suppression.import") == 1


async def test_refusals_a_bad_field_an_unreachable_recipient_and_one_not_listed(
    bed: TestBed,
) -> None:
    suppressions = bed.messenger.suppressions
    with pytest.raises(RequestInvalid) as bad:
        await suppressions.add(bed.principal, {"channel": "fax", "recipient": "+905321234567"})
    assert bad.value.code == "VALIDATION_ERROR"
    with pytest.raises(InvalidRecipient) as unreachable:
        await suppressions.add(bed.principal, {"channel": "sms", "recipient": "12"})
    assert unreachable.value.code == "INVALID_RECIPIENT"
    with pytest.raises(ResourceNotFound):
        await suppressions.remove(bed.principal, {"channel": "sms", "recipient": "+905321234567"})
    assert not [row for row in await audit_rows(bed.messenger) if row[0].startswith("suppr")]
