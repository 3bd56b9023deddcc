"""Commercial content hints (D33): what a commercial SMS's text should carry, and its parts
with the operator's code.

- :mod:`.fold`: Turkish-aware folding, for matching words however they were typed;
- :mod:`.parts`: SMS parts with the 5 characters every operator appends (BTK);
- :mod:`.rules`: the hints, pure functions, and a workspace's :class:`ContentRules`;
- :mod:`.check`: the admission rule, when a workspace's rules refuse;
- :mod:`.models`: the shapes every edge shares (the dry run's :class:`SendPreview`);
- :mod:`.service`: :class:`Content`, reached as ``messenger.content``.

The names below load on first use (PEP 562): the records' module imports the rules without
loading pydantic.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from .errors import (
        CommercialContentRefused,
    )
    from .models import (
        ContentHintOut,
        ContentLintOut,
        SendPreview,
        SmsPartsOut,
    )
    from .parts import (
        SmsParts,
        count_parts,
    )
    from .rules import (
        HINT_CODES,
        ContentHint,
        ContentLint,
        ContentRules,
        lint_text,
    )
    from .service import (
        Content,
    )

__all__ = [
    "HINT_CODES",
    "CommercialContentRefused",
    "Content",
    "ContentHint",
    "ContentHintOut",
    "ContentLint",
    "ContentLintOut",
    "ContentRules",
    "SendPreview",
    "SmsParts",
    "SmsPartsOut",
    "count_parts",
    "lint_text",
]

#: Where each public name lives.
_HOMES: Final[dict[str, str]] = {
    "CommercialContentRefused": ".errors",
    "ContentHintOut": ".models",
    "ContentLintOut": ".models",
    "SendPreview": ".models",
    "SmsPartsOut": ".models",
    "SmsParts": ".parts",
    "count_parts": ".parts",
    "HINT_CODES": ".rules",
    "ContentHint": ".rules",
    "ContentLint": ".rules",
    "ContentRules": ".rules",
    "lint_text": ".rules",
    "Content": ".service",
}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home, __name__), name)
