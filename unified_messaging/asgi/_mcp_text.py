"""What the MCP server tells an agent: its instructions and each tool's description.

Written for a model deciding whether and how to call a tool: what it does, when to use it,
what it costs, and how test mode behaves. The facts are the contract's (SPEC, DESIGN D2,
D8, D14, and the simulator's magic numbers of DESIGN §6); keep them in step with
``docs/mcp.md`` and ``docs/testing.md``.
"""

from __future__ import annotations

from typing import Final

__all__ = ["DESCRIPTIONS", "INSTRUCTIONS", "TITLES"]

_COST: Final = (
    "Cost: with a live API key (um_live_…) messages really go out through the customer's own "
    "provider accounts, spending their provider credit and one unit of the workspace's monthly "
    "quota per message. Send only what the user asked for, and never repeat a send that "
    "returned a job_id: read it with get_message instead. With a test key (um_test_…) nothing "
    "leaves the server: every provider is simulated and nothing is charged. list_providers "
    "says which kind of key is in use (livemode)."
)

_TEST_NUMBERS: Final = (
    "Test mode only, the recipient decides what the simulated provider does. SMS and bizchat "
    "numbers +90555000000X: 01 provider rejects (status failed, PROVIDER_REJECTED; fallback "
    "moves on); 02 no IYS consent (failed, IYS_CONSENT_MISSING; fallback stops); 03 provider "
    "times out (with no fallback left: error PROVIDER_UNAVAILABLE carrying the kept job's "
    "job_id); 04, 05, 06, 07 accepted, later delivery report expired, rejected, failed, "
    "unknown; 08 accepted, no delivery report ever; 11, 12, 13 the first 1, 2 or 3 providers "
    "tried reject, the next accepts. chatbot: chat id 0 and @unreachable_bot_user give "
    "CHAT_UNREACHABLE. Any other valid recipient is accepted and delivered."
)

_ERRORS: Final = (
    "A failure is a tool error whose text starts with its code (for example "
    "'INVALID_RECIPIENT: …') and whose structured content is "
    '{"error": {"code", "message", "details" (VALIDATION_ERROR only: every wrong field), '
    '"job_id" (PROVIDER_UNAVAILABLE only)}}, the same codes as the REST API.'
)

_RECIPIENTS: Final = (
    "The channel follows the provider connection: SMS providers (sms_a … sms_e) take Turkish "
    "mobile numbers (+905…, 05…, 5…; normalized to +90…), chatbot a Telegram chat id or "
    "@channelname, bizchat a WhatsApp number in any country (E.164)."
)

INSTRUCTIONS: Final = (
    "Sends SMS (five Turkish providers), Telegram bot and WhatsApp Business messages through "
    "the provider accounts of the workspace that owns the API key. Start with list_providers "
    "(which connections exist, which is the default, whether the key is live) and "
    "list_templates. send_message sends one message, send_bulk up to 200; each answers at once "
    "with a job_id per message, and get_message reads its delivery state later. send_at "
    "schedules a send (up to 30 days ahead); cancel_message cancels one not yet handed over. "
    + _COST
    + " "
    + _ERRORS
)

_SCHEDULE: Final = (
    "To send later, give send_at: an ISO 8601 time with an offset (2026-12-01T09:00:00+03:00), "
    "from now up to 30 days ahead; the answer is status queued with send_at, and "
    "cancel_message can cancel it until then. A send inside the workspace's quiet hours also "
    "waits (queued, send_at = when they end); set ignore_quiet_hours true only for what must "
    "not wait, such as a one-time code."
)

TITLES: Final = {
    "send_message": "Send a message",
    "send_bulk": "Send to many recipients",
    "preview_message": "Check a message before sending it",
    "get_message": "Read a message's status",
    "cancel_message": "Cancel a scheduled message",
    "list_providers": "List provider connections",
    "list_templates": "List message templates",
    "list_suppressions": "List suppressed recipients",
    "add_suppression": "Suppress a recipient",
    "remove_suppression": "Un-suppress a recipient",
    "create_consent": "Record an İYS consent",
    "list_consents": "List İYS consents",
    "get_consent": "Read an İYS consent and its history",
    "start_verification": "Send a one-time code",
    "check_verification": "Check a one-time code",
}

DESCRIPTIONS: Final = {
    "send_message": (
        "Send one text message to one recipient. Give exactly one of body (plain text, "
        "1-1600 characters) or template (a key from list_templates, with its variables). "
        + _RECIPIENTS
        + " Without provider, the workspace's default connection sends (see list_providers). "
        "sender is the SMS header (default: the connection's). fallback lists up to 3 backup "
        "SMS providers, tried in order if the first one rejects or cannot be reached. "
        "Returns the job: job_id, status (sent = handed to the provider, not yet delivered; "
        "queued; failed = the provider refused it, with error), to as normalized, the provider "
        "that took it, and attempts when fallback was asked for. "
        + _SCHEDULE
        + " "
        + _COST
        + " "
        + _TEST_NUMBERS
        + " "
        + _ERRORS
    ),
    "send_bulk": (
        "Send to 1-200 recipients in one call, through one provider connection. Plain mode: "
        "every item has to and body. Template mode: give template once and each item to and "
        "its own variables (no body). provider, sender and fallback apply to every item. "
        + _RECIPIENTS
        + " A bad recipient or a missing template variable fails that item only: its result "
        "is failed with an error, and it still has a job_id. The whole call fails only for a "
        "problem of the request itself (schema, unknown provider or template, sender). Returns "
        "total, sent, failed and one result per item in order (to, status, job_id, error). "
        "send_at schedules the whole call, or one item (its own send_at). "
        "One call counts once against the rate limit; each message is one quota unit on a "
        "live key. " + _COST + " " + _TEST_NUMBERS + " " + _ERRORS
    ),
    "preview_message": (
        "Check a message without sending it: the same arguments as send_message, the same "
        "checks (an unknown provider or template, a bad recipient, a suppressed one, a refused "
        "commercial text: the same error codes), then what would be sent: to as normalized, "
        "the provider, category and recipient_type, the text as the recipient would read it "
        "(a template rendered), its SMS encoding and parts (parts_with_operator_code counts "
        "the 5 characters every operator appends), and hints: what a commercial SMS's text "
        'misses (OPT_OUT_MISSING: no İYS opt-out such as "RET yazıp 3338\'e gönderin"; '
        "TRADE_NAME_MISSING, MERSIS_MISSING: the brand's trade name or MERSİS number; "
        "COMMERCIAL_TAG_MISSING: the text should start with KAMPANYA, TANITIM or "
        "BİLGİLENDİRME; BRAND_NOT_SET). Use it to draft a commercial text before sending. "
        "Free: nothing is stored, sent or counted. " + _ERRORS
    ),
    "get_message": (
        "Read the current state of one message by the job_id a send returned: status (queued, "
        "sent, delivered, expired, rejected, failed, unknown), error, the delivery report "
        "(dlr), every provider attempt, timestamps, SMS segments and encoding, and livemode. "
        "Use it to follow up on a send instead of sending again. Free: it sends nothing. Test "
        "and live keys see separate worlds: a job sent with one kind of key is "
        "MESSAGE_NOT_FOUND for the other, as is another workspace's job. " + _ERRORS
    ),
    "cancel_message": (
        "Cancel a message that no provider has yet: one queued for its send_at, the "
        "workspace's quiet hours, a send slot or a retry. It ends failed with the error code "
        "CANCELED; canceling it again answers the same. A message already handed to a "
        "provider cannot be canceled: MESSAGE_NOT_CANCELABLE. Returns the status record. " + _ERRORS
    ),
    "list_providers": (
        "List the provider connections of the key's workspace: each one's provider code (pass "
        "it as provider when sending), channel (sms, chatbot, bizchat), whether it is the "
        "default, its default SMS header and the headers it may send with. Also livemode: "
        "whether this key sends for real (true) or is a free, simulated test key (false). "
        "Call it before sending when the provider or sender is in doubt. Free; credentials "
        "are never shown."
    ),
    "list_templates": (
        "List the message templates of the key's workspace: each one's key (pass it as "
        "template when sending), its body with {{ name }} placeholders, the variables a send "
        "must fill, a description, and the business chat (bizchat) template it maps to, if "
        "any. Free; it sends nothing."
    ),
    "list_suppressions": (
        "List the workspace's suppression list (recipients who opted out or were added by "
        "hand), newest first: each entry's id, channel (sms, chatbot, bizchat), recipient, "
        "reason, source (api, cli, dashboard, library, import, or the channel whose STOP "
        "reply or blocked bot added it) and time. Filter by channel and recipient; page with "
        "limit (1-100) and starting_after (the last id). Sends to a listed recipient fail "
        "with RECIPIENT_SUPPRESSED. Test and live keys have separate lists. Free. " + _ERRORS
    ),
    "add_suppression": (
        "Put a recipient on the suppression list of one channel (sms, chatbot, bizchat): "
        "sends to them there fail with RECIPIENT_SUPPRESSED from now on. recipient takes any "
        "form a send's to takes and is normalized the same way; reason is optional (1-200 "
        "characters). Adding one already listed returns the entry unchanged. Only for people "
        "who asked not to be messaged. " + _ERRORS
    ),
    "remove_suppression": (
        "Take a recipient off a channel's suppression list, so sends reach them again. Only "
        "when they asked for it: an opt-out is the recipient's decision. NOT_FOUND when they "
        "are not listed. " + _ERRORS
    ),
    "create_consent": (
        "Record a recipient's İYS consent for commercial messages: recipient (a number for "
        "type MESAJ, the default, or ARAMA; an e-mail for EPOSTA), status ONAY (consented) or "
        "RET (refused), source (İYS's HS_* value, e.g. HS_WEB; not needed for recipient_type "
        "TACIR), consent_date (when it was given; default now). Only what the recipient "
        "really gave: İYS's rules are checked (a first record cannot be RET; no date before "
        "2015-05-01, in the future, or over 3 business days back; no ONAY after an ONAY) and "
        "a refusal is a CONSENT_* code. A second one for the same address changes it. "
        "iys_state is pending: nothing is sent to İYS yet. " + _ERRORS
    ),
    "list_consents": (
        "List the workspace's İYS consents, newest first: each one's id, recipient, type, "
        "recipient_type, status (ONAY/RET), source, consent_date (and as İYS reads it, GMT+3) "
        "and iys_state. Filter by recipient and status; page with limit (1-100) and "
        "starting_after (the last id). Test and live keys have separate consents. Free. " + _ERRORS
    ),
    "get_consent": (
        "Read one İYS consent by its id (cns_…) with its history: every change's status, "
        "source, consent_date and when it was recorded. CONSENT_NOT_FOUND for an id this key "
        "cannot read. Free. " + _ERRORS
    ),
    "start_verification": (
        "Send a one-time verification code by SMS to a Turkish mobile number (to) and get a "
        "verification id (ver_…). Optional: channel sms (default), bizchat (WhatsApp, "
        "through the workspace's authentication template) or chatbot (Telegram, to a chat "
        'id); channels, an escalation order such as ["bizchat", "sms"]: the same code goes '
        "by the next channel when one fails or is not delivered in time; locale tr or en, "
        "code_length 4-10 (default 6), "
        "ttl in seconds (default 600, at most 3600), template (a key whose body has "
        "{{ code }}), app_hash (Android SMS Retriever). Calling it again for the same number "
        "re-sends a new code for the same verification, but not within 30 s "
        "(VERIFICATION_RATE_LIMITED) and at most 5 times. Never tell the user the code: they "
        "read it on their phone and tell you; pass it to check_verification. With a test key "
        "the code is in the message's body (get_message with the job_id in sends). "
        + _COST
        + " "
        + _ERRORS
    ),
    "check_verification": (
        "Check the code a user typed for a verification (id from start_verification). The "
        "status is approved (once: a second check is VERIFICATION_ALREADY_APPROVED), pending "
        "(wrong code; checks_remaining says how many tries are left), failed (too many wrong "
        "codes), expired or canceled. Free. " + _ERRORS
    ),
}
