"""Bad input of every shape through ``Messenger.send``/``send_bulk`` (SPEC 2, 7, 8; D5-9, D15, D23).

Requests are plain mappings, as they arrive from JSON. Each bad one must raise the right
:class:`MessagingError` (class, ``code``, ``http_status``); a 400 names every offending field
by its dotted path in ``details``. Nothing else may escape: no ``ValidationError``, no
``KeyError``, no 500.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from unified_messaging import (
    ALL_PROVIDERS,
    BulkResponse,
    ChatUnreachable,
    FallbackNotAllowed,
    InvalidRecipient,
    MessagingError,
    Principal,
    ProviderNotConnected,
    ProviderUnavailable,
    QuotaExceeded,
    RequestInvalid,
    SenderNotApproved,
    SendResponse,
    TemplateNotFound,
    TemplateVariableMissing,
)
from unified_messaging.testing import TestBed

NUMBER = "+905321234567"
OTHER_NUMBER = "+905339876543"
LANDLINE = "+902121234567"
FOREIGN = "+14155552671"
SENDER = "UMTEST"  # the testbed's approved default sender

Request = Mapping[str, Any]
T = TypeVar("T")


def plain(**fields: Any) -> dict[str, Any]:
    """A valid plain-text send request, with ``fields`` replacing or adding keys."""
    return {"to": NUMBER, "body": "Merhaba", **fields}


def bulk_items(count: int, **fields: Any) -> list[dict[str, Any]]:
    return [{"to": NUMBER, "body": f"message {i}", **fields} for i in range(count)]


async def send_error(
    bed: TestBed, request: object, *, auth: Principal | None = None
) -> MessagingError:
    with pytest.raises(MessagingError) as info:
        await bed.messenger.send(auth or bed.principal, request)  # type: ignore[arg-type]
    return info.value


async def bulk_error(bed: TestBed, request: object) -> MessagingError:
    with pytest.raises(MessagingError) as info:
        await bed.messenger.send_bulk(bed.principal, request)  # type: ignore[arg-type]
    return info.value


def assert_invalid(error: Exception, *fields: str) -> RequestInvalid:
    """A 400 ``VALIDATION_ERROR`` whose ``details`` name exactly ``fields``."""
    assert isinstance(error, RequestInvalid), repr(error)
    assert (error.code, error.http_status) == ("VALIDATION_ERROR", 400)
    assert [detail.field for detail in error.details] == list(fields)
    assert all(detail.message for detail in error.details)
    return error


def assert_error(error: Exception, kind: type[MessagingError], code: str, status: int) -> None:
    assert isinstance(error, kind), repr(error)
    assert (error.code, error.http_status) == (code, status)


async def small_workspace(bed: TestBed, *codes: str) -> Principal:
    """A second test-mode workspace of the same messenger with only ``codes`` connected."""
    messenger = bed.messenger
    workspace = await messenger.workspaces.create("small")
    for code in codes:
        await messenger.connections.add(
            workspace.id,
            code,  # type: ignore[arg-type]
            default_sender=SENDER,
            approved_senders=(SENDER,),
        )
    return await messenger.principal(workspace.id, livemode=False)


# ------------------------------------------------------------------------------ to


async def test_empty_to_is_a_400_naming_to(bed: TestBed) -> None:
    assert_invalid(await send_error(bed, plain(to="")), "to")


async def test_one_character_to_passes_the_schema_and_is_judged_as_a_recipient(
    bed: TestBed,
) -> None:
    error = await send_error(bed, plain(to="5"))
    assert_error(error, InvalidRecipient, "INVALID_RECIPIENT", 422)


async def test_to_of_64_characters_is_accepted(bed: TestBed) -> None:
    padded = NUMBER.rjust(64)  # surrounding spaces are tolerated, and count toward the limit
    assert len(padded) == 64
    response = await bed.messenger.send(bed.principal, plain(to=padded))
    assert (response.status, response.to) == ("sent", NUMBER)


async def test_to_of_65_characters_is_a_400_naming_to(bed: TestBed) -> None:
    error = await send_error(bed, plain(to=NUMBER.rjust(65)))
    assert_invalid(error, "to")
    assert len(bed.outbox) == 0


# ------------------------------------------------------------------------------ body


@pytest.mark.parametrize(
    "body",
    [
        pytest.param("x", id="1-char"),
        pytest.param("x" * 1600, id="1600-ascii"),
        pytest.param(("ğüşıöçĞÜŞİÖÇ" * 200)[:1600], id="1600-turkish"),
        pytest.param("😀" * 1600, id="1600-emoji"),
        pytest.param("\U0001f1f9\U0001f1f7" * 800, id="1600-flag-code-points"),
    ],
)
async def test_body_of_1_to_1600_characters_is_sent_verbatim(bed: TestBed, body: str) -> None:
    assert len(body) in (1, 1600)
    response = await bed.messenger.send(bed.principal, plain(body=body))
    assert response.status == "sent"
    assert bed.outbox.texts() == [body]


async def test_empty_body_without_template_is_a_400_naming_body(bed: TestBed) -> None:
    assert_invalid(await send_error(bed, plain(body="")), "body")


@pytest.mark.parametrize("body", ["x" * 1601, "ş" * 1601, "😀" * 1601])
async def test_body_of_1601_characters_is_a_400_naming_body(bed: TestBed, body: str) -> None:
    assert_invalid(await send_error(bed, plain(body=body)), "body")
    assert len(bed.outbox) == 0


# ------------------------------------------------------------------------------ sender


async def test_unapproved_sender_of_32_characters_passes_the_schema_but_is_not_approved(
    bed: TestBed,
) -> None:
    error = await send_error(bed, plain(sender="S" * 32))
    assert_error(error, SenderNotApproved, "SENDER_NOT_APPROVED", 422)


async def test_sender_of_33_characters_is_a_400_naming_sender(bed: TestBed) -> None:
    assert_invalid(await send_error(bed, plain(sender="S" * 33)), "sender")


async def test_approved_sender_is_used(bed: TestBed) -> None:
    await bed.messenger.send(bed.principal, plain(sender=SENDER))
    assert [item.sender for item in bed.outbox] == [SENDER]


async def test_empty_sender_means_the_connection_default(bed: TestBed) -> None:
    await bed.messenger.send(bed.principal, plain(sender=""))
    assert [item.sender for item in bed.outbox] == [SENDER]


async def test_sender_is_ignored_for_the_chat_channels(bed: TestBed) -> None:
    response = await bed.messenger.send(
        bed.principal, plain(to="@some_user", provider="chatbot", sender="NOT APPROVED")
    )
    assert response.status == "sent"
    assert [item.sender for item in bed.outbox] == [None]


async def test_32_character_sender_without_an_approved_list_reaches_the_provider(
    bed: TestBed,
) -> None:
    # Nothing but the provider judges it then; the simulator refuses headers over 11 chars.
    workspace = await bed.messenger.workspaces.create("open senders")
    await bed.messenger.connections.add(workspace.id, "sms_a", default_sender=SENDER)
    auth = await bed.messenger.principal(workspace.id, livemode=False)
    response = await bed.messenger.send(auth, plain(sender="S" * 32))
    assert response.status == "failed"
    assert response.error is not None
    assert response.error.code == "PROVIDER_REJECTED"


# ------------------------------------------------------------------------------ template key


@pytest.mark.parametrize(
    "key",
    ["Welcome", "WELCOME", "order-shipped", "a" * 65, "", "with space", "ünicode", "a.b"],
)
async def test_template_key_outside_the_pattern_is_a_400_naming_template(
    bed: TestBed, key: str
) -> None:
    assert_invalid(await send_error(bed, {"to": NUMBER, "template": key}), "template")


@pytest.mark.parametrize("key", ["a", "a" * 64, "order_shipped_2", "_", "0"])
async def test_template_key_inside_the_pattern_is_looked_up(bed: TestBed, key: str) -> None:
    error = await send_error(bed, {"to": NUMBER, "template": key})
    assert_error(error, TemplateNotFound, "TEMPLATE_NOT_FOUND", 404)


# ------------------------------------------------------------------------------ provider


@pytest.mark.parametrize(
    "provider",
    ["sms_z", "telegram", "SMS_A", "sms a", "sms_a ", "a" * 64, "a" * 65, ""],
)
async def test_provider_that_is_not_a_known_code_is_a_400_naming_provider(
    bed: TestBed, provider: str
) -> None:
    error = assert_invalid(await send_error(bed, plain(provider=provider)), "provider")
    assert "unknown provider code" in error.details[0].message


@pytest.mark.parametrize("provider", ALL_PROVIDERS)
async def test_every_known_provider_code_routes_to_its_connection(
    bed: TestBed, provider: str
) -> None:
    to = "@some_user" if provider == "chatbot" else NUMBER
    response = await bed.messenger.send(bed.principal, plain(to=to, provider=provider))
    assert response.provider == provider


async def test_provider_not_connected_is_a_404(bed: TestBed) -> None:
    auth = await small_workspace(bed, "sms_a")
    error = await send_error(bed, plain(provider="sms_b"), auth=auth)
    assert_error(error, ProviderNotConnected, "PROVIDER_NOT_CONNECTED", 404)


# ------------------------------------------------------------------------------ fallback


async def test_fallback_of_3_providers_is_accepted_and_reports_attempts(bed: TestBed) -> None:
    response = await bed.messenger.send(
        bed.principal, plain(provider="sms_a", fallback=["sms_b", "sms_c", "sms_d"])
    )
    assert response.status == "sent"
    assert response.attempts is not None
    assert [(a.provider, a.status) for a in response.attempts] == [("sms_a", "accepted")]


async def test_fallback_of_4_providers_is_a_400_naming_fallback(bed: TestBed) -> None:
    request = plain(provider="sms_a", fallback=["sms_b", "sms_c", "sms_d", "sms_e"])
    assert_invalid(await send_error(bed, request), "fallback")


async def test_fallback_listing_a_provider_twice_is_a_400(bed: TestBed) -> None:
    request = plain(provider="sms_a", fallback=["sms_b", "sms_b"])
    assert_invalid(await send_error(bed, request), "fallback")


async def test_fallback_containing_the_forced_primary_is_a_400(bed: TestBed) -> None:
    request = plain(provider="sms_b", fallback=["sms_c", "sms_b"])
    assert_invalid(await send_error(bed, request), "fallback")


async def test_fallback_containing_the_default_primary_is_a_400(bed: TestBed) -> None:
    # No ``provider``: the primary is the workspace default, sms_a (the first connection).
    assert_invalid(await send_error(bed, plain(fallback=["sms_b", "sms_a"])), "fallback")


@pytest.mark.parametrize("chat", ["chatbot", "bizchat"])
async def test_chat_provider_in_fallback_is_422_fallback_not_allowed(
    bed: TestBed, chat: str
) -> None:
    error = await send_error(bed, plain(provider="sms_a", fallback=["sms_b", chat]))
    assert_error(error, FallbackNotAllowed, "FALLBACK_NOT_ALLOWED", 422)


async def test_fallback_from_a_chat_primary_is_422_fallback_not_allowed(bed: TestBed) -> None:
    request = plain(to="@some_user", provider="chatbot", fallback=["sms_a"])
    error = await send_error(bed, request)
    assert_error(error, FallbackNotAllowed, "FALLBACK_NOT_ALLOWED", 422)


async def test_fallback_provider_not_connected_is_a_404(bed: TestBed) -> None:
    auth = await small_workspace(bed, "sms_a", "sms_b")
    error = await send_error(bed, plain(fallback=["sms_b", "sms_c"]), auth=auth)
    assert_error(error, ProviderNotConnected, "PROVIDER_NOT_CONNECTED", 404)
    assert "sms_c" in error.message
    assert len(bed.outbox) == 0


async def test_empty_fallback_is_the_same_as_none(bed: TestBed) -> None:
    response = await bed.messenger.send(bed.principal, plain(fallback=[]))
    assert response.status == "sent"
    assert response.attempts is None


# ------------------------------------------------------------------------------ body / template


async def test_body_and_template_together_is_a_400(bed: TestBed) -> None:
    await bed.messenger.templates.set(bed.workspace.id, "hello", "Hi")
    error = await send_error(bed, {"to": NUMBER, "body": "x", "template": "hello"})
    assert_invalid(error, "body")


@pytest.mark.parametrize("request_", [{"to": NUMBER}, {"to": NUMBER, "body": None}])
async def test_neither_body_nor_template_is_a_400(bed: TestBed, request_: Request) -> None:
    assert_invalid(await send_error(bed, request_), "body")


async def test_variables_without_template_is_a_400_naming_variables(bed: TestBed) -> None:
    assert_invalid(await send_error(bed, plain(variables={"name": "Ayşe"})), "variables")


@pytest.mark.parametrize("empty_body", ["", None])
async def test_empty_body_beside_a_template_is_allowed(
    bed: TestBed, empty_body: str | None
) -> None:
    await bed.messenger.templates.set(bed.workspace.id, "hello", "Hi {{ name }}")
    request = {"to": NUMBER, "body": empty_body, "template": "hello", "variables": {"name": "A"}}
    response = await bed.messenger.send(bed.principal, request)
    assert (response.status, response.template) == ("sent", "hello")
    assert bed.outbox.texts() == ["Hi A"]


async def test_unknown_top_level_fields_are_a_400_naming_each(bed: TestBed) -> None:
    error = await send_error(bed, plain(priority="high", callback_url="https://x.test"))
    error = assert_invalid(error, "priority", "callback_url")
    assert {d.message for d in error.details} == {"unknown field"}


async def test_unknown_bulk_field_is_a_400_naming_it(bed: TestBed) -> None:
    error = await bulk_error(bed, {"items": bulk_items(1), "schedule_at": "tomorrow"})
    assert assert_invalid(error, "schedule_at").details[0].message == "unknown field"


async def test_unknown_field_inside_a_bulk_item_is_a_400_naming_its_path(bed: TestBed) -> None:
    items = bulk_items(3)
    items[2]["colour"] = "red"
    error = await bulk_error(bed, {"items": items})
    assert assert_invalid(error, "items.2.colour").details[0].message == "unknown field"
    assert len(bed.outbox) == 0


# ------------------------------------------------------------------------------ bulk sizes


async def test_bulk_of_zero_items_is_a_400_naming_items(bed: TestBed) -> None:
    assert_invalid(await bulk_error(bed, {"items": []}), "items")


async def test_bulk_of_one_item_is_sent(bed: TestBed) -> None:
    response = await bed.messenger.send_bulk(bed.principal, {"items": bulk_items(1)})
    assert (response.total, response.sent, response.failed) == (1, 1, 0)


async def test_bulk_of_200_items_is_sent_with_200_distinct_job_ids(bed: TestBed) -> None:
    # 200 recipients: one recipient would meet the flood guard (D28) after 10.
    items = [{"to": f"+90532{i:07d}", "body": f"message {i}"} for i in range(200)]
    response = await bed.messenger.send_bulk(bed.principal, {"items": items})
    assert (response.total, response.sent, response.failed) == (200, 200, 0)
    assert len({result.job_id for result in response.results}) == 200
    assert len(bed.outbox.accepted) == 200


async def test_bulk_of_201_items_is_a_400_and_sends_nothing(bed: TestBed) -> None:
    assert_invalid(await bulk_error(bed, {"items": bulk_items(201)}), "items")
    assert len(bed.outbox) == 0


async def test_bulk_item_to_over_64_characters_names_the_item(bed: TestBed) -> None:
    items = bulk_items(5)
    items[3]["to"] = NUMBER.rjust(65)
    assert_invalid(await bulk_error(bed, {"items": items}), "items.3.to")


async def test_bulk_template_mode_with_an_item_body_is_a_400(bed: TestBed) -> None:
    await bed.messenger.templates.set(bed.workspace.id, "hello", "Hi")
    items: list[dict[str, Any]] = [{"to": NUMBER, "variables": {}}, {"to": NUMBER, "body": "x"}]
    error = await bulk_error(bed, {"template": "hello", "items": items})
    assert_invalid(error, "items.1.body")


async def test_bulk_plain_mode_without_an_item_body_is_a_400(bed: TestBed) -> None:
    items = [*bulk_items(2), {"to": NUMBER}]
    assert_invalid(await bulk_error(bed, {"items": items}), "items.2.body")


async def test_bulk_plain_mode_with_item_variables_is_a_400(bed: TestBed) -> None:
    items = bulk_items(2)
    items[0]["variables"] = {"name": "A"}
    assert_invalid(await bulk_error(bed, {"items": items}), "items.0.variables")


# ------------------------------------------------------------------------------ bulk items


def assert_counts_add_up(response: BulkResponse) -> None:
    statuses = [result.status for result in response.results]
    assert response.total == len(response.results)
    assert response.failed == statuses.count("failed")
    assert response.sent + response.failed == response.total
    assert all(result.job_id for result in response.results)
    assert len({result.job_id for result in response.results}) == response.total


async def test_bad_bulk_recipients_fail_only_their_items(bed: TestBed) -> None:
    tos = [NUMBER, "garbage", LANDLINE, OTHER_NUMBER, FOREIGN]
    items = [{"to": to, "body": "x"} for to in tos]
    response = await bed.messenger.send_bulk(bed.principal, {"items": items})

    assert_counts_add_up(response)
    assert (response.total, response.sent, response.failed) == (5, 2, 3)
    assert [r.status for r in response.results] == ["sent", "failed", "failed", "sent", "failed"]
    failed = [r for r in response.results if r.status == "failed"]
    assert [r.to for r in failed] == ["garbage", LANDLINE, FOREIGN]
    assert {r.error.code for r in failed if r.error} == {"INVALID_RECIPIENT"}
    assert sorted(bed.outbox.recipients()) == sorted([NUMBER, OTHER_NUMBER])


async def test_a_failed_bulk_item_is_still_readable_by_its_job_id(bed: TestBed) -> None:
    items = [{"to": "garbage", "body": "x"}]
    response = await bed.messenger.send_bulk(bed.principal, {"items": items})
    record = await bed.messenger.get_message(bed.principal, response.results[0].job_id)
    assert record.status == "failed"
    assert record.error is not None
    assert record.error.code == "INVALID_RECIPIENT"


async def test_missing_variables_fail_only_their_bulk_items(bed: TestBed) -> None:
    await bed.messenger.templates.set(bed.workspace.id, "hello", "Hi {{ name }}")
    items: list[dict[str, Any]] = [
        {"to": NUMBER, "variables": {"name": "Ayşe"}},
        {"to": OTHER_NUMBER, "variables": {"nam": "typo"}},
        {"to": OTHER_NUMBER},
    ]
    response = await bed.messenger.send_bulk(bed.principal, {"template": "hello", "items": items})

    assert_counts_add_up(response)
    assert [r.status for r in response.results] == ["sent", "failed", "failed"]
    codes = [r.error.code for r in response.results if r.error]
    assert codes == ["TEMPLATE_VARIABLE_MISSING", "TEMPLATE_VARIABLE_MISSING"]
    assert bed.outbox.texts() == ["Hi Ayşe"]


async def test_unreachable_chat_fails_only_its_bulk_item(bed: TestBed) -> None:
    items = [{"to": to, "body": "x"} for to in ["@some_user", "0", "@ab", "12345"]]
    request = {"provider": "chatbot", "items": items}
    response = await bed.messenger.send_bulk(bed.principal, request)

    assert_counts_add_up(response)
    assert [r.status for r in response.results] == ["sent", "failed", "failed", "sent"]
    codes = [r.error.code for r in response.results if r.error]
    assert codes == ["CHAT_UNREACHABLE", "INVALID_RECIPIENT"]


# ------------------------------------------------------------------------------ wrong types


@pytest.mark.parametrize(
    ("request_", "field"),
    [
        pytest.param({"to": 123, "body": "x"}, "to", id="to-int"),
        pytest.param({"to": True, "body": "x"}, "to", id="to-bool"),
        pytest.param({"to": [NUMBER], "body": "x"}, "to", id="to-list"),
        pytest.param({"to": None, "body": "x"}, "to", id="to-null"),
        pytest.param({"body": "x"}, "to", id="to-missing"),
        pytest.param(plain(body=["x"]), "body", id="body-list"),
        pytest.param(plain(body=1600), "body", id="body-int"),
        pytest.param(plain(body={"text": "x"}), "body", id="body-object"),
        pytest.param(plain(sender=7), "sender", id="sender-int"),
        pytest.param(plain(provider=1), "provider", id="provider-int"),
        pytest.param(plain(provider=["sms_a"]), "provider", id="provider-list"),
        pytest.param(plain(fallback="sms_b"), "fallback", id="fallback-string"),
        pytest.param(plain(fallback={"sms_b": 1}), "fallback", id="fallback-object"),
        pytest.param(plain(fallback=[1]), "fallback.0", id="fallback-item-int"),
        pytest.param(plain(fallback=["sms_b", "nope"]), "fallback.1", id="fallback-item-code"),
        pytest.param({"to": NUMBER, "template": 5}, "template", id="template-int"),
        pytest.param({"to": NUMBER, "template": "t", "variables": "x"}, "variables", id="vars-str"),
        pytest.param({"to": NUMBER, "template": "t", "variables": ["a"]}, "variables", id="v-list"),
        pytest.param(
            {"to": NUMBER, "template": "t", "variables": {"a": {"nested": 1}}},
            "variables.a",
            id="variable-object",
        ),
        pytest.param(
            {"to": NUMBER, "template": "t", "variables": {"a": None}}, "variables.a", id="v-null"
        ),
        pytest.param(
            {"to": NUMBER, "template": "t", "variables": {"a": [1, 2]}}, "variables.a", id="v-list"
        ),
    ],
)
async def test_wrong_type_is_a_400_naming_the_field(
    bed: TestBed, request_: Request, field: str
) -> None:
    assert_invalid(await send_error(bed, request_), field)


@pytest.mark.parametrize(
    "document", [[], [plain()], "to=+905321234567", 42, 1.5, None, True], ids=repr
)
async def test_a_send_request_that_is_not_an_object_is_a_400(
    bed: TestBed, document: object
) -> None:
    error = await send_error(bed, document)
    assert isinstance(error, RequestInvalid)
    assert error.http_status == 400
    assert len(error.details) == 1
    assert "JSON object" in error.details[0].message


@pytest.mark.parametrize("document", [[], [{"items": []}], "items", 0, None], ids=repr)
async def test_a_bulk_request_that_is_not_an_object_is_a_400(
    bed: TestBed, document: object
) -> None:
    error = await bulk_error(bed, document)
    assert isinstance(error, RequestInvalid)
    assert "JSON object" in error.message


@pytest.mark.parametrize(
    ("request_", "field"),
    [
        pytest.param({"items": {}}, "items", id="items-object"),
        pytest.param({"items": None}, "items", id="items-null"),
        pytest.param({"items": "x"}, "items", id="items-string"),
        pytest.param({}, "items", id="items-missing"),
        pytest.param({"items": ["x"]}, "items.0", id="item-string"),
        pytest.param({"items": [{"to": None, "body": "x"}]}, "items.0.to", id="item-to-null"),
        pytest.param({"items": [{"body": "x"}]}, "items.0.to", id="item-to-missing"),
        pytest.param({"items": [{"to": NUMBER, "body": 1}]}, "items.0.body", id="item-body-int"),
    ],
)
async def test_wrong_bulk_type_is_a_400_naming_the_field(
    bed: TestBed, request_: Request, field: str
) -> None:
    assert_invalid(await bulk_error(bed, request_), field)


async def test_every_bad_field_is_named_not_only_the_first(bed: TestBed) -> None:
    error = await send_error(bed, {"to": "", "body": "x" * 1601, "sender": "S" * 33})
    assert_invalid(error, "to", "body", "sender")
    assert "(and 2 more)" in error.message


# ------------------------------------------------------------------------------ control chars


CONTROL_CHARS = ["\x00", "\x01", "\x07", "\x08", "\x0b", "\x0c", "\x1b", "\x1f", "\x7f"]


@pytest.mark.parametrize("char", CONTROL_CHARS, ids=repr)
async def test_control_character_in_body_is_a_400_naming_body(bed: TestBed, char: str) -> None:
    assert_invalid(await send_error(bed, plain(body=f"a{char}b")), "body")
    assert len(bed.outbox) == 0


@pytest.mark.parametrize("char", CONTROL_CHARS, ids=repr)
async def test_control_character_in_to_is_a_400_naming_to(bed: TestBed, char: str) -> None:
    assert_invalid(await send_error(bed, plain(to=NUMBER + char)), "to")


@pytest.mark.parametrize("char", ["\x00", "\x1b"], ids=repr)
async def test_control_character_in_sender_is_a_400_naming_sender(bed: TestBed, char: str) -> None:
    assert_invalid(await send_error(bed, plain(sender=f"UM{char}TEST")), "sender")


async def test_control_character_in_a_bulk_item_names_the_item(bed: TestBed) -> None:
    items = bulk_items(3)
    items[1]["body"] = "a\x00b"
    assert_invalid(await bulk_error(bed, {"items": items}), "items.1.body")


async def test_tab_newline_and_carriage_return_in_body_are_sent_verbatim(bed: TestBed) -> None:
    body = "Line 1\r\nLine 2\n\tindented\r"
    await bed.messenger.send(bed.principal, plain(body=body))
    assert bed.outbox.texts() == [body]


@pytest.mark.parametrize(
    "body",
    [
        pytest.param("zero\u200bwidth\u200c\u200d\ufeff", id="zero-width"),
        pytest.param("\u200fמרחבא\u200e ltr \u202eevil\u202c", id="rtl-marks"),
        pytest.param("مرحبا بالعالم", id="arabic"),
        pytest.param("e\u0301\u0301\u0301", id="combining"),
    ],
)
async def test_format_and_bidi_characters_in_body_are_sent_verbatim(
    bed: TestBed, body: str
) -> None:
    response = await bed.messenger.send(bed.principal, plain(body=body))
    assert response.status == "sent"
    assert bed.outbox.texts() == [body]


@pytest.mark.parametrize("mark", ["\u200b", "\ufeff", "\u200f", "\u202e", "\u2066"], ids=repr)
async def test_zero_width_or_bidi_mark_in_to_is_an_invalid_recipient(
    bed: TestBed, mark: str
) -> None:
    error = await send_error(bed, plain(to=NUMBER[:5] + mark + NUMBER[5:]))
    assert_error(error, InvalidRecipient, "INVALID_RECIPIENT", 422)


@pytest.mark.parametrize(
    "body",
    [
        "'; DROP TABLE messages; --",
        "Robert'); DELETE FROM api_keys WHERE ('1'='1",
        "<script>alert('x')</script>",
        "{{ name }}",
        "{{name}} and {% if x %}y{% endif %}",
        "%s %n %x %d %%",
        "${jndi:ldap://evil.test/a}",
        "\\u0000 \\x00 \\n",
        "../../etc/passwd",
        '{"to": "+905550000001"}',
        "null",
    ],
)
async def test_injection_strings_are_sent_verbatim(bed: TestBed, body: str) -> None:
    response = await bed.messenger.send(bed.principal, plain(body=body))
    assert response.status == "sent"
    assert bed.outbox.texts() == [body]


# ------------------------------------------------------------------------------ recipients


@pytest.mark.parametrize(
    "to",
    [
        LANDLINE,
        "0212 123 45 67",
        "08501234567",  # service number
        FOREIGN,
        "+447911123456",
        "garbage",
        "'; DROP TABLE messages; --",
        "+90",
        "5" * 64,
    ],
)
async def test_non_turkish_mobile_sms_recipient_is_422_invalid_recipient(
    bed: TestBed, to: str
) -> None:
    error = await send_error(bed, plain(to=to))
    assert_error(error, InvalidRecipient, "INVALID_RECIPIENT", 422)
    assert len(bed.outbox) == 0


@pytest.mark.parametrize(
    "to", ["@ab", "@abcd", "@" + "a" * 33, "user", "@bad-name", "+123", "1.5", "00", "-0"]
)
async def test_malformed_chat_target_is_422_invalid_recipient(bed: TestBed, to: str) -> None:
    error = await send_error(bed, plain(to=to, provider="chatbot"))
    assert_error(error, InvalidRecipient, "INVALID_RECIPIENT", 422)


@pytest.mark.parametrize("to", ["0", " 0 ", "@unreachable_bot_user", "@UNREACHABLE_BOT_USER"])
async def test_unreachable_chat_is_422_chat_unreachable(bed: TestBed, to: str) -> None:
    error = await send_error(bed, plain(to=to, provider="chatbot"))
    assert_error(error, ChatUnreachable, "CHAT_UNREACHABLE", 422)


async def test_every_provider_unavailable_is_502_with_a_readable_job(bed: TestBed) -> None:
    error = await send_error(bed, plain(to="+905550000003"))
    assert isinstance(error, ProviderUnavailable)
    assert (error.code, error.http_status) == ("PROVIDER_UNAVAILABLE", 502)
    assert error.job_id is not None
    record = await bed.messenger.get_message(bed.principal, error.job_id)
    assert record.status == "failed"


# ------------------------------------------------------------------------------ D15 order


async def test_schema_error_wins_over_an_unconnected_provider(bed: TestBed) -> None:
    auth = await small_workspace(bed, "sms_a")
    error = await send_error(bed, plain(body="", provider="sms_b"), auth=auth)
    assert_invalid(error, "body")


async def test_unknown_field_wins_over_an_unknown_template(bed: TestBed) -> None:
    error = await send_error(bed, {"to": NUMBER, "template": "nope", "extra": 1})
    assert_invalid(error, "extra")


async def test_unconnected_provider_wins_over_a_bad_recipient(bed: TestBed) -> None:
    auth = await small_workspace(bed, "sms_a")
    error = await send_error(bed, plain(to="garbage", provider="sms_b"), auth=auth)
    assert_error(error, ProviderNotConnected, "PROVIDER_NOT_CONNECTED", 404)


async def test_unconnected_fallback_wins_over_an_unapproved_sender(bed: TestBed) -> None:
    auth = await small_workspace(bed, "sms_a")
    request = plain(sender="NOPE", fallback=["sms_b"])
    error = await send_error(bed, request, auth=auth)
    assert_error(error, ProviderNotConnected, "PROVIDER_NOT_CONNECTED", 404)


async def test_unknown_template_wins_over_a_bad_recipient(bed: TestBed) -> None:
    error = await send_error(bed, {"to": "garbage", "template": "nope"})
    assert_error(error, TemplateNotFound, "TEMPLATE_NOT_FOUND", 404)


async def test_unknown_template_wins_over_an_unapproved_sender(bed: TestBed) -> None:
    error = await send_error(bed, {"to": NUMBER, "template": "nope", "sender": "NOPE"})
    assert_error(error, TemplateNotFound, "TEMPLATE_NOT_FOUND", 404)


async def test_unknown_template_of_a_bulk_request_is_a_404(bed: TestBed) -> None:
    error = await bulk_error(bed, {"template": "nope", "items": [{"to": "garbage"}]})
    assert_error(error, TemplateNotFound, "TEMPLATE_NOT_FOUND", 404)


async def test_schema_error_wins_over_an_unapproved_sender(bed: TestBed) -> None:
    assert_invalid(await send_error(bed, plain(body="x" * 1601, sender="NOPE")), "body")


async def test_bad_recipient_wins_over_an_exhausted_quota(bed: TestBed) -> None:
    workspace = await bed.messenger.workspaces.create("no quota", monthly_quota=0)
    await bed.messenger.connections.add(
        workspace.id,
        "sms_a",
        default_sender=SENDER,
        credentials={"usercode": "8501234567", "password": "p"},
    )
    live = await bed.messenger.principal(workspace.id, livemode=True)

    error = await send_error(bed, plain(to="garbage"), auth=live)
    assert_error(error, InvalidRecipient, "INVALID_RECIPIENT", 422)
    error = await send_error(bed, plain(), auth=live)
    assert_error(error, QuotaExceeded, "QUOTA_EXCEEDED", 429)


async def test_missing_variable_is_a_422_after_the_template_is_found(bed: TestBed) -> None:
    await bed.messenger.templates.set(bed.workspace.id, "hello", "Hi {{ name }}")
    error = await send_error(bed, {"to": NUMBER, "template": "hello"})
    assert_error(error, TemplateVariableMissing, "TEMPLATE_VARIABLE_MISSING", 422)


# ------------------------------------------------------------------------------ any JSON at all

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=80)
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children, max_size=5)
    ),
    max_leaves=20,
)

# Values that get past the schema, so that the rules behind it are exercised too.
plausible = {
    "to": st.sampled_from(
        [NUMBER, "05321234567", "+905550000001", "+905550000002", "+905550000003", "0", "@a_user"]
    ),
    "body": st.sampled_from(["", "x", "Merhaba {{ name }}", "x" * 1600]),
    "template": st.sampled_from(["hello", "nope", "Bad-Key"]),
    "variables": st.dictionaries(st.sampled_from(["name", "n", ""]), json_scalars, max_size=3),
    "sender": st.sampled_from(["", SENDER, "NOPE", "S" * 33]),
    "provider": st.sampled_from([*ALL_PROVIDERS, "sms_z"]),
    "fallback": st.lists(st.sampled_from(ALL_PROVIDERS), max_size=4),
}


def request_fields(names: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    """Objects with these field names (and a stray one) holding plausible or arbitrary values."""
    return st.fixed_dictionaries(
        {}, optional={name: plausible[name] | json_values for name in names}
    ) | st.dictionaries(st.sampled_from([*names, "extra"]), json_values, max_size=6)


def merged(*parts: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.tuples(*parts).map(lambda dicts: {k: v for d in dicts for k, v in d.items()})


routing = st.fixed_dictionaries(
    {}, optional={name: plausible[name] for name in ["sender", "provider", "fallback"]}
)
# Nearly valid: exactly one of body / template, plausible values only.
content = st.fixed_dictionaries({"body": plausible["body"]}) | st.fixed_dictionaries(
    {"template": plausible["template"]}, optional={"variables": plausible["variables"]}
)
send_requests = request_fields(
    ["to", "body", "template", "variables", "sender", "provider", "fallback"]
) | merged(st.fixed_dictionaries({"to": plausible["to"]}), content, routing)
plausible_items = st.lists(
    st.fixed_dictionaries(
        {"to": plausible["to"]},
        optional={"body": plausible["body"], "variables": plausible["variables"]},
    ),
    min_size=1,
    max_size=4,
)
bulk_requests = merged(
    st.fixed_dictionaries(
        {"items": plausible_items | st.lists(request_fields(["to", "body", "variables"]))}
    ),
    st.fixed_dictionaries({}, optional={"template": plausible["template"]}),
    routing,
)
fuzz = settings(
    deadline=None,
    max_examples=150,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


async def _ready(bed: TestBed) -> None:
    if not await bed.messenger.templates.list(bed.workspace.id):
        await bed.messenger.templates.set(bed.workspace.id, "hello", "Hi {{ name }}")


async def outcome(call: Awaitable[T]) -> T | MessagingError:
    """What a call gave back: its result, or the ``MessagingError`` it raised (nothing else)."""
    try:
        return await call
    except MessagingError as error:
        return error


@fuzz
@given(document=json_values | send_requests)
async def test_any_json_sent_succeeds_or_raises_a_messaging_error(
    bed: TestBed, document: object
) -> None:
    await _ready(bed)
    result = await outcome(bed.messenger.send(bed.principal, document))  # type: ignore[arg-type]
    if isinstance(result, MessagingError):
        assert 400 <= result.http_status < 600
        assert result.http_status != 500
        assert result.code
        return
    assert isinstance(result, SendResponse)
    assert isinstance(result.to_dict(), dict)
    await bed.messenger.get_message(bed.principal, result.job_id)


@fuzz
@given(document=json_values | bulk_requests)
async def test_any_json_sent_in_bulk_succeeds_or_raises_a_messaging_error(
    bed: TestBed, document: object
) -> None:
    await _ready(bed)
    result = await outcome(bed.messenger.send_bulk(bed.principal, document))  # type: ignore[arg-type]
    if isinstance(result, MessagingError):
        assert result.http_status != 500
        return
    assert_counts_add_up(result)
    for item in result.results:
        await bed.messenger.get_message(bed.principal, item.job_id)
