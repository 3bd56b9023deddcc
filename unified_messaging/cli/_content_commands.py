"""The command line's part of commercial content hints (D33): ``workspaces update``'s
``--trade-name``, ``--mersis``, ``--opt-out`` and ``--content-hints``, and the hints
``templates set`` prints for a body sent as a commercial SMS. Thin calls to
``messenger.content``."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ._output import JsonObject

if TYPE_CHECKING:
    from .._messenger import Messenger
    from .._policies import ContentRules

__all__ = ["add_content_options", "content_json", "content_settings", "template_hints"]

CONTENT_LABELS = {"trade_name": "trade name", "mersis": "MERSİS", "opt_out": "opt-out phrase",
                  "content_hints": "content hints"}  # fmt: skip


def add_content_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--trade-name", metavar="NAME",
                        help="commercial SMS: the brand's trade name the hints look for "
                        "(\"\" clears it)")  # fmt: skip
    parser.add_argument("--mersis", metavar="DIGITS",
                        help="commercial SMS: the brand's 16-digit MERSİS number (\"\" clears "
                        "it)")  # fmt: skip
    parser.add_argument("--opt-out", metavar="PHRASE",
                        help="commercial SMS: the brand's own opt-out instruction, counted "
                        "besides İYS's RET … 3338 (\"\" clears it)")  # fmt: skip
    parser.add_argument("--content-hints", choices=("warn", "refuse"),
                        help="commercial SMS whose text misses one: warn (the default) or "
                        "refuse (422 COMMERCIAL_CONTENT_REFUSED)")  # fmt: skip


def given(args: argparse.Namespace) -> bool:
    return any(
        value is not None
        for value in (args.trade_name, args.mersis, args.opt_out, args.content_hints)
    )


async def content_settings(
    m: Messenger, workspace_id: str, args: argparse.Namespace
) -> ContentRules | None:
    """The workspace's content rules with the options given, checked (a 400 naming the
    setting) before anything changes; ``None`` when no option was given."""
    from .._policies import ContentRules
    from ..content.rules import normalize_mersis

    if not given(args):
        return None
    current = await m.content.rules(workspace_id)

    def phrase(value: str | None, kept: str | None) -> str | None:
        return kept if value is None else value.strip() or None

    mersis = current.mersis if args.mersis is None else normalize_mersis(args.mersis) or None
    return ContentRules(
        trade_name=phrase(args.trade_name, current.trade_name),
        mersis=mersis,
        opt_out=phrase(args.opt_out, current.opt_out),
        refuse=current.refuse if args.content_hints is None else args.content_hints == "refuse",
    )


def content_json(rules: ContentRules) -> JsonObject:
    return {
        "trade_name": rules.trade_name,
        "mersis": rules.mersis,
        "opt_out": rules.opt_out,
        "content_hints": "refuse" if rules.refuse else "warn",
    }


async def template_hints(m: Messenger, workspace_id: str, body: str) -> tuple[JsonObject, str]:
    """What a template's body misses as a commercial SMS of the workspace, and its parts:
    ``templates set`` shows them beside the template (they warn; nothing is refused)."""
    from ..content.rules import lint_text
    from ..templates._render import placeholders

    rules = await m.content.rules(workspace_id)
    lint = lint_text(body, rules)
    data: JsonObject = {
        "commercial_hints": [{"code": h.code, "message": h.message} for h in lint.hints],
        "parts_with_operator_code": lint.parts.parts_with_operator_code,
    }
    lines = [f"As a commercial SMS: {h.code}: {h.message}" for h in lint.hints]
    if not placeholders(body):
        lines.append(f"Parts as sent (the operator's code counted): "
                     f"{lint.parts.parts_with_operator_code}.")  # fmt: skip
    return data, "\n".join(lines)
