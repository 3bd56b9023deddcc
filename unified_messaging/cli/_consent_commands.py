"""``consents add/list/show/import/export``: İYS consents (D33), thin calls to
``messenger.consents``. Live consents unless ``--test`` (D2).

``import`` reads a CSV by the campaign reader's rules (UTF-8, a header row, rows numbered as
a spreadsheet numbers them) with the columns ``export`` writes: ``recipient``, ``type``,
``recipient_type``, ``status``, ``source``, ``consent_date`` (İYS's ``YYYY-MM-DD HH:MM:SS``,
GMT+3). Each row is one create, checked by İYS's rules; a refused row is reported with its
number and the others are still recorded.
"""

from __future__ import annotations

import argparse
import csv
import sys
from typing import TYPE_CHECKING, Final, TextIO, get_args

from .._types import RecipientType
from ..consents.importing import CSV_COLUMNS
from ..consents.rules import CONSENT_SOURCES, CONSENT_TYPES, ConsentStatus
from ._args import Subparsers, add_command, add_group
from ._args import workspace_option as _workspace
from ._context import admin_command
from ._output import Column, JsonObject, JsonValue, Report, table_report

if TYPE_CHECKING:
    from .._access.principal import Principal
    from .._messenger import Messenger
    from ..consents.models import ConsentOut

__all__ = ["EXPORT_COLUMNS", "add_consents"]

STATUSES: Final = get_args(ConsentStatus)
RECIPIENT_TYPES: Final = get_args(RecipientType)
#: The CSV's columns, as ``export`` writes them and ``import`` reads them.
EXPORT_COLUMNS: Final = CSV_COLUMNS
_COLUMNS = (
    Column("ID", "id"),
    Column("RECIPIENT", "recipient"),
    Column("TYPE", "type"),
    Column("RECIPIENT TYPE", "recipient_type"),
    Column("STATUS", "status"),
    Column("SOURCE", "source"),
    Column("DATE (GMT+3)", "consent_date_iys"),
    Column("IYS", "iys_state"),
)
_PAGE: Final = 100


def add_consents(commands: Subparsers) -> None:
    group = add_group(commands, "consents", help="İYS consents (ONAY/RET) of your recipients")
    add = add_command(group, "add", help="record a consent", run=admin_command(_add))
    _mode(add)
    add.add_argument("recipient", metavar="ADDRESS", help="a number (+90…, 0…) or an e-mail")
    add.add_argument("--status", required=True, choices=STATUSES)
    add.add_argument("--type", default="MESAJ", choices=CONSENT_TYPES, help="default: MESAJ")
    add.add_argument("--recipient-type", default="BIREYSEL", choices=RECIPIENT_TYPES,
                     help="default: BIREYSEL")  # fmt: skip
    add.add_argument("--source", choices=CONSENT_SOURCES, help="required unless TACIR")
    add.add_argument(
        "--date",
        metavar="WHEN",
        help="when it was given, e.g. '2026-12-01 10:30:00' (GMT+3 unless it has an "
        "offset; default now)",
    )
    listing = add_command(group, "list", help="list consents, newest first",
                          run=admin_command(_list))  # fmt: skip
    _mode(listing)
    listing.add_argument("--recipient", metavar="ADDRESS", help="only this address")
    listing.add_argument("--status", choices=STATUSES, help="only ONAY or only RET")
    listing.add_argument("--limit", type=int, default=100, metavar="N", help="1-100 (100)")
    listing.add_argument("--starting-after", metavar="ID", help="the page after this consent")
    show = add_command(group, "show", help="one consent and its history",
                       run=admin_command(_show))  # fmt: skip
    _mode(show)
    show.add_argument("consent_id", metavar="ID")
    imports = add_command(group, "import", help="record every row of a CSV file",
                          run=admin_command(_import))  # fmt: skip
    _mode(imports)
    imports.add_argument("csv", metavar="FILE", help="UTF-8 CSV with a header row: "
                         + ", ".join(EXPORT_COLUMNS))  # fmt: skip
    imports.add_argument("--delimiter", default=",", metavar="CHAR", help="default: ,")
    export = add_command(group, "export", help="write every consent as CSV",
                         run=admin_command(_export))  # fmt: skip
    _mode(export)
    export.add_argument("--output", metavar="FILE", help="default: standard output")


def _mode(parser: argparse.ArgumentParser) -> None:
    _workspace(parser)
    parser.add_argument("--test", action="store_true", help="test-mode consents (default: live)")


async def _principal(m: Messenger, args: argparse.Namespace) -> Principal:
    return await m.principal(args.workspace, livemode=not args.test)


async def _add(m: Messenger, args: argparse.Namespace) -> Report:
    body: dict[str, object] = {
        "recipient": args.recipient,
        "status": args.status,
        "type": args.type,
        "recipient_type": args.recipient_type,
    }
    if args.source is not None:
        body["source"] = args.source
    if args.date is not None:
        body["consent_date"] = args.date
    consent = await m.consents.create(await _principal(m, args), body)
    text = f"Recorded {consent.status} for {consent.recipient} ({consent.type}, " \
           f"{consent.recipient_type}): {consent.id}, İYS {consent.iys_state}."  # fmt: skip
    return Report(consent.to_dict(), text)


async def _list(m: Messenger, args: argparse.Namespace) -> Report:
    search: dict[str, object] = {"limit": args.limit}
    for name in ("recipient", "status", "starting_after"):
        if getattr(args, name) is not None:
            search[name] = getattr(args, name)
    page = await m.consents.list(await _principal(m, args), search)
    rows: list[JsonObject] = [dict(consent.to_dict()) for consent in page.data]
    report = table_report(rows, _COLUMNS, empty="No consents.")
    if page.has_more and rows:
        return Report(report.data, report.text + f"\nMore: --starting-after {rows[-1]['id']}")
    return report


async def _show(m: Messenger, args: argparse.Namespace) -> Report:
    detail = await m.consents.get(await _principal(m, args), args.consent_id)
    lines = [
        f"{detail.id}: {detail.recipient} {detail.type} {detail.recipient_type} "
        f"{detail.status} (İYS {detail.iys_state})"
    ]
    for change in detail.history:
        when = "-" if change.consent_date is None else change.consent_date.isoformat()
        lines.append(f"  {change.recorded_at.isoformat()}  {change.status}  "
                     f"{change.source or '-'}  given {when}")  # fmt: skip
    return Report(detail.to_dict(), "\n".join(lines))


async def _import(m: Messenger, args: argparse.Namespace) -> Report:
    from ..campaigns._csv import CsvSource
    from ..consents.importing import RECIPIENT_COLUMN, import_consents

    source = CsvSource(args.csv, to_column=RECIPIENT_COLUMN, delimiter=args.delimiter,
                       to_column_option=None)  # fmt: skip
    done = await import_consents(m.consents, await _principal(m, args), source)
    refused: list[JsonValue] = [
        {"row": r.row, "code": r.code, "error": r.error} for r in done.refused
    ]
    data: JsonObject = {"recorded": done.recorded, "refused": refused}
    lines = [f"Row {r.row}: {r.error}" for r in done.refused]
    return Report(data, "\n".join([f"Recorded {done.recorded}.", *lines]))


async def _export(m: Messenger, args: argparse.Namespace) -> Report:
    principal = await _principal(m, args)
    count = 0
    with _output(args.output) as stream:
        writer = csv.writer(stream, lineterminator="\n")
        writer.writerow(EXPORT_COLUMNS)
        cursor: str | None = None
        while True:
            search: dict[str, object] = {"limit": _PAGE}
            if cursor is not None:
                search["starting_after"] = cursor
            page = await m.consents.list(principal, search)
            for consent in page.data:
                writer.writerow(_row(consent))
                count += 1
            if not page.has_more or not page.data:
                break
            cursor = page.data[-1].id
    where = args.output or "standard output"
    return Report({"exported": count}, f"Exported {count} consents to {where}.")


def _row(consent: ConsentOut) -> list[str]:
    return [consent.recipient, consent.type, consent.recipient_type, consent.status,
            consent.source or "", consent.consent_date_iys or ""]  # fmt: skip


class _output:
    """The file at ``path`` (UTF-8), or standard output left open."""

    def __init__(self, path: str | None) -> None:
        self._path = path
        self._file: TextIO | None = None

    def __enter__(self) -> TextIO:
        if self._path is None:
            return sys.stdout
        self._file = open(self._path, "w", encoding="utf-8", newline="")
        return self._file

    def __exit__(self, *exc: object) -> None:
        if self._file is not None:
            self._file.close()
