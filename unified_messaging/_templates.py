"""Templates (D9): ``{{ name }}`` placeholders, rendering, and the rules on the result."""

from __future__ import annotations

import re
from collections.abc import Mapping

from ._errors import BodyTooLong, TemplateVariableMissing
from ._models import MAX_BODY_LENGTH

__all__ = ["PLACEHOLDER", "placeholders", "render", "render_value"]

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def placeholders(body: str) -> tuple[str, ...]:
    """The placeholder names of ``body``, each once, in order of first appearance."""
    return tuple(dict.fromkeys(PLACEHOLDER.findall(body)))


def render_value(value: object) -> str:
    # JSON's spelling for booleans: a template is filled from JSON, so "true" reads right.
    if isinstance(value, bool):
        return "true" if value else "false"
    try:
        return str(value)
    except ValueError:
        # An int past sys.get_int_max_str_digits() (4300 digits) cannot be printed; it would
        # be far past the body limit anyway, so it gets that limit's error, not a crash.
        raise BodyTooLong("A template variable is too long to render.") from None


def render(body: str, variables: Mapping[str, object] | None) -> str:
    """Fill ``body``'s placeholders from ``variables``; extra variables are ignored.

    Raises :class:`TemplateVariableMissing` naming every missing variable, and
    :class:`BodyTooLong` when the result is outside 1–1600 characters.
    """
    values = variables or {}
    missing = [name for name in placeholders(body) if name not in values]
    if missing:
        names = ", ".join(missing)
        raise TemplateVariableMissing(f"Missing template variable(s): {names}")
    text = PLACEHOLDER.sub(lambda match: render_value(values[match.group(1)]), body)
    if not 1 <= len(text) <= MAX_BODY_LENGTH:
        raise BodyTooLong(
            f"The rendered text is {len(text)} characters; it must be 1-{MAX_BODY_LENGTH}."
        )
    return text
