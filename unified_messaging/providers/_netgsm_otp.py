"""NetGSM's OTP route (``sms_a`` with ``otp`` on): one-time codes through ``/sms/send/otp``.

NetGSM sells an OTP package whose messages skip the bulk queue and arrive within minutes.
Wire facts, from NetGSM's SDKs (github.com/netgsm/otp ``src/otp.php``, and
github.com/netgsm/netgsm-sms-js commit 2a0548d "add OTP SMS via XML endpoint": ``src/netgsm.ts``,
``src/enums.ts``, ``openapi.json``, its unit tests):

- ``POST /sms/send/otp``, ``Content-Type: text/xml``, the credentials in the body::

      <?xml version="1.0"?>
      <mainbody><header><usercode>…</usercode><password>…</password>
      <msgheader>HEADER</msgheader></header>
      <body><msg><![CDATA[text]]></msg><no>5XXXXXXXXX</no></body></mainbody>

  one number per request, no scheduling; the text is one SMS part without Turkish letters.
- The answer: ``<xml><main><code>0</code><jobID>…</jobID></main></xml>``; a refusal carries
  its ``code`` and an ``<error>`` text: 20 text or length, 30 credentials or API access or
  IP, 40/41 header, 50 number, 60 no OTP package on the account, 70 parameters, 80 over 100
  OTP messages a minute, 100 system error.

Only code messages (D34) take this route, and only when the text fits: Turkish letters
become their Latin base letters (``ş`` → ``s``), and a text still over one GSM-7 part goes
the normal way. 60 and 80 say the OTP route cannot take the code now, while the account's
normal route can: the adapter sends it there (the caller's fallback) and skips the OTP route
for an hour (60) or a minute (80). Other refusals map to the same outcomes as the normal
route's codes. An accepted OTP job is polled like any NetGSM job: its id is
``"{jobID}:{number}"``.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping
from datetime import timedelta
from typing import Final
from xml.sax.saxutils import escape

from .._encoding import analyze_sms
from ._http import Answer

__all__ = [
    "FALL_BACK",
    "OTP_PATH",
    "OtpAnswer",
    "otp_body",
    "otp_text",
    "read_otp_answer",
]

OTP_PATH: Final = "/sms/send/otp"
#: Codes after which the normal route takes the message, and how long the OTP route rests.
FALL_BACK: Final[Mapping[str, timedelta]] = {
    "60": timedelta(hours=1),  # no OTP package: it will not appear within a send
    "80": timedelta(minutes=1),  # 100 a minute: the next minute has room again
}
# code -> (outcome kind, our code, what it means)
REFUSALS: Final[Mapping[str, tuple[str, str, str]]] = {
    "20": ("rejected", "BODY_REJECTED", "the text has a problem or is over one SMS"),
    "30": ("rejected", "PROVIDER_AUTH_FAILED",
           "wrong usercode or password, no API access, or the IP is not allowed"),
    "40": ("rejected", "SENDER_NOT_APPROVED", "the message header is not registered"),
    "41": ("rejected", "SENDER_NOT_APPROVED", "the message header is not valid"),
    "50": ("recipient_failed", "INVALID_RECIPIENT", "the number is not valid"),
    "70": ("rejected", "PROVIDER_REJECTED", "a parameter is wrong or missing"),
    "100": ("unavailable", "PROVIDER_UNAVAILABLE", "system error"),
}  # fmt: skip
#: Turkish letters the OTP route does not take, as their Latin base letters.
_FOLD: Final = str.maketrans("çÇğĞıİöÖşŞüÜ", "cCgGiIoOsSuU")


def otp_text(text: str) -> str | None:
    """``text`` as the OTP route takes it (Turkish letters folded), or ``None`` when it
    would still not be one plain GSM-7 part: then the message goes the normal way."""
    folded = text.translate(_FOLD)
    info = analyze_sms(folded, allow_turkish_shift=False)
    if info.encoding != "gsm7" or info.segments != 1:
        return None
    return folded


def otp_body(usercode: str, password: str, header: str, text: str, number: str) -> bytes:
    """The request's XML. The text goes in CDATA, as NetGSM's SDKs send it; a ``]]>`` in it
    is split across two sections so it cannot end the section early."""
    cdata = text.replace("]]>", "]]]]><![CDATA[>")
    return (
        '<?xml version="1.0" encoding="UTF-8"?>'
        "<mainbody><header>"
        f"<usercode>{escape(usercode)}</usercode>"
        f"<password>{escape(password)}</password>"
        f"<msgheader>{escape(header)}</msgheader>"
        "</header><body>"
        f"<msg><![CDATA[{cdata}]]></msg><no>{escape(number)}</no>"
        "</body></mainbody>"
    ).encode()


class OtpAnswer:
    """A read answer: ``code`` (``"0"`` accepted), ``jobid`` when accepted, ``error`` text."""

    __slots__ = ("code", "error", "jobid")

    def __init__(self, code: str, jobid: str | None, error: str | None) -> None:
        self.code, self.jobid, self.error = code, jobid, error

    @property
    def accepted(self) -> bool:
        return self.code == "0" and bool(self.jobid)


def read_otp_answer(answer: Answer) -> OtpAnswer | None:
    """The answer's ``<main>``, or ``None`` when it is not NetGSM's XML (the caller decides
    what an unreadable answer means: ``HttpAdapter.unreadable``)."""
    if answer.truncated or not answer.body.strip():
        return None
    try:
        root = ET.fromstring(answer.body)  # noqa: S314 - NetGSM's answer: no DTD, no entities
    except ET.ParseError:
        return None
    main = root if root.tag == "main" else root.find("main")
    if main is None:
        return None
    code = (main.findtext("code") or "").strip()
    if not code.isdigit():
        return None
    code = str(int(code))  # "00" and "0" alike
    jobid = (main.findtext("jobID") or main.findtext("jobid") or "").strip() or None
    error = (main.findtext("error") or "").strip() or None
    return OtpAnswer(code, jobid, error)
