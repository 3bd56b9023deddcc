"""Templates (D9): ``{{ name }}`` placeholders, rendering, and the rules on the result."""

from __future__ import annotations

import re
from collections.abc import Mapping

from .._errors import BodyTooLong, TemplateVariableMissing
from .._models import MAX_BODY_LENGTH, has_control_chars

__all__ = [
    "PLACEHOLDER",
    "body_problem",
    "brace_problem",
    "fill",
    "placeholders",
    "render",
    "render_value",
]

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_BRACES = re.compile(r"\{\{|\}\}")
_SHOWN = 24  # characters of the body quoted around a stray brace pair


def body_problem(body: str) -> str | None:
    """D9: what is wrong with a template body about to be stored, or None: its length
    (1-1600 characters), a control character, or a stray ``{{``/``}}``. ``set_template``
    refuses such a body and the dashboard's preview says so, both from here."""
    if not 1 <= len(body) <= MAX_BODY_LENGTH:
        return f"must be 1-{MAX_BODY_LENGTH} characters"
    if has_control_chars(body):
        return "must not contain control characters"
    return brace_problem(body)


def brace_problem(body: str) -> str | None:
    """What is wrong with the ``{{``/``}}`` of a template body about to be stored, or None.

    Rendering leaves text that is not a placeholder as it is, so ``{{ name`` or
    ``{{ first-name }}`` would reach every recipient verbatim. When a template is set, a
    ``{{`` or ``}}`` that is not part of a placeholder is therefore refused: it is nearly
    always a mistyped placeholder, and there is no escape for a literal one (D9).
    """
    # Placeholders blanked out, keeping positions, so what is left is a stray pair.
    masked = PLACEHOLDER.sub(lambda match: "\0" * len(match.group()), body)
    stray = _BRACES.search(masked)
    if stray is None:
        return None
    at = stray.start()
    if stray.group() == "{{":
        shown = _clip(body[at : at + _SHOWN], end=True)
        what = f"{shown!r} (character {at + 1}) opens no placeholder"
    else:
        shown = _clip(body[max(0, at + 2 - _SHOWN) : at + 2], end=False)
        what = f"{shown!r} (character {at + 1}) closes no placeholder"
    return f"{what}; a placeholder is {{{{ name }}}}, its name letters, digits and _"


def _clip(text: str, *, end: bool) -> str:
    if len(text) < _SHOWN:
        return text
    return text[:-1] + "…" if end else "…" + text[1:]


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


def fill(body: str, variables: Mapping[str, object]) -> str:
    """``body`` with each placeholder that has a value replaced by it; the others stay as
    they are (the dashboard's preview shows them so). :func:`render` is this plus D9's rules."""
    return PLACEHOLDER.sub(
        lambda match: (
            render_value(variables[match.group(1)])
            if match.group(1) in variables
            else match.group()
        ),
        body,
    )


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
    text = fill(body, values)
    if not 1 <= len(text) <= MAX_BODY_LENGTH:
        raise BodyTooLong(
            f"The rendered text is {len(text)} characters; it must be 1-{MAX_BODY_LENGTH}."
        )
    return text
