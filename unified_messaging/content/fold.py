"""Text folded the Turkish way, for matching words a person typed (D33 content hints, stop
words): no case, no diacritics, and the four Turkish i's as one letter.

``str.lower()`` makes ``I`` an ``i`` and ``İ`` an ``i`` with a combining dot, which is right
for English and wrong for Turkish (``IPTAL`` is ``ıptal``, ``İPTAL`` is ``iptal``). Here
``I``, ``ı``, ``İ`` and ``i`` all fold to ``i``, so a phrase matches however it was typed
(``RET yazıp``, ``ret yazip``, ``RET YAZIP``), and ``ş ç ğ ö ü`` lose their marks, as they do
on phones without a Turkish keyboard. Pure functions; nothing here does I/O.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import Final

__all__ = ["contains_words", "fold", "words"]

# Every i first: after NFKD "İ" would be "I" + a combining dot, and casefold keeps "ı".
_EVERY_I: Final = str.maketrans({"I": "i", "İ": "i", "ı": "i"})
#: A word: a run of letters and digits (no underscore), as folded.
_WORD: Final = re.compile(r"[^\W_]+")


def fold(text: str) -> str:
    """``text`` without case or diacritics: ``İPTAL``, ``IPTAL``, ``ıptal`` and ``iptal`` are
    ``iptal``; ``Gönderin`` is ``gonderin``. Compatibility forms are spelled out (``ﬁ`` is
    ``fi``, ``Ⅲ`` is ``iii``). Folding twice changes nothing more."""
    decomposed = unicodedata.normalize("NFKD", text.translate(_EVERY_I))
    # casefold can produce what NFKD splits again (and NFKD what casefold would lower): once
    # more each way leaves a form neither changes.
    folded = unicodedata.normalize("NFKD", decomposed.casefold())
    folded = unicodedata.normalize("NFKD", folded.casefold()).translate(_EVERY_I)
    return "".join(c for c in folded if not unicodedata.combining(c))


def words(text: str) -> tuple[str, ...]:
    """The folded words of ``text``, in order: punctuation and spaces only separate them
    (``3338'e`` is ``3338``, ``e``; ``A.Ş.`` is ``a``, ``s``)."""
    return tuple(_WORD.findall(fold(text)))


def contains_words(text_words: Sequence[str], phrase_words: Sequence[str]) -> bool:
    """Do ``phrase_words`` occur in ``text_words`` one after another (an empty phrase never
    does)? Word by word, so ``ret`` is not found in ``ticaret``."""
    size = len(phrase_words)
    if size == 0 or size > len(text_words):
        return False
    first = phrase_words[0]
    for start, word in enumerate(text_words[: len(text_words) - size + 1]):
        if word == first and tuple(text_words[start : start + size]) == tuple(phrase_words):
            return True
    return False
