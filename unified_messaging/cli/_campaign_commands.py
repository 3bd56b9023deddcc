"""``send`` (one message) and ``campaign send`` / ``campaign status`` (a CSV's rows).

Both send through the façade as a trusted caller of one workspace, in live mode or, with
``--test``, through the simulators (D2). ``send`` takes what ``POST /v1/messages`` takes and
is checked by the same model, so a bad value is the same ``VALIDATION_ERROR``; a message
that was refused prints its answer and exits 1.

``campaign send`` is :class:`~unified_messaging.campaigns._runner.Campaign`: the file is checked
whole first (nothing is sent from a file that cannot be read), then its rows go out in bulk
chunks, each chunk once, so the same command run again resumes where the last run stopped.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, get_args

from .._types import ProviderCode
from ._args import (
    CommandFailed,
    Subparsers,
    UsageError,
    add_command,
    add_group,
    encoding_option,
    finite_number,
)
from ._args import workspace_option as _workspace
from ._context import admin_command, messenger_session, rate_limiter
from ._output import Column, JsonObject, Report, cell, emit, fields_report, table_report

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .._messenger import Messenger
    from .._models import SendResponse
    from ..campaigns._runner import CampaignSettings, CampaignStatus, CampaignSummary, RowResult
    from ._progress import Bar

__all__ = ["add_campaign", "add_send"]

_PROVIDERS = ", ".join(get_args(ProviderCode))
#: Bad rows printed as they happen; the rest are counted (and all are in --results).
_NOTES_SHOWN = 20
RESULT_COLUMNS = ("row", "to", "job_id", "status", "error", "message")


def _variable(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=VALUE")
    return name.strip(), value


def _chunk_size(text: str) -> int:
    try:
        size = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 1 <= size <= 200:
        raise argparse.ArgumentTypeError(f"{text!r} is not 1-200 (a bulk request's limit)")
    return size


def _routing_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--provider", metavar="CODE", help=f"the connection to use: {_PROVIDERS}")
    parser.add_argument(
        "--fallback",
        metavar="CODE",
        action="append",
        help="an SMS provider to try next (repeat for more, in order; at most 3)",
    )
    parser.add_argument("--sender", metavar="S", help="SMS header (default: the connection's)")
    parser.add_argument(
        "--test", action="store_true", help="test mode: the simulators send (D2), nothing leaves"
    )


# ------------------------------------------------------------------------------ send


def add_send(commands: Subparsers) -> None:
    parser = add_command(
        commands,
        "send",
        help="send one message (POST /v1/messages from the command line)",
        description=(
            "Send one message through the workspace's connections, checked as the REST API "
            "checks it. Prints the answer; exits 1 if the message was refused."
        ),
        run=_run_send,
    )
    _workspace(parser)
    parser.add_argument("--to", required=True, metavar="NUMBER", help="the recipient")
    text = parser.add_mutually_exclusive_group(required=True)
    text.add_argument("--body", metavar="TEXT", help="the message text")
    text.add_argument("--template", metavar="KEY", help="a template of the workspace")
    parser.add_argument(
        "--var",
        type=_variable,
        action="append",
        metavar="NAME=VALUE",
        help="a template variable (repeat for more)",
    )
    _routing_options(parser)


def _send_request(args: argparse.Namespace) -> dict[str, Any]:
    if args.var and args.template is None:
        raise UsageError("--var", "only together with --template")
    given: dict[str, Any] = {
        "to": args.to,
        "body": args.body,
        "template": args.template,
        "variables": dict(args.var) if args.var else None,
        "provider": args.provider,
        "fallback": args.fallback,
        "sender": args.sender,
    }
    return {k: v for k, v in given.items() if v is not None}


def _run_send(args: argparse.Namespace) -> int:
    import asyncio

    from .._errors import MessagingError

    request = _send_request(args)

    async def send() -> SendResponse:
        async with messenger_session(args, sends=True) as m:
            principal = await m.principal(args.workspace, livemode=not args.test)
            return await m.send(principal, request)

    try:
        answer = asyncio.run(send())
    except MessagingError as exc:
        job_id = getattr(exc, "job_id", None)
        if job_id is None:
            raise
        # The job exists (D7: kept as failed); its id lets the operator look it up.
        print(f"error: {exc.code}: {exc.message} (job {job_id})", file=sys.stderr)
        return 1
    data: JsonObject = answer.to_dict()
    emit(_send_report(data, test=args.test), as_json=args.json)
    error = data.get("error")
    if isinstance(error, dict):
        print(f"error: {error.get('code')}: {error.get('message')}", file=sys.stderr)
        return 1
    return 0


def _send_report(data: JsonObject, *, test: bool) -> Report:
    labels = {
        "job_id": "Job",
        "status": "Status",
        "to": "To",
        "provider": "Provider",
        "segments": "Segments",
        "encoding": "Encoding",
        "error": "Error",
    }
    shown = dict(data)
    error = data.get("error")
    shown["error"] = (
        f"{error.get('code')}: {error.get('message')}" if isinstance(error, dict) else None
    )
    report = fields_report(shown, labels=labels, note="Test mode: simulated." if test else "")
    return Report(data, report.text)


# ------------------------------------------------------------------------------ campaign


def add_campaign(commands: Subparsers) -> None:
    group = add_group(commands, "campaign", help="send a CSV's rows as messages; its progress")
    send = add_command(
        group,
        "send",
        help="send one message per row of a CSV, in bulk chunks; re-run to resume",
        description=(
            "Send one message per row of a CSV file (UTF-8, a header row naming the columns). "
            "Each row's cells are the template's variables, or fill {{ column }} in --body. "
            "Rows go out in bulk chunks, each chunk once: the same command run again (within "
            "24 hours) sends only the rows not sent yet. A bad row fails alone; the rest go out."
        ),
        run=_run_campaign,
    )
    _workspace(send)
    send.add_argument("--csv", required=True, metavar="FILE", help="the rows (a CSV file)")
    encoding_option(send)
    text = send.add_mutually_exclusive_group(required=True)
    text.add_argument("--template", metavar="KEY", help="a template; each row gives its variables")
    text.add_argument("--body", metavar="TEXT", help="the text, with {{ column }} placeholders")
    send.add_argument(
        "--campaign",
        metavar="NAME",
        help="the campaign's name, which resuming goes by (default: the file's name)",
    )
    send.add_argument(
        "--to-column", default="phone", metavar="NAME", help="the recipient column (phone)"
    )
    send.add_argument(
        "--delimiter", default=",", metavar="C", help="the cell separator (default ,)"
    )
    send.add_argument(
        "--chunk", type=_chunk_size, default=100, metavar="N", help="rows per bulk request (100)"
    )
    send.add_argument(
        "--rate",
        type=finite_number,
        metavar="N",
        help="at most N messages a second (shared through UM_REDIS_URL when set)",
    )
    send.add_argument(
        "--at",
        metavar="TIME",
        help="hand every row over at this time, ISO 8601 with an offset "
        "(2026-12-01T09:00:00+03:00), up to 30 days ahead; the rows answer queued",
    )
    send.add_argument(
        "--results", metavar="FILE", help="write row, to, job_id, status, error to a CSV"
    )
    send.add_argument(
        "--no-progress", action="store_true", help="no progress bar (it only shows on a terminal)"
    )
    _routing_options(send)
    status = add_command(
        group,
        "status",
        help="a campaign's progress: rows handed over, its messages by status",
        run=admin_command(_status),
    )
    _workspace(status)
    status.add_argument("--campaign", required=True, metavar="NAME", help="the campaign's name")
    status.add_argument("--test", action="store_true", help="a test-mode campaign")


def _settings(args: argparse.Namespace) -> CampaignSettings:
    from ..campaigns._runner import CampaignSettings

    if args.rate is not None and args.rate <= 0:
        raise UsageError("--rate", f"{args.rate!r} is not a positive number of messages a second")
    return CampaignSettings(
        name=args.campaign or Path(args.csv).name,
        workspace_id=args.workspace,
        livemode=not args.test,
        template=args.template,
        body=args.body,
        to_column=args.to_column,
        chunk=args.chunk,
        provider=args.provider,
        fallback=tuple(args.fallback or ()),
        sender=args.sender,
        rate=args.rate,
        send_at=args.at,
    )


def _run_campaign(args: argparse.Namespace) -> int:
    import asyncio

    results_path = Path(args.results) if args.results else None
    if results_path is not None and results_path.resolve() == Path(args.csv).resolve():
        raise UsageError("--results", "must not be the input file")
    settings = _settings(args)
    summary = asyncio.run(_campaign(args, settings, results_path))
    emit(_summary_report(summary), as_json=args.json)
    if summary.stopped is not None:
        exc = summary.stopped
        print(
            f"error: {exc.code}: {exc.message} (stopped at row {summary.stopped_at_row}; "
            "run the same command again to resume)",
            file=sys.stderr,
        )
        return 1
    return 0


async def _campaign(
    args: argparse.Namespace, settings: CampaignSettings, results_path: Path | None
) -> CampaignSummary:
    from .._access.ratelimit import MemoryRateLimiter
    from ..campaigns._runner import Campaign
    from ._progress import open_bar

    limiter = rate_limiter(args)
    try:
        async with messenger_session(args, sends=True) as m:
            campaign = Campaign(
                m,
                settings,
                args.csv,
                delimiter=args.delimiter,
                encoding=args.encoding,
                limiter=limiter or MemoryRateLimiter(m.clock),
            )
            total = await campaign.prepare()
            with _Results(results_path) as out:
                writer = csv.writer(out) if out is not None else None
                if writer is not None:
                    writer.writerow(RESULT_COLUMNS)
                label = f"{settings.name} ({settings.mode})"
                with open_bar(total, label=label, enabled=not args.no_progress) as bar:
                    notes = _Notes(bar)

                    async def on_chunk(results: Sequence[RowResult]) -> None:
                        if writer is not None and out is not None:
                            writer.writerows(_result_row(r) for r in results)
                            out.flush()
                        notes.add(results)
                        bar.advance(len(results))

                    summary = await campaign.run(on_chunk)
                    notes.close()
            return summary
    finally:
        if limiter is not None:
            await limiter.aclose()


class _Results:
    def __init__(self, path: Path | None) -> None:
        self._path = path
        self._file: IO[str] | None = None

    def __enter__(self) -> IO[str] | None:
        if self._path is None:
            return None
        try:
            self._file = self._path.open("w", encoding="utf-8", newline="")
        except OSError as exc:
            raise CommandFailed(f"cannot write --results {self._path}: {exc.strerror}") from None
        return self._file

    def __exit__(self, *exc_info: object) -> None:
        if self._file is not None:
            self._file.close()


def _result_row(result: RowResult) -> tuple[object, ...]:
    return (
        result.row,
        result.to,
        result.job_id or "",
        result.status,
        result.error_code or "",
        result.error_message or "",
    )


class _Notes:
    """The first bad rows as lines above the bar, then a count of the rest."""

    def __init__(self, bar: Bar) -> None:
        self._bar = bar
        self._shown = 0
        self._more = 0

    def add(self, results: Sequence[RowResult]) -> None:
        for result in results:
            if result.error_code is None or result.replayed:
                continue
            if self._shown < _NOTES_SHOWN:
                self._shown += 1
                self._bar.note(f"row {result.row}: {result.error_code}: {result.error_message}")
            else:
                self._more += 1

    def close(self) -> None:
        if self._more:
            self._bar.note(f"... and {self._more} more bad rows (all are in --results)")


def _summary_report(summary: CampaignSummary) -> Report:
    data: JsonObject = {
        "campaign": summary.name,
        "mode": summary.mode,
        "rows": summary.rows,
        "done": summary.done,
        "replayed": summary.replayed,
        "by_status": dict(summary.by_status),
        "errors": dict(summary.errors),
        "stopped": None
        if summary.stopped is None
        else {"code": summary.stopped.code, "message": summary.stopped.message},
        "stopped_at_row": summary.stopped_at_row,
    }
    lines = [
        f"Campaign {summary.name!r} ({summary.mode} mode): {summary.done} of {summary.rows} rows",
    ]
    if summary.replayed:
        lines.append(f"  {summary.replayed} handed over by an earlier run (not sent again)")
    for status, count in sorted(summary.by_status.items()):
        lines.append(f"  {status:<8} {count}")
    if summary.errors:
        shown = ", ".join(f"{code} {n}" for code, n in sorted(summary.errors.items()))
        lines.append(f"Errors: {shown}")
    return Report(data, "\n".join(lines))


async def _status(m: Messenger, args: argparse.Namespace) -> Report:
    from ..campaigns._runner import campaign_status

    status = await campaign_status(m, args.workspace, args.campaign, livemode=not args.test)
    return _status_report(status)


def _status_report(status: CampaignStatus) -> Report:
    manifest = status.manifest
    handed_over = sum(status.messages.values())
    data: JsonObject = {
        "campaign": manifest["campaign"],
        "mode": manifest["mode"],
        "file": manifest["file"],
        "settings": manifest["settings"],
        "rows": manifest["rows"],
        "rows_done": manifest["rows_done"],
        "messages": handed_over,
        "not_sent": max(0, int(manifest["rows_done"]) - handed_over),
        "by_status": dict(status.messages),
        "errors": dict(status.errors),
        "started_at": manifest["started_at"],
        "updated_at": manifest["updated_at"],
        "finished_at": manifest["finished_at"],
    }
    head = fields_report(
        data,
        labels={
            "campaign": "Campaign",
            "mode": "Mode",
            "file": "File",
            "rows": "Rows",
            "rows_done": "Rows done",
            "messages": "Messages",
            "not_sent": "Not sent",
            "started_at": "Started",
            "updated_at": "Updated",
            "finished_at": "Finished",
        },
    ).text
    rows: list[JsonObject] = [
        {"status": name, "count": count} for name, count in sorted(status.messages.items())
    ]
    table = table_report(
        rows, (Column("STATUS", "status"), Column("MESSAGES", "count")), empty="No messages."
    ).text
    text = f"{head}\n\n{table}"
    if status.errors:
        text += "\n\nErrors: " + ", ".join(
            f"{code} {cell(n)}" for code, n in sorted(status.errors.items())
        )
    return Report(data, text)
