"""The text of a code message (D34): the default texts, a template's, the SMS Retriever line.

The default texts fit one SMS part with the GSM-7 Turkish single shift (D24) for every code
length (4–10 digits), with room for a provider's suffix; ``tests/verifications`` pins it.
With ``app_hash`` the text follows Google's SMS Retriever format: it begins ``<#>`` and ends
with the app's 11-character hash on a line of its own
(https://developers.google.com/identity/sms-retriever/verify).
"""

from __future__ import annotations

import re
from typing import Final

from .._errors import TemplateVariableMissing
from ..templates._render import placeholders, render
from ._records import Locale

__all__ = ["APP_HASH_PATTERN", "CODE_MASK", "CODE_VARIABLE", "check_template", "code_text"]

CODE_VARIABLE: Final = "code"
#: What a live message's code reads as wherever the message is shown (D34).
CODE_MASK: Final = "******"
#: An app hash: 11 characters of base64 (Google: "an 11-character hash string").
APP_HASH_PATTERN: Final = r"^[A-Za-z0-9+/]{11}$"
_APP_HASH: Final = re.compile(APP_HASH_PATTERN)

DEFAULT_TEXTS: Final[dict[Locale, str]] = {
    "tr": "Doğrulama kodunuz: {{ code }}. Kimseyle paylaşmayın.",
    "en": "Your verification code is {{ code }}. Do not share it.",
}


def check_template(body: str) -> None:
    """A template for codes must have ``{{ code }}`` and no other variable (422 otherwise)."""
    names = placeholders(body)
    if CODE_VARIABLE not in names:
        raise TemplateVariableMissing("A verification template needs a {{ code }} placeholder.")
    others = [name for name in names if name != CODE_VARIABLE]
    if others:
        raise TemplateVariableMissing(
            f"A verification template may use only {{{{ code }}}}; it also has: {', '.join(others)}"
        )


def code_text(code: str, *, locale: Locale, template: str | None, app_hash: str | None) -> str:
    """The message for ``code``: ``template`` (a body with ``{{ code }}``) or the locale's
    default text, with the SMS Retriever prefix and hash line when ``app_hash`` is given.
    Called with :data:`CODE_MASK` for ``code`` it gives the masked text, line for line."""
    body = template if template is not None else DEFAULT_TEXTS[locale]
    text = render(body, {CODE_VARIABLE: code})
    if app_hash is None:
        return text
    if not _APP_HASH.fullmatch(app_hash):  # the request model checked it; a library caller
        raise ValueError("app_hash must be 11 characters of base64")
    return f"<#> {text}\n{app_hash}"
