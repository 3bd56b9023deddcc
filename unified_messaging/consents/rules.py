"""İYS's own rules for a consent (D33), checked before anything is stored: pure functions.

Each rule is İYS's, from its "İzin Doğrulama Kuralları"
(https://dev.iys.org.tr/api-metotlar/izin-yonetimi/izin-yonetimi/), for one
``recipient, recipientType, type`` triple of a brand:

- a first record for an address cannot be ``RET`` (:class:`FirstConsentIsRet`);
- no ``consentDate`` before 2015-05-01 00:00:00 (:class:`ConsentDateTooEarly`) nor after
  the moment it is recorded (:class:`ConsentDateInFuture`);
- ``source`` ``HS_2015`` only with ``2015-05-01 00:00:00`` exactly (:class:`Hs2015DateOnly`);
- a consent loaded after the activation date is at most 3 business days back
  (:class:`ConsentDateTooOld`); ``HS_2015`` is the one source that names an older moment;
- a TACIR record needs neither ``consentDate`` nor ``source``; a BIREYSEL one needs its
  ``source`` (:class:`ConsentSourceRequired`; its date defaults to now);
- one BIREYSEL and one TACIR record per address; a new one for the same triple is a change:
  no ``ONAY`` after an ``ONAY``, no ``RET`` after a ``RET`` (:class:`ConsentUnchanged`), and
  its ``consentDate`` comes after the one on record (:class:`ConsentDateNotAfterCurrent`).

Times: İYS reads every date as GMT+3 (Türkiye has kept UTC+3 all year since 2016); we keep
aware datetimes and render them for İYS as ``YYYY-MM-DD HH:MM:SS`` in GMT+3
(:func:`iys_date`). Business days are Monday to Friday in GMT+3 that are not Türkiye's
official holidays nor their afternoon-off eves (:mod:`.holidays`); counting fewer days as
business days reaches further back, so we may accept a date İYS would refuse by half a day,
never refuse one it would take.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Final, Literal, get_args

from .._types import ConsentPolicy, RecipientType
from .errors import (
    ConsentDateInFuture,
    ConsentDateNotAfterCurrent,
    ConsentDateTooEarly,
    ConsentDateTooOld,
    ConsentSourceRequired,
    ConsentUnchanged,
    FirstConsentIsRet,
    Hs2015DateOnly,
)
from .holidays import is_business_day

__all__ = [
    "BUSINESS_DAYS_BACK",
    "CONSENT_POLICIES",
    "CONSENT_SOURCES",
    "CONSENT_TYPES",
    "GMT3",
    "IYS_START",
    "ConsentPolicy",
    "ConsentSource",
    "ConsentStatus",
    "ConsentType",
    "IysState",
    "check_change",
    "check_date",
    "check_source",
    "earliest_consent_date",
    "in_gmt3",
    "iys_date",
]

ConsentType = Literal["MESAJ", "ARAMA", "EPOSTA"]
ConsentStatus = Literal["ONAY", "RET"]
#: İYS's consent sources (``source``), as its API documents them (docs/iys.md cites where).
ConsentSource = Literal[
    "HS_FIZIKSEL_ORTAM",
    "HS_ISLAK_IMZA",
    "HS_WEB",
    "HS_CAGRI_MERKEZI",
    "HS_SOSYAL_MEDYA",
    "HS_EPOSTA",
    "HS_MESAJ",
    "HS_MOBIL",
    "HS_EORTAM",
    "HS_ETKINLIK",
    "HS_2015",
    "HS_ATM",
    "HS_KARAR",
]
#: Where a consent's change stands with İYS: ``pending`` (recorded here, not yet
#: registered), ``registered`` (İYS took it) or ``refused`` (İYS refused it).
IysState = Literal["pending", "registered", "refused"]

CONSENT_POLICIES: Final[tuple[ConsentPolicy, ...]] = get_args(ConsentPolicy)
CONSENT_TYPES: Final[tuple[ConsentType, ...]] = get_args(ConsentType)
CONSENT_SOURCES: Final[tuple[ConsentSource, ...]] = get_args(ConsentSource)
GMT3: Final = timezone(timedelta(hours=3), "GMT+3")
#: İYS's first moment: 2015-05-01 00:00:00 GMT+3, and the only date of source HS_2015.
IYS_START: Final = datetime(2015, 5, 1, tzinfo=GMT3)
BUSINESS_DAYS_BACK: Final = 3


def iys_date(moment: datetime) -> str:
    """``moment`` as İYS reads a date: ``YYYY-MM-DD HH:MM:SS`` in GMT+3."""
    return moment.astimezone(GMT3).strftime("%Y-%m-%d %H:%M:%S")


def earliest_consent_date(now: datetime) -> datetime:
    """The oldest ``consentDate`` İYS takes at ``now``: 3 business days (Monday-Friday in
    GMT+3, official holidays skipped) back, at the same time of day. From Monday 10:00 that
    is Wednesday 10:00 of the week before; from Saturday or Sunday, Wednesday 10:00 of the
    same week; a holiday on the way reaches a day further back."""
    moment = now.astimezone(GMT3)
    counted = 0
    while counted < BUSINESS_DAYS_BACK:
        moment -= timedelta(days=1)
        if is_business_day(moment.date()):
            counted += 1
    return moment


def check_date(consent_date: datetime, source: ConsentSource | None, now: datetime) -> None:
    """İYS's date rules for a consent recorded at ``now`` (see the module docstring)."""
    if consent_date < IYS_START:
        raise ConsentDateTooEarly(
            f"consent_date {iys_date(consent_date)} is before İYS's first moment, "
            "2015-05-01 00:00:00 (GMT+3)."
        )
    if consent_date > now:
        raise ConsentDateInFuture(f"consent_date {iys_date(consent_date)} is in the future.")
    if source == "HS_2015":
        if consent_date != IYS_START:
            raise Hs2015DateOnly(
                "source HS_2015 takes only consent_date 2015-05-01 00:00:00 (GMT+3)."
            )
        return
    if consent_date < earliest_consent_date(now):
        raise ConsentDateTooOld(
            f"consent_date {iys_date(consent_date)} is more than {BUSINESS_DAYS_BACK} "
            "business days back."
        )


def check_source(recipient_type: RecipientType, source: ConsentSource | None) -> None:
    """Only a TACIR consent may leave out its source (İYS's "Tacir izinleri")."""
    if recipient_type == "BIREYSEL" and source is None:
        raise ConsentSourceRequired(
            "source: required for a BIREYSEL consent (only TACIR may leave it out)."
        )


def check_change(
    current: ConsentStatus | None,
    current_date: datetime | None,
    status: ConsentStatus,
    source: ConsentSource | None,
    consent_date: datetime | None,
    now: datetime,
) -> None:
    """Every İYS rule for recording ``status`` where ``current`` is on record (``None``: no
    record yet for this address, type and recipient type). Raises a
    :class:`~.errors.ConsentRefused` (422) naming the rule; returns when İYS would take it.
    A TACIR record without ``consent_date`` skips the date rules (İYS needs none)."""
    if current is None and status == "RET":
        raise FirstConsentIsRet("The first record for an address cannot be RET.")
    if current == status:
        raise ConsentUnchanged(f"The address is {current} already: a second {status} is refused.")
    if consent_date is None:
        return
    check_date(consent_date, source, now)
    if current_date is not None and consent_date <= current_date:
        raise ConsentDateNotAfterCurrent(
            f"consent_date {iys_date(consent_date)} is not after the one on record "
            f"({iys_date(current_date)})."
        )


def in_gmt3(moment: datetime) -> datetime:
    """A date as İYS keeps it: in GMT+3, to the second (İYS's dates have no fractions, so
    two changes within one second are one moment to it). A naive date is read as İYS reads
    every date, as GMT+3."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=GMT3)
    return moment.astimezone(GMT3).replace(microsecond=0)
