"""A template body as its recipient would get it (D9, D24): the dashboard's live preview.

Everything here is the library's own rules, called once: :func:`._templates.body_problem`
(would ``set_template`` take it), :func:`._templates.fill` (the rendering), and
:func:`._encoding.analyze_sms` (encoding and segments).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .._encoding import SmsEncoding, analyze_sms
from ._render import body_problem, fill, placeholders

__all__ = ["TemplatePreview", "preview_template"]


@dataclass(frozen=True, slots=True)
class TemplatePreview:
    """``text``: the body with the given values filled in (a placeholder without one stays
    as written); ``variables``: every placeholder, in order; ``missing``: those without a
    value; ``problem``: why ``set_template`` would refuse the body, else ``None``; ``sms``:
    the encoding and segments of ``text`` as an SMS (``None`` for an empty body)."""

    text: str
    variables: tuple[str, ...]
    missing: tuple[str, ...]
    problem: str | None
    sms: SmsEncoding | None


def preview_template(
    body: str, variables: Mapping[str, object] | None = None, *, turkish_shift: bool = True
) -> TemplatePreview:
    values = {name: value for name, value in (variables or {}).items() if value != ""}
    names = placeholders(body)
    text = fill(body, values)
    return TemplatePreview(
        text=text,
        variables=names,
        missing=tuple(name for name in names if name not in values),
        problem=body_problem(body),
        sms=analyze_sms(text, allow_turkish_shift=turkish_shift) if text else None,
    )
