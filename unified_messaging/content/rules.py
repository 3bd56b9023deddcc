"""Commercial content hints (D33): what a commercial SMS's text should carry, as rules over
the text alone. Pure functions; nothing here does I/O.

A commercial electronic message's content is set by the Regulation on Commercial
Communication and Commercial Electronic Messages (Ticari İletişim ve Ticari Elektronik
İletiler Hakkında Yönetmelik; the sources are in docs/iys.md). For an SMS we check four
things a person can forget:

- ``OPT_OUT_MISSING``: how to refuse further messages. İYS's own way is an SMS to 3338
  (``RET`` and the brand's short name), so a text with the words ``RET`` and ``3338`` has
  it; so has a text with the workspace's own opt-out phrase (``opt_out``).
- ``TRADE_NAME_MISSING`` and ``MERSIS_MISSING``: the brand's trade name and MERSİS number,
  each checked once the workspace has set it; ``BRAND_NOT_SET`` while neither is set (a
  warning that never refuses: there is nothing to check the text against).
- ``COMMERCIAL_TAG_MISSING``: the text starts with a word that says it is commercial:
  ``KAMPANYA``, ``TANITIM`` or ``BİLGİLENDİRME`` (the Regulation: "at the start of the
  message", "such as promotion, campaign, information").

Words are compared folded (:mod:`.fold`): case, diacritics and the Turkish i's do not
matter, and punctuation only separates words (``3338'e`` has ``3338``). These are hints, not
legal advice: they find what is missing, never what is wrong.

Hints are warnings. A workspace whose :class:`ContentRules` has ``refuse`` set turns them
into a refusal of the commercial SMS that has any (422 ``COMMERCIAL_CONTENT_REFUSED``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal

from .._policies import ContentRules
from .fold import contains_words, words
from .parts import SmsParts, count_parts

__all__ = [
    "COMMERCIAL_TAGS",
    "HINT_CODES",
    "ContentHint",
    "ContentLint",
    "ContentRules",
    "HintCode",
    "hints_for",
    "lint_text",
    "normalize_mersis",
]

HintCode = Literal[
    "OPT_OUT_MISSING",
    "TRADE_NAME_MISSING",
    "MERSIS_MISSING",
    "BRAND_NOT_SET",
    "COMMERCIAL_TAG_MISSING",
]
HINT_CODES: Final[tuple[HintCode, ...]] = (
    "OPT_OUT_MISSING",
    "TRADE_NAME_MISSING",
    "MERSIS_MISSING",
    "BRAND_NOT_SET",
    "COMMERCIAL_TAG_MISSING",
)
#: The words a commercial SMS may start with, as written in docs and hints.
COMMERCIAL_TAGS: Final = ("KAMPANYA", "TANITIM", "BİLGİLENDİRME")
_TAG_WORDS: Final = frozenset(w for tag in COMMERCIAL_TAGS for w in words(tag))
#: İYS's short number for refusals by SMS, and the word a refusal starts with.
_IYS_SHORT_NUMBER: Final = "3338"
_RET: Final = "ret"
#: A hint that warns but never refuses: the workspace has not said what to look for.
_NEVER_REFUSES: Final[frozenset[HintCode]] = frozenset({"BRAND_NOT_SET"})
_MERSIS_SEPARATORS: Final = re.compile(r"[\s.\-]")


def normalize_mersis(raw: str) -> str:
    """A MERSİS number as typed (``0123 4567 8901 2345``, with dots or dashes) as kept:
    its digits. Checked by :class:`ContentRules` (in :mod:`.._policies`, a record of the
    core's: a workspace carries one)."""
    return _MERSIS_SEPARATORS.sub("", raw)


@dataclass(frozen=True, slots=True)
class ContentHint:
    """One thing a commercial text misses: a stable ``code`` and what to do, in words."""

    code: HintCode
    message: str

    @property
    def refuses(self) -> bool:
        """Does this hint refuse the message when the workspace's rules ``refuse``?"""
        return self.code not in _NEVER_REFUSES


@dataclass(frozen=True, slots=True)
class ContentLint:
    """What :func:`lint_text` found: the ``hints`` (in :data:`HINT_CODES` order) and the
    text's SMS ``parts``, the operator's code counted."""

    hints: tuple[ContentHint, ...]
    parts: SmsParts

    @property
    def codes(self) -> tuple[HintCode, ...]:
        return tuple(hint.code for hint in self.hints)


def hints_for(text: str, rules: ContentRules | None = None) -> tuple[ContentHint, ...]:
    """What ``text`` misses as a commercial SMS of a workspace with ``rules`` (default:
    nothing set), in :data:`HINT_CODES` order."""
    rules = rules or ContentRules()
    found = words(text)
    hints = (_opt_out(found, rules), *_brand(text, found, rules), _tag(found))
    return tuple(hint for hint in hints if hint is not None)


def lint_text(
    text: str, rules: ContentRules | None = None, *, turkish_shift: bool = True
) -> ContentLint:
    """:func:`hints_for` ``text`` and its SMS parts, the operator's code counted."""
    return ContentLint(hints_for(text, rules), count_parts(text, turkish_shift=turkish_shift))


def _opt_out(found: tuple[str, ...], rules: ContentRules) -> ContentHint | None:
    if _RET in found and _IYS_SHORT_NUMBER in found:
        return None
    if rules.opt_out is not None and contains_words(found, words(rules.opt_out)):
        return None
    own = f" or your own opt-out phrase ({rules.opt_out!r})" if rules.opt_out else ""
    return ContentHint(
        "OPT_OUT_MISSING",
        "The text does not say how to stop these messages: add İYS's "
        f'"RET yazıp 3338\'e gönderin"{own}.',
    )


def _brand(text: str, found: tuple[str, ...], rules: ContentRules) -> list[ContentHint | None]:
    if rules.trade_name is None and rules.mersis is None:
        return [ContentHint(
            "BRAND_NOT_SET",
            "The workspace has no trade name or MERSİS number set, so the text cannot be "
            "checked for them.",
        )]  # fmt: skip
    hints: list[ContentHint | None] = []
    if rules.trade_name is not None and not contains_words(found, words(rules.trade_name)):
        hints.append(ContentHint(
            "TRADE_NAME_MISSING", f"The text does not name the brand's trade name "
            f"({rules.trade_name!r})."))  # fmt: skip
    if rules.mersis is not None and not _has_number(text, rules.mersis):
        hints.append(ContentHint(
            "MERSIS_MISSING", f"The text does not carry the MERSİS number ({rules.mersis})."
        ))  # fmt: skip
    return hints


def _has_number(text: str, digits: str) -> bool:
    """Is ``digits`` in ``text`` as one number: spaces, dots or dashes may group it, other
    digits may not touch it."""
    pattern = r"[\s.\-]?".join(digits)
    return re.search(rf"(?<![0-9]){pattern}(?![0-9])", text, flags=re.ASCII) is not None


def _tag(found: tuple[str, ...]) -> ContentHint | None:
    if found and found[0] in _TAG_WORDS:
        return None
    return ContentHint(
        "COMMERCIAL_TAG_MISSING",
        "The text does not start with KAMPANYA, TANITIM or BİLGİLENDİRME, which tells the "
        "recipient it is a commercial message.",
    )
