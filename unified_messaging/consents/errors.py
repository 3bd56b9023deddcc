"""The refusals of a consent (D33): İYS's rules, each a 422 with a code of ours.

``ConsentRefused`` is the family (catch it for any rule); each subclass is one rule of
:mod:`.rules`. None carries an İYS H-code: the İYS pages we cite do not give the code of
each of these rules, and a code we guessed would mislead (docs/iys.md).
"""

from __future__ import annotations

from .._errors import NotFound, Unprocessable

__all__ = [
    "ConsentDateInFuture",
    "ConsentDateNotAfterCurrent",
    "ConsentDateTooEarly",
    "ConsentDateTooOld",
    "ConsentNotFound",
    "ConsentRefused",
    "ConsentSourceRequired",
    "ConsentUnchanged",
    "FirstConsentIsRet",
    "Hs2015DateOnly",
]


class ConsentRefused(Unprocessable):
    """A consent İYS would refuse: nothing was stored."""

    code = "CONSENT_REFUSED"
    default_message = "İYS's rules refuse this consent."


class FirstConsentIsRet(ConsentRefused):
    code = "CONSENT_FIRST_RET"
    default_message = "The first record for an address cannot be RET."


class ConsentUnchanged(ConsentRefused):
    code = "CONSENT_UNCHANGED"
    default_message = "No ONAY after an ONAY, no RET after a RET."


class ConsentDateTooEarly(ConsentRefused):
    code = "CONSENT_DATE_TOO_EARLY"
    default_message = "consent_date is before 2015-05-01 00:00:00 (GMT+3)."


class ConsentDateInFuture(ConsentRefused):
    code = "CONSENT_DATE_IN_FUTURE"
    default_message = "consent_date is in the future."


class ConsentDateTooOld(ConsentRefused):
    code = "CONSENT_DATE_TOO_OLD"
    default_message = "consent_date is more than 3 business days back."


class Hs2015DateOnly(ConsentRefused):
    code = "CONSENT_HS_2015_DATE"
    default_message = "source HS_2015 takes only consent_date 2015-05-01 00:00:00 (GMT+3)."


class ConsentDateNotAfterCurrent(ConsentRefused):
    code = "CONSENT_DATE_NOT_AFTER_CURRENT"
    default_message = "consent_date is not after the consent on record."


class ConsentSourceRequired(ConsentRefused):
    code = "CONSENT_SOURCE_REQUIRED"
    default_message = "A BIREYSEL consent needs its source (only TACIR may leave it out)."


class ConsentNotFound(NotFound):
    code = "CONSENT_NOT_FOUND"
    default_message = "No such consent."
