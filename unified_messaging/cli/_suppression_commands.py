"""``suppressions add/list/remove/import``: the suppression list, thin calls to
the façade. Live entries unless ``--test``; ``import`` reads a CSV by the campaign reader's
rules (UTF-8, a header row, ``--to-column``, rows numbered as a spreadsheet numbers them)."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from typing import TYPE_CHECKING, get_args

from .._types import Channel
from ._args import Subparsers, add_command, add_group, encoding_option
from ._args import workspace_option as _workspace
from ._context import admin_command
from ._output import Column, JsonObject, JsonValue, Report, table_report

# The core's channels, read from its type: a channel added there is offered here too.
CHANNELS = get_args(Channel)

if TYPE_CHECKING:
    from .._messenger import Messenger
    from ..suppressions._rules import Suppression

__all__ = ["add_suppressions"]

_COLUMNS = (
    Column("ID", "id"),
    Column("CHANNEL", "channel"),
    Column("RECIPIENT", "recipient"),
    Column("SOURCE", "source"),
    Column("CREATED", "created_at"),
    Column("REASON", "reason"),
)


def add_suppressions(commands: Subparsers) -> None:
    group = add_group(
        commands, "suppressions", help="recipients who get no more messages (opt-outs)"
    )
    add = add_command(group, "add", help="suppress a recipient", run=admin_command(_add))
    _target(add)
    add.add_argument("--reason", metavar="TEXT", help="why (1-200 characters)")
    remove = add_command(
        group, "remove", help="take a recipient off the list", run=admin_command(_remove)
    )
    _target(remove)
    listing = add_command(group, "list", help="list the entries, newest first",
                          run=admin_command(_list))  # fmt: skip
    _mode(listing)
    listing.add_argument("--channel", choices=CHANNELS, help="only this channel")
    listing.add_argument("--recipient", metavar="TO", help="only this recipient")
    listing.add_argument("--limit", type=int, default=100, metavar="N", help="1-100 (100)")
    listing.add_argument("--starting-after", metavar="ID", help="the page after this entry")
    imports = add_command(
        group, "import", help="add every row of a CSV file", run=admin_command(_import)
    )
    _mode(imports)
    imports.add_argument("csv", metavar="FILE", help="UTF-8 CSV with a header row")
    imports.add_argument(
        "--channel", choices=CHANNELS, default="sms",
        help="the channel of rows without a 'channel' column (default: sms)",
    )  # fmt: skip
    imports.add_argument(
        "--to-column", default="phone", metavar="NAME",
        help="the column holding the recipient (default: phone); 'reason' and 'channel' "
        "columns are read when present",
    )  # fmt: skip
    imports.add_argument("--delimiter", default=",", metavar="CHAR", help="default: ,")
    encoding_option(imports)


def _mode(parser: argparse.ArgumentParser) -> None:
    _workspace(parser)
    parser.add_argument("--test", action="store_true", help="the test-mode list (default: live)")


def _target(parser: argparse.ArgumentParser) -> None:
    _mode(parser)
    parser.add_argument("channel", choices=CHANNELS)
    parser.add_argument("recipient", metavar="TO", help="as a send's to: +90…, 0…, a chat id")


def _json(entry: Suppression) -> JsonObject:
    return {
        "id": entry.id,
        "channel": entry.channel,
        "recipient": entry.recipient,
        "reason": entry.reason,
        "source": entry.source,
        "created_at": entry.created_at.isoformat(),
        "livemode": entry.livemode,
    }


async def _add(m: Messenger, args: argparse.Namespace) -> Report:
    principal = await m.principal(args.workspace, livemode=not args.test)
    entry: dict[str, object] = {"channel": args.channel, "recipient": args.recipient}
    if args.reason is not None:
        entry["reason"] = args.reason
    added = await m.suppressions.add(principal, entry, source="cli")
    return Report(_json(added), f"Suppressed {added.recipient} on {added.channel} ({added.id}).")


async def _remove(m: Messenger, args: argparse.Namespace) -> Report:
    principal = await m.principal(args.workspace, livemode=not args.test)
    target = {"channel": args.channel, "recipient": args.recipient}
    removed = await m.suppressions.remove(principal, target)
    return Report(_json(removed), f"Removed {removed.recipient} from the {removed.channel} list.")


async def _list(m: Messenger, args: argparse.Namespace) -> Report:
    principal = await m.principal(args.workspace, livemode=not args.test)
    search: dict[str, object] = {"limit": args.limit}
    for name in ("channel", "recipient", "starting_after"):
        if getattr(args, name) is not None:
            search[name] = getattr(args, name)
    page = await m.suppressions.list(principal, search)
    rows: list[JsonObject] = [dict(entry.to_dict()) for entry in page.data]
    report = table_report(rows, _COLUMNS, empty="No suppressed recipients.")
    if page.has_more and rows:
        more = f"\nMore: --starting-after {rows[-1]['id']}"
        return Report(report.data, report.text + more)
    return report


async def _import(m: Messenger, args: argparse.Namespace) -> Report:
    from ..campaigns._csv import CsvSource

    source = CsvSource(
        args.csv, to_column=args.to_column, delimiter=args.delimiter, encoding=args.encoding
    )
    source.scan()  # a whole-file problem is a 400 before anything is added
    principal = await m.principal(args.workspace, livemode=not args.test)
    numbers: list[int] = []

    def entries() -> Iterator[dict[str, object]]:
        for row in source.rows():
            numbers.append(row.number)
            entry: dict[str, object] = {
                "channel": row.cells.get("channel", args.channel),
                "recipient": row.cells.get(args.to_column, ""),
            }
            if "reason" in row.cells:
                entry["reason"] = row.cells["reason"]
            if row.extra:
                entry["extra_cells"] = row.extra  # refused: the row is longer than the header
            yield entry

    result = await m.suppressions.add_many(principal, entries())
    refused: list[JsonValue] = [
        {"row": numbers[index - 1], "error": why} for index, why in result.refused
    ]
    data: JsonObject = {"added": result.added, "existing": result.existing, "refused": refused}
    lines = [f"Added {result.added}; {result.existing} were on the list already."]
    lines += [f"Row {numbers[index - 1]}: {why}" for index, why in result.refused]
    return Report(data, "\n".join(lines))
