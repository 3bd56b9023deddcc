"""Meta's WhatsApp Cloud API error codes and what each one means for us: one table.

The same table reads a send's Graph API error (``{"error": {"code": …}}``) and a ``failed``
status webhook's ``errors[].code``, so a code means the same thing whenever it arrives.

Sources (Meta asks clients to decide on ``code``, not on titles or HTTP statuses):

- Meta, "WhatsApp error codes" (developers.facebook.com/documentation/business-messaging/
  whatsapp/support/error-codes): authorization, throttling, integrity, registration, template
  and message codes, with their titles;
- Meta, "Graph API error handling" (developers.facebook.com/docs/graph-api/guides/
  error-handling): the Graph-wide rate-limit codes 17, 32, 341 and 613;
- pywa (github.com/david-lev/pywa, ``pywa/errors.py``), which maps the same codes to
  exception classes: 131064 and 137000 come from there.

Each code has one effect:

``rejected``
    Provider-level refusal (auth, the account, the request, the template): another provider
    could take the message (``bizchat`` has no fallback, so it ends ``failed``).
``recipient_failed``
    The recipient cannot or may not get it (window closed, opted out, undeliverable):
    routing stops.
``unavailable``
    Meta's side is broken for now: the breaker counts it.
``throttled``
    The account, app or number is over a limit: ``unavailable``, and the connection pauses
    (D26) for the ``Retry-After`` Meta gives, else for the row's ``pause`` (Meta's rate-limit
    errors carry none; the breaker's probe guards what comes after).

The pair rate limit (131056, one business number to one user) is per recipient: it is
``unavailable`` with ``PROVIDER_RECIPIENT_THROTTLED``, which the breaker leaves out, so one
busy recipient never pauses everybody's messages (docs/decisions.md, "WhatsApp's pair rate").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal

from .._domain import ErrorInfo
from .base import SubmitOutcome

__all__ = ["GRAPH_CODES", "UNKNOWN_FAILURE", "Effect", "GraphCode", "graph_code"]

Effect = Literal["rejected", "recipient_failed", "unavailable", "throttled"]


@dataclass(frozen=True, slots=True)
class GraphCode:
    """What one Graph API error code means: its effect, our error code, Meta's title."""

    effect: Effect
    code: str
    #: Meta's title of the code (its meaning; titles may change, the code does not).
    title: str
    #: ``throttled``: seconds the connection pauses when the answer names no ``Retry-After``.
    pause: float | None = None

    def __post_init__(self) -> None:
        if (self.effect == "throttled") != (self.pause is not None):
            raise ValueError("a throttled code has a pause, and only a throttled one")

    def outcome(self, said: str, retry_after: float | None) -> SubmitOutcome:
        """The send's outcome, ``said`` being Meta's words for it (code, title, details)."""
        if self.effect == "throttled":
            wait = retry_after if retry_after is not None else self.pause
            return SubmitOutcome.unavailable(said, code=self.code, retry_after=wait)
        if self.effect == "unavailable":
            return SubmitOutcome.unavailable(said, code=self.code, retry_after=retry_after)
        return SubmitOutcome(self.effect, error=ErrorInfo(self.code, said))


def _auth(title: str) -> GraphCode:
    return GraphCode("rejected", "PROVIDER_AUTH_FAILED", title)


def _refused(title: str) -> GraphCode:
    return GraphCode("rejected", "PROVIDER_REJECTED", title)


def _template(title: str) -> GraphCode:
    return GraphCode("rejected", "TEMPLATE_REJECTED", title)


def _recipient(code: str, title: str) -> GraphCode:
    return GraphCode("recipient_failed", code, title)


def _busy(title: str) -> GraphCode:
    return GraphCode("unavailable", "PROVIDER_UNAVAILABLE", title)


def _throttled(title: str, pause: float) -> GraphCode:
    return GraphCode("throttled", "PROVIDER_UNAVAILABLE", title, pause)


#: Pauses where Meta gives no Retry-After. Graph's call limits are counted over rolling
#: windows of minutes to an hour: a minute, then the probe finds out. Throughput (80 or 1,000
#: messages a second) recovers within seconds. The spam and messaging limits follow the
#: number's quality and last far longer: the longest pause the breaker takes (an hour).
_MINUTE: Final = 60.0
_SECONDS: Final = 5.0
_QUALITY: Final = 3600.0

GRAPH_CODES: Final[Mapping[int, GraphCode]] = {
    # --- authorization
    0: _auth("AuthException: Meta could not authenticate the app user"),
    3: _auth("API Method: capability or permissions issue"),
    10: _auth("Permission Denied: permission not granted or removed"),
    190: _auth("Access token has expired"),
    **{code: _auth("API Permission: permission not granted or removed")
       for code in range(200, 300)},
    # --- throttling of the app, the account or the number: the connection pauses
    4: _throttled("API Too Many Calls: the app reached its API call rate limit", _MINUTE),
    17: _throttled("User request limit reached (Graph API)", _MINUTE),
    32: _throttled("Page request limit reached (Graph API)", _MINUTE),
    341: _throttled("Application limit reached (Graph API)", _MINUTE),
    613: _throttled("Calls to this API have exceeded the rate limit", _MINUTE),
    80007: _throttled("Rate limit issues: the WhatsApp Business Account reached its rate limit",
                      _MINUTE),
    130429: _throttled("Rate limit hit: Cloud API message throughput has been reached", _SECONDS),
    131048: _throttled("Spam rate limit hit: too many previous messages were blocked or flagged",
                       _QUALITY),
    131064: _throttled("Messaging limit reached after template classification violations",
                       _QUALITY),
    133016: _throttled("Account register/deregister rate limit exceeded", _MINUTE),
    133015: _throttled("Wait a few minutes before registering this phone number again", 300.0),
    # --- one recipient throttled: not the connection's health (see the module docstring)
    131056: GraphCode("unavailable", "PROVIDER_RECIPIENT_THROTTLED",
                      "(Business Account, Consumer Account) pair rate limit hit"),
    # --- Meta's side
    1: _busy("API Unknown: invalid request or possible server error"),
    2: _busy("API Service: temporary downtime or overload"),
    131000: _busy("Something went wrong"),
    131016: _busy("Service unavailable"),
    131057: _busy("Business Account is in maintenance mode"),
    133004: _busy("Server temporarily unavailable"),
    # --- the recipient: every provider would fail it, routing stops
    131047: _recipient("OUTSIDE_CUSTOMER_SERVICE_WINDOW",
                       "Re-engagement message: more than 24 hours since the user last replied"),
    470: _recipient("OUTSIDE_CUSTOMER_SERVICE_WINDOW",
                    "Message expired: the customer service window is closed (legacy code)"),
    131050: _recipient("RECIPIENT_OPTED_OUT",
                       "The user has stopped marketing messages from this business"),
    131026: _recipient("RECIPIENT_UNREACHABLE", "Message undeliverable"),
    131049: _recipient("RECIPIENT_UNREACHABLE",
                       "Not delivered to maintain healthy ecosystem engagement "
                       "(per-user marketing limit)"),
    130472: _recipient("RECIPIENT_UNREACHABLE", "User's number is part of an experiment"),
    137000: _recipient("RECIPIENT_UNREACHABLE",
                       "The recipient's identity key hash does not match the one on record"),
    131021: _recipient("INVALID_RECIPIENT", "Recipient cannot be sender"),
    # --- integrity: the account is restricted
    368: _refused("Temporarily blocked for policies violations"),
    130497: _refused("Business account is restricted from messaging users in this country"),
    131031: _refused("Account has been locked"),
    # --- the request or the business number
    33: _refused("Parameter value is not valid: the business phone number has been deleted"),
    100: _refused("Invalid parameter"),
    131005: _refused("Access denied"),
    131008: _refused("Required parameter is missing"),
    131009: _refused("Parameter value is not valid"),
    131030: _refused("Recipient phone number not in the test number's allowed list"),
    131037: _refused("The business phone number's display name is not approved"),
    131042: _refused("Business eligibility payment issue"),
    131044: _refused("Business eligibility payment issue (calling)"),
    131045: _refused("Incorrect certificate: phone number registration error"),
    131051: _refused("Unsupported message type"),
    131052: _refused("Media download error"),
    131053: _refused("Media upload error"),
    131062: _refused("Business-scoped user id recipients are not supported for this message"),
    132068: _refused("Flow is in blocked state"),
    132069: _refused("Flow is throttled: 10 messages with this flow were sent in the last hour"),
    133000: _refused("Incomplete deregistration"),
    133005: _refused("Two-step verification PIN mismatch"),
    133006: _refused("Phone number re-verification needed"),
    133008: _refused("Too many two-step verification PIN guesses"),
    133009: _refused("Two-step verification PIN guessed too fast"),
    133010: _refused("Phone number not registered"),
    135000: _refused("Generic user error: an unknown error with the request's parameters"),
    # --- templates
    131063: _template("Marketing templates are disabled for Cloud API on this account"),
    132000: _template("Template parameter count mismatch"),
    132001: _template("Template does not exist in this language, or is not approved"),
    132005: _template("Template hydrated text too long"),
    132007: _template("Template format character policy violated"),
    132008: _template("Template parameter value is invalid"),
    132012: _template("Template parameter format mismatch"),
    132015: _template("Template is paused for low quality"),
    132016: _template("Template is disabled after being paused too many times"),
}  # fmt: skip
"""Every Graph API error code a Cloud API send or status can carry, and its meaning."""

#: A ``failed`` status with no code, or one not in the table: WhatsApp could not deliver it.
UNKNOWN_FAILURE: Final = GraphCode("recipient_failed", "RECIPIENT_UNREACHABLE", "Undeliverable")


def graph_code(code: object) -> GraphCode | None:
    """The table's row for ``code`` (an ``int``, as Graph sends it), else ``None``."""
    if isinstance(code, bool) or not isinstance(code, int):
        return None
    return GRAPH_CODES.get(code)
