"""Türkiye's official holidays, for İYS's "3 business days back" rule (D33).

A business day is Monday to Friday in GMT+3 that is not an official holiday, nor the
afternoon-off eve of one (half days are not counted either: the rule then accepts a date
İYS might refuse by half a day, and never refuses one İYS takes). The holidays:

- fixed, by Law 2429 (https://www.mevzuat.gov.tr/MevzuatMetin/1.5.2429.pdf): 1 January,
  23 April, 1 May, 19 May, 15 July (since 2017), 30 August, 29 October, and the afternoon of
  28 October;
- religious, moving about 11 days earlier each year: Ramazan Bayramı (3 days) and Kurban
  Bayramı (4 days), each with the afternoon of its eve (arife). Their first days below are
  Diyanet's (https://vakithesaplama.diyanet.gov.tr/hicriden_miladiye.php), as tabulated by
  the ``holidays`` package (github.com/vacanza/holidays, ``holidays/countries/turkey.py``,
  MIT), 2015 (İYS's first year) to 2032. A later year knows the fixed holidays only: its
  religious ones then count as business days, and the rule is a day or few stricter than
  İYS's around them. Extend the table before then.

Days the government adds by decree (bridging "idari izin" for public servants) are not
official holidays and count as business days.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Final

__all__ = ["LAST_KNOWN_YEAR", "is_business_day"]

#: (month, day) of the fixed holidays, with the first year each applies from.
_FIXED: Final = (
    (1, 1, 0), (4, 23, 0), (5, 1, 0), (5, 19, 0), (7, 15, 2017), (8, 30, 0), (10, 29, 0),
    (10, 28, 0),  # the afternoon of the Republic Day's eve
)  # fmt: skip
#: The first day of Ramazan Bayramı (3 days) and of Kurban Bayramı (4 days), by year.
_RAMAZAN: Final[dict[int, tuple[int, int]]] = {
    2015: (7, 17), 2016: (7, 5), 2017: (6, 25), 2018: (6, 15), 2019: (6, 4), 2020: (5, 24),
    2021: (5, 13), 2022: (5, 2), 2023: (4, 21), 2024: (4, 10), 2025: (3, 30), 2026: (3, 20),
    2027: (3, 9), 2028: (2, 26), 2029: (2, 14), 2030: (2, 4), 2031: (1, 24), 2032: (1, 14),
}  # fmt: skip
_KURBAN: Final[dict[int, tuple[int, int]]] = {
    2015: (9, 24), 2016: (9, 12), 2017: (9, 1), 2018: (8, 21), 2019: (8, 11), 2020: (7, 31),
    2021: (7, 20), 2022: (7, 9), 2023: (6, 28), 2024: (6, 16), 2025: (6, 6), 2026: (5, 27),
    2027: (5, 16), 2028: (5, 5), 2029: (4, 24), 2030: (4, 13), 2031: (4, 2), 2032: (3, 22),
}  # fmt: skip
#: The last year whose religious holidays are known here.
LAST_KNOWN_YEAR: Final = max(_RAMAZAN)
_SATURDAY: Final = 5


def _religious(year: int) -> frozenset[date]:
    days: set[date] = set()
    for table, length in ((_RAMAZAN, 3), (_KURBAN, 4)):
        found = table.get(year)
        if found is None:
            continue
        first = date(year, *found)
        # The eve (its afternoon off) and the holiday's days.
        days.update(first + timedelta(days=n) for n in range(-1, length))
    return frozenset(days)


_RELIGIOUS: Final = {year: _religious(year) for year in _RAMAZAN}


def is_business_day(day: date) -> bool:
    """Monday to Friday, and not an official holiday (nor the eve of one) in Türkiye."""
    if day.weekday() >= _SATURDAY:
        return False
    if any((day.month, day.day) == (m, d) and day.year >= since for m, d, since in _FIXED):
        return False
    # An eve can fall in the year before its holiday (a Bayram on 1 January).
    return not any(day in _RELIGIOUS.get(year, ()) for year in (day.year, day.year + 1))
