"""Recording a CSV of consents (D33): ``consents import`` on the command line and the
dashboard's Consents page, one loop for both.

The CSV is read by the campaign reader's rules (:class:`~.._campaign_csv.CsvSource`: a
header row, rows numbered as a spreadsheet numbers them) with the columns
:data:`CSV_COLUMNS`, as ``consents export`` writes them. Each row is one
:meth:`Consents.create <.service.Consents.create>`, checked by İYS's rules and audited; a
refused row is reported with its number and why, and the other rows are still recorded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from .._errors import MessagingError

if TYPE_CHECKING:
    from .._access.principal import Principal
    from ..campaigns._csv import CsvSource
    from .service import Consents

__all__ = ["CSV_COLUMNS", "ConsentImport", "RefusedRow", "import_consents"]

#: The CSV's columns, as ``consents export`` writes them and an import reads them.
CSV_COLUMNS: Final = ("recipient", "type", "recipient_type", "status", "source", "consent_date")
#: The column a consent's address is in.
RECIPIENT_COLUMN: Final = "recipient"


@dataclass(frozen=True, slots=True)
class RefusedRow:
    """A row that was not recorded: its number in the file, the error's ``code`` and why,
    in words."""

    row: int
    code: str
    error: str


@dataclass(frozen=True, slots=True)
class ConsentImport:
    """What an import did: how many rows were ``recorded``, and the ``refused`` ones."""

    recorded: int
    refused: tuple[RefusedRow, ...]


async def import_consents(consents: Consents, auth: Principal, source: CsvSource) -> ConsentImport:
    """Record every row of ``source``. A problem of the whole file (no header, no
    ``recipient`` column, not CSV) is :class:`RequestInvalid` naming ``csv``, raised before
    anything is recorded."""
    source.scan()
    recorded = 0
    refused: list[RefusedRow] = []
    for row in source.rows():
        if row.extra:
            problem = "the row has more cells than the header"
            refused.append(RefusedRow(row.number, "VALIDATION_ERROR", problem))
            continue
        body = {name: value for name, value in row.cells.items() if name in CSV_COLUMNS}
        try:
            await consents.create(auth, body)
        except MessagingError as exc:
            refused.append(RefusedRow(row.number, exc.code, exc.message))
            continue
        recorded += 1
    return ConsentImport(recorded, tuple(refused))
