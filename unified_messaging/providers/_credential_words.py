"""Each provider's credential fields as a person reads them: a label in words and a hint in
the provider's own terms (the parameter names of its API document, cited per provider in
docs/providers.md). The schemas keep the field names requests use; these are for forms."""

from __future__ import annotations

from typing import Final

__all__ = ["credential_words"]

#: (provider code, field name) -> (label, hint).
_WORDS: Final[dict[tuple[str, str], tuple[str, str]]] = {
    ("sms_a", "usercode"): (
        "User code",
        "NetGSM's usercode: the subscriber number (or API sub-user) you sign in with.",
    ),
    ("sms_a", "password"): ("Password", "The password of that NetGSM user."),
    ("sms_a", "appname"): ("App name", "NetGSM's appname: how your app is named in its reports."),
    ("sms_a", "otp"): (
        "OTP route",
        "true: one-time codes go by NetGSM's OTP route (the account needs an OTP package).",
    ),
    ("sms_b", "api_key"): ("API key", "İletimerkezi's API key (key): Settings > Security > API."),
    ("sms_b", "api_hash"): ("API hash", "İletimerkezi's API hash (hash), beside the API key."),
    ("sms_c", "username"): (
        "Account number",
        "Verimor's username: the 12-digit account number (90850…).",
    ),
    ("sms_c", "password"): ("API password", "Verimor's API password, not the panel's."),
    ("sms_d", "username"): ("User name", "Mutlucell's ka (kullanıcı adı)."),
    ("sms_d", "password"): ("Password or API key", "Mutlucell's pwd: the password or API key."),
    ("sms_e", "username"): (
        "User name",
        "Kannel's sendsms-user username, or the Jasmin user.",
    ),
    ("sms_e", "password"): ("Password", "That gateway user's password."),
    ("sms_e", "dlr_url"): (
        "Report address",
        "This server's public base address (https://…): the gateway pushes its delivery "
        "reports there. Empty: no reports, messages end unknown.",
    ),
    ("sms_e", "gateway"): ("Gateway", "kannel (its sendsms interface, the default) or jasmin."),
    ("sms_e", "smsc"): ("SMSC route", "Kannel only: the smsc id to send through."),
    ("sms_e", "max_parts"): (
        "Most parts per message",
        "Kannel's max-messages of this sendsms-user (1 by default); Jasmin's "
        "long_content_max_parts (5).",
    ),
    ("chatbot", "bot_token"): ("Bot token", "The token @BotFather gave the bot (123456:ABC…)."),
    ("bizchat", "access_token"): (
        "Access token",
        "A system user's access token from Meta Business settings, with "
        "whatsapp_business_messaging.",
    ),
    ("bizchat", "phone_number_id"): (
        "Phone number ID",
        "The Phone number ID of WhatsApp Manager's API setup (not the number itself).",
    ),
    ("bizchat", "app_secret"): (
        "App secret",
        "The Meta app's App secret (App settings > Basic): it signs Meta's webhooks.",
    ),
    ("bizchat", "verify_token"): (
        "Verify token",
        "Any string you choose; type the same in the app's webhook configuration.",
    ),
    ("bizchat", "api_version"): ("Graph API version", "e.g. v21.0; empty: the tested default."),
}


def credential_words(provider: str, name: str) -> tuple[str, str | None]:
    """The label and hint of ``provider``'s credential ``name``; a field we have no words
    for (a host's own adapter) keeps its name and no hint."""
    label, hint = _WORDS.get((provider, name), (name, None))
    return label, hint
