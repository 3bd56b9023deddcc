"""The shared pieces of reading a provider account: provider numbers as exact decimals, and
sender lists cleaned (strings only, stripped, no repeats, bounded) but never rewritten."""

from __future__ import annotations

from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from unified_messaging.providers.account import MAX_SENDERS, clean_senders, parse_amount


def test_provider_numbers_read_as_exact_decimals() -> None:
    assert parse_amount("57,860") == Decimal("57.860")  # NetGSM's decimal comma
    assert parse_amount("$1986.0"[1:]) == Decimal("1986.0")  # Mutlucell after its '$'
    assert parse_amount(" 123 ") == Decimal("123")  # Verimor's plain text
    assert parse_amount(100.5) == Decimal("100.5")  # Jasmin's JSON number
    for not_a_number in ("ND", "", "1.2.3", "1e5", None, True, [], "12,5,0", "٣"):
        assert parse_amount(not_a_number) is None


@given(st.decimals(min_value=-(10**12), max_value=10**12, places=4, allow_nan=False))
def test_any_written_amount_reads_back(amount: Decimal) -> None:
    assert parse_amount(str(amount)) == amount
    assert parse_amount(str(amount).replace(".", ",")) == amount


@given(st.lists(st.one_of(st.text(max_size=80), st.integers(), st.none()), max_size=700))
def test_sender_lists_are_bounded_and_keep_the_providers_words(names: list[object]) -> None:
    cleaned = clean_senders(names)
    assert len(cleaned) <= MAX_SENDERS
    assert len(set(cleaned)) == len(cleaned)
    assert all(s and s == s.strip() and len(s) <= 64 for s in cleaned)
    originals = {n.strip()[:64] for n in names if isinstance(n, str)}
    assert set(cleaned) <= originals


def test_hostile_names_are_kept_verbatim_for_escaping_at_display() -> None:
    hostile = '<img src=x onerror="alert(1)">'
    assert clean_senders([hostile, hostile, " ACME ", 7]) == (hostile, "ACME")
