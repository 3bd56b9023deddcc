"""The closed vocabularies of the contract: provider codes, channels, statuses, and which
strings name a template.

Nothing here imports beyond ``typing``, so the command line can build its help from it
without loading pydantic."""

from __future__ import annotations

from typing import Final, Literal, get_args

__all__ = [
    "ALL_PROVIDERS",
    "CHANNEL_OF",
    "IYS_MODES",
    "SMS_PROVIDERS",
    "TEMPLATE_KEY_PATTERN",
    "AttemptStatus",
    "Category",
    "Channel",
    "ConsentPolicy",
    "DeliveryStatus",
    "Encoding",
    "IysMode",
    "MessageStatus",
    "ProviderCode",
    "RecipientType",
    "SendPhase",
    "SubmitStatus",
]

#: A template's key (D9): the request models', the admin façade's and the CLI help's one rule.
TEMPLATE_KEY_PATTERN: Final = r"^[a-z0-9_]{1,64}$"

ProviderCode = Literal["sms_a", "sms_b", "sms_c", "sms_d", "sms_e", "chatbot", "bizchat"]
Channel = Literal["sms", "chatbot", "bizchat"]

#: Status at acceptance (SPEC 3), and ``unknown`` (with ``SUBMIT_INTERRUPTED``) in the answer
#: to a replayed send whose hand-over was cut off: nothing says whether a provider has it.
SubmitStatus = Literal["queued", "sent", "failed", "unknown"]
#: Final delivery status from a report (SPEC 3).
DeliveryStatus = Literal["delivered", "expired", "rejected", "failed", "unknown"]
#: Every status a message record can hold (D10).
MessageStatus = Literal["queued", "sent", "delivered", "expired", "rejected", "failed", "unknown"]
#: Where a message's own send is (stored, never guessed from its status or attempts):
#: ``refused`` before any provider (a bulk item's validation or the flood guard: never sent,
#: never counted by D28); ``accepted``, written ahead and possibly in a provider's hands;
#: ``waiting``, written ahead and held back by our own send rate (D27) before any provider
#: call; ``settled``, the send's outcome stored (the worker takes it from there);
#: ``scheduled``, waiting for its ``send_at`` or quiet hours: no provider has it and no
#: quota unit is taken yet (D17: charged at hand-over), which a cancel or a hand-over
#: refused for quota leaves as it is.
SendPhase = Literal["refused", "accepted", "waiting", "settled", "scheduled"]
#: An attempt is ``accepted`` or ``rejected`` at submit; a report later gives it its final state.
#: ``unavailable``: the provider could not be reached (time-out, 5xx, an open circuit);
#: ``rejected``: it answered and refused the message.
AttemptStatus = Literal[
    "accepted", "rejected", "unavailable", "delivered", "expired", "failed", "unknown"
]

#: SMS data coding (D24). Chat channels have no SMS encoding and report none.
Encoding = Literal["gsm7", "gsm7_turkish", "ucs2"]

#: IYS (the national consent registry) class of a connection's traffic.
IysMode = Literal["informational", "commercial_individual", "commercial_merchant"]
#: A message's class (D33): what İYS calls it. A commercial message needs the recipient's
#: consent (ONAY); its recipient is an individual (``BIREYSEL``) or a merchant (``TACIR``).
Category = Literal["informational", "commercial"]
RecipientType = Literal["BIREYSEL", "TACIR"]
#: A workspace's consent check at the hand-over gate (D33): ``off`` leaves it to the
#: providers; ``local`` refuses a commercial message without an ONAY on record here;
#: ``iys`` asks İYS (cached) for a recipient with no record here.
ConsentPolicy = Literal["off", "local", "iys"]

ALL_PROVIDERS: Final[tuple[ProviderCode, ...]] = get_args(ProviderCode)
IYS_MODES: Final[tuple[IysMode, ...]] = get_args(IysMode)
SMS_PROVIDERS: Final[frozenset[ProviderCode]] = frozenset(
    ("sms_a", "sms_b", "sms_c", "sms_d", "sms_e")
)
CHANNEL_OF: Final[dict[ProviderCode, Channel]] = {
    **dict.fromkeys(SMS_PROVIDERS, "sms"),
    "chatbot": "chatbot",
    "bizchat": "bizchat",
}
