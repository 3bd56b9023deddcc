"""The admin façade refuses values that would be stored and then fail, or be stored changed:
a provider address that is not one, a key that expired before it was made, a template with a
stray ``{{``, a webhook URL with a space, an allowlist entry with spaces around it.

Each is a 400 ``VALIDATION_ERROR`` naming the field (D13/D14), raised before anything is
stored, the same for the Python API and the command line (``tests/cli/test_cli_input_refused``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta

import pytest

from unified_messaging import (
    ManualClock,
    Messenger,
    RequestInvalid,
    SenderNotApproved,
    SendRequest,
    Workspace,
)
from unified_messaging._errors import field_sentence
from unified_messaging._types import TEMPLATE_KEY_PATTERN, IysMode
from unified_messaging.cli import build_parser

SECRET_PASSWORD = "hunter2-s3cret"  # a value that must never be echoed


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
async def messenger(clock: ManualClock) -> AsyncIterator[Messenger]:
    async with Messenger(clock=clock) as instance:
        yield instance


@pytest.fixture
async def workspace(messenger: Messenger) -> Workspace:
    return await messenger.workspaces.create("Acme")


def field_of(error: RequestInvalid) -> str:
    [detail] = error.details
    # English, not "field: problem"; the field stays in details (issue: "cidr: ..." in messages).
    assert error.message == field_sentence(detail.field, detail.message)
    assert not error.message.startswith(f"{detail.field}: ")
    assert (error.code, error.http_status) == ("VALIDATION_ERROR", 400)
    return detail.field


# ------------------------------------------------------------------------------ base_url


@pytest.mark.parametrize(
    "base_url",
    [
        "notaurl",
        "",
        "api.netgsm.com.tr",
        "ftp://api.example.com",
        "https://",
        "https:///path",
        "https://api.example.com:port/",
        "https://api example.com",
        "https://api.example.com/a b",
        "https://api.example.com/\x00",
        "https://api.example.com/?",
        "https://api.example.com/?key=1",
        "https://api.example.com/#top",
        f"https://user:{SECRET_PASSWORD}@api.example.com",
        "http://[::1/",
    ],
)
async def test_a_base_url_that_is_not_an_http_address_is_refused(
    messenger: Messenger, workspace: Workspace, base_url: str
) -> None:
    with pytest.raises(RequestInvalid) as info:
        await messenger.connections.add(workspace.id, "sms_a", base_url=base_url)

    assert field_of(info.value) == "base_url"
    assert SECRET_PASSWORD not in info.value.message
    assert await messenger.connections.list(workspace.id) == []


@pytest.mark.parametrize(
    "base_url",
    [
        "https://api.netgsm.com.tr",
        "https://api.netgsm.com.tr/",
        "http://127.0.0.1:8080/fake/netgsm",
        "http://[::1]:9000",
        "HTTPS://API.EXAMPLE.COM",
    ],
)
async def test_a_base_url_is_stored_as_given(
    messenger: Messenger, workspace: Workspace, base_url: str
) -> None:
    connection = await messenger.connections.add(workspace.id, "sms_a", base_url=base_url)

    assert connection.base_url == base_url


# ------------------------------------------------------------------------------ expires_at


@pytest.mark.parametrize("offset", [timedelta(0), -timedelta(microseconds=1), -timedelta(days=400)])
async def test_a_key_that_would_never_work_is_refused(
    messenger: Messenger, workspace: Workspace, clock: ManualClock, offset: timedelta
) -> None:
    with pytest.raises(RequestInvalid) as info:
        await messenger.keys.create(workspace.id, expires_at=clock.now() + offset)

    assert field_of(info.value) == "expires_at"
    assert "future" in info.value.message
    assert await messenger.keys.list(workspace.id) == []


async def test_a_key_expiring_a_moment_from_now_is_made(
    messenger: Messenger, workspace: Workspace, clock: ManualClock
) -> None:
    expires_at = clock.now() + timedelta(microseconds=1)

    created = await messenger.keys.create(workspace.id, expires_at=expires_at)

    assert created.record.expires_at == expires_at


# ------------------------------------------------------------------------------ templates


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ("Merhaba {{ name", "'{{ name' (character 9) opens no placeholder"),
        ("Merhaba {{ name }", "'{{ name }' (character 9) opens no placeholder"),
        ("Merhaba {{ first-name }}", "'{{ first-name }}' (character 9) opens no placeholder"),
        ("Kod: {{ 1code }}", "opens no placeholder"),
        ("Kod: {{}}", "opens no placeholder"),
        ("Merhaba name }}", "'Merhaba name }}' (character 14) closes no placeholder"),
        ("{{ a }} and {{ b", "(character 13) opens no placeholder"),
        ("{{ a }}}} ", "(character 8) closes no placeholder"),
        ("x" * 40 + "{{ long placeholder name that goes on", "'{{ long placeholder nam…'"),
    ],
)
async def test_a_template_with_a_stray_brace_pair_is_refused(
    messenger: Messenger, workspace: Workspace, body: str, said: str
) -> None:
    with pytest.raises(RequestInvalid) as info:
        await messenger.templates.set(workspace.id, "greeting", body)

    assert field_of(info.value) == "body"
    assert said in info.value.message
    assert "{{ name }}" in info.value.message  # how to write one
    assert await messenger.templates.list(workspace.id) == []


@pytest.mark.parametrize(
    "body",
    [
        "Merhaba {{ name }}",
        "Merhaba {{name}}, {{ order_id }} kargoda.",
        "{{ a }}{{ b }}",
        "Set {a} and {b}: single braces are text",
        "{{{ name }}}",
    ],
)
async def test_a_template_of_placeholders_and_text_is_stored(
    messenger: Messenger, workspace: Workspace, body: str
) -> None:
    template = await messenger.templates.set(workspace.id, "greeting", body)

    assert template.body == body


@pytest.mark.parametrize("key", ["", "Greeting", "order-shipped", "a" * 65, "key\n"])
async def test_a_template_key_outside_the_pattern_is_refused_naming_it(
    messenger: Messenger, workspace: Workspace, key: str
) -> None:
    with pytest.raises(RequestInvalid) as info:
        await messenger.templates.set(workspace.id, key, "Merhaba")

    assert field_of(info.value) == "key"
    assert info.value.message == "The key must match ^[a-z0-9_]{1,64}$"


def test_the_template_key_rule_is_one_pattern_for_models_admin_and_cli() -> None:
    schema = SendRequest.model_json_schema()["properties"]["template"]
    [pattern] = [choice["pattern"] for choice in schema["anyOf"] if "pattern" in choice]
    assert pattern == TEMPLATE_KEY_PATTERN
    args = build_parser().parse_args(["templates", "set", "--workspace", "w", "k", "b"])
    assert TEMPLATE_KEY_PATTERN in args.parser.format_help()


# ------------------------------------------------------------------------------ webhooks


@pytest.mark.parametrize(
    "url",
    [
        "https://hooks.example.com/order shipped",
        "https://hooks.example.com/a\tb",
        " https://hooks.example.com/um",
        "https://hooks.example.com/um\n",
        "https://hooks.example.com/um\u00a0",
    ],
)
async def test_a_webhook_url_with_a_space_is_refused(
    messenger: Messenger, workspace: Workspace, url: str
) -> None:
    with pytest.raises(RequestInvalid) as info:
        await messenger.webhooks.create(workspace.id, url)

    assert field_of(info.value) == "url"
    assert "spaces" in info.value.message
    assert await messenger.webhooks.list(workspace.id) == []


async def test_a_percent_encoded_space_is_kept_as_given(
    messenger: Messenger, workspace: Workspace
) -> None:
    url = "https://hooks.example.com/order%20shipped"

    created = await messenger.webhooks.create(workspace.id, url)

    assert created.endpoint.url == url


# ------------------------------------------------------------------------------ allowlist


@pytest.mark.parametrize("entry", ["10.0.0.0/8 ", " 10.0.0.0/8", "10.0.0.0/8\n", "\t203.0.113.7"])
async def test_an_allowlist_entry_with_spaces_around_it_is_refused(
    messenger: Messenger, workspace: Workspace, entry: str
) -> None:
    with pytest.raises(RequestInvalid) as info:
        await messenger.allowlist.add(workspace.id, entry)

    assert field_of(info.value) == "cidr"
    assert await messenger.allowlist.list(workspace.id) == []


async def test_removing_an_entry_with_spaces_around_it_is_refused_the_same_way(
    messenger: Messenger, workspace: Workspace
) -> None:
    await messenger.allowlist.add(workspace.id, "10.0.0.0/8")

    with pytest.raises(RequestInvalid) as info:
        await messenger.allowlist.remove(workspace.id, " 10.0.0.0/8")

    assert field_of(info.value) == "cidr"
    assert await messenger.allowlist.list(workspace.id) == ["10.0.0.0/8"]


# ------------------------------------------------------------------------------ iys_mode


@pytest.mark.parametrize("mode", ["informational", "commercial_individual", "commercial_merchant"])
async def test_each_iys_mode_is_taken(
    messenger: Messenger, workspace: Workspace, mode: IysMode
) -> None:
    connection = await messenger.connections.add(workspace.id, "sms_a", iys_mode=mode)

    assert connection.iys_mode == mode


async def test_an_unknown_iys_mode_is_refused(messenger: Messenger, workspace: Workspace) -> None:
    with pytest.raises(RequestInvalid) as info:
        await messenger.connections.add(workspace.id, "sms_a", iys_mode="commercial")  # type: ignore[arg-type]

    assert info.value.message == "Invalid IYS mode: unknown IYS mode"


@pytest.mark.parametrize("mode", ["commercial_individual", "commercial_merchant"])
async def test_a_commercial_mutlucell_connection_is_refused(
    messenger: Messenger, workspace: Workspace, mode: IysMode
) -> None:
    # Mutlucell documents no IYS attribute, so sms_d cannot mark commercial SMS.
    with pytest.raises(RequestInvalid) as info:
        await messenger.connections.add(workspace.id, "sms_d", iys_mode=mode)

    assert field_of(info.value) == "iys_mode"
    assert f"Mutlucell (sms_d) cannot send {mode} traffic" in info.value.message
    assert "only informational" in info.value.message
    assert await messenger.connections.list(workspace.id) == []


async def test_an_informational_mutlucell_connection_is_taken(
    messenger: Messenger, workspace: Workspace
) -> None:
    connection = await messenger.connections.add(workspace.id, "sms_d")

    assert connection.iys_mode == "informational"


def test_the_cli_offers_the_iys_modes_of_the_type() -> None:
    args = build_parser().parse_args(["connections", "add", "--workspace", "w", "sms_a"])
    assert "{informational,commercial_individual,commercial_merchant}" in args.parser.format_help()


# ------------------------------------------------------------------------------ senders


@pytest.mark.parametrize("sender", ["ACME\x00", "AC\x1bME", "ACME\x7f"])
@pytest.mark.parametrize("as_default", [False, True])
async def test_a_sender_with_a_control_character_is_refused(
    messenger: Messenger, workspace: Workspace, sender: str, as_default: bool
) -> None:
    # The rule a request's ``sender`` meets (_models.Sender), so a stored header never fails
    # every send.
    default, approved = (sender, ()) if as_default else (None, (sender,))
    with pytest.raises(RequestInvalid) as info:
        await messenger.connections.add(
            workspace.id, "sms_a", default_sender=default, approved_senders=approved
        )

    field = "default_sender" if as_default else "approved_senders"
    assert field_of(info.value) == field
    assert info.value.message == field_sentence(field, "must not contain control characters")
    assert await messenger.connections.list(workspace.id) == []


@pytest.mark.parametrize("sender", ["", "A" * 33])
async def test_a_sender_of_the_wrong_length_is_refused(
    messenger: Messenger, workspace: Workspace, sender: str
) -> None:
    with pytest.raises(RequestInvalid) as info:
        await messenger.connections.add(workspace.id, "sms_a", approved_senders=[sender])

    assert info.value.message == "The approved senders must be 1-32 characters"


async def test_a_sender_with_a_space_is_stored(messenger: Messenger, workspace: Workspace) -> None:
    connection = await messenger.connections.add(
        workspace.id, "sms_a", approved_senders=["ACME CO"], default_sender="ACME CO"
    )

    assert connection.approved_senders == ("ACME CO",)


# ------------------------------------------------------------------- changing the senders


async def test_set_senders_replaces_both_and_sends_keep_d3(
    messenger: Messenger, workspace: Workspace
) -> None:
    connection = await messenger.connections.add(
        workspace.id, "sms_a", default_sender="OLD", approved_senders=["OLD"]
    )
    changed = await messenger.connections.set_senders(
        connection.id, default_sender="ACME", approved_senders=["ACME2", "ACME2"]
    )
    # One rule with add_connection's: no repeats, and the default joins a non-empty list.
    assert (changed.default_sender, changed.approved_senders) == ("ACME", ("ACME2", "ACME"))
    key = await messenger.keys.create(workspace.id)
    principal = await messenger.authenticate(key.secret)
    with pytest.raises(SenderNotApproved):
        await messenger.send(principal, SendRequest(to="+905551234567", body="x", sender="OLD"))
    sent = await messenger.send(principal, SendRequest(to="+905551234567", body="x"))
    assert (await messenger.get_message(principal, sent.job_id)).sender == "ACME"


async def test_set_senders_to_nothing_means_any_sender_and_none_by_default(
    messenger: Messenger, workspace: Workspace
) -> None:
    connection = await messenger.connections.add(
        workspace.id, "sms_a", default_sender="ACME", approved_senders=["ACME"]
    )
    cleared = await messenger.connections.set_senders(
        connection.id, default_sender="", approved_senders=[]
    )
    assert (cleared.default_sender, cleared.approved_senders) == (None, ())


@pytest.mark.parametrize(
    ("default", "approved", "field"),
    [
        ("A" * 33, (), "default_sender"),
        ("AC\x00ME", (), "default_sender"),
        (None, ("ACME", ""), "approved_senders"),
        (None, ("AC\x1bME",), "approved_senders"),
        (None, "ACME", "approved_senders"),  # a bare string is not a list of senders
    ],
)
async def test_set_senders_refuses_what_add_connection_refuses_and_changes_nothing(
    messenger: Messenger, workspace: Workspace, default: str | None, approved: object, field: str
) -> None:
    connection = await messenger.connections.add(workspace.id, "sms_a", default_sender="ACME")
    with pytest.raises(RequestInvalid) as info:
        await messenger.connections.set_senders(
            connection.id,
            default_sender=default,
            approved_senders=approved,  # type: ignore[arg-type]
        )

    assert field_of(info.value) == field
    assert (await messenger.connections.get(connection.id)).default_sender == "ACME"


# ------------------------------------------------------------- WhatsApp provider templates


@pytest.mark.parametrize(
    ("name", "language", "field"),
    [
        ("Order Shipped", None, "provider_template"),
        ("order-shipped", "tr", "provider_template"),
        ("a" * 513, None, "provider_template"),
        (None, "tr", "provider_language"),  # the language of no template
        ("order_shipped", "Turkish", "provider_language"),
        ("order_shipped", "en-US", "provider_language"),
    ],
)
async def test_a_bad_provider_template_is_refused_naming_its_field(
    messenger: Messenger, workspace: Workspace, name: str | None, language: str | None, field: str
) -> None:
    with pytest.raises(RequestInvalid) as info:
        await messenger.templates.set(
            workspace.id, "shipped", "Kargonuz {{ code }}",
            provider_template=name, provider_language=language,
        )  # fmt: skip

    assert field_of(info.value) == field
    assert await messenger.templates.list(workspace.id) == []


@pytest.mark.parametrize(("language", "stored"), [("en_US", "en_US"), ("", None), (None, None)])
async def test_a_provider_template_is_stored_with_its_language(
    messenger: Messenger, workspace: Workspace, language: str | None, stored: str | None
) -> None:
    template = await messenger.templates.set(
        workspace.id, "shipped", "Kargonuz {{ code }}",
        provider_template="order_shipped", provider_language=language,
    )  # fmt: skip
    assert (template.provider_template, template.provider_language) == ("order_shipped", stored)
    blank = await messenger.templates.set(workspace.id, "plain", "x", provider_template="")
    assert blank.provider_template is None


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"rate_limit": float("nan")}, "rate_limit"),
        ({"rate_limit": float("inf")}, "rate_limit"),
        ({"rate_limit": 1e10}, "rate_limit"),
        ({"rate_burst": 10**20}, "rate_burst"),  # past a 64-bit column: refused, not a 500
    ],
)
async def test_a_keys_rate_is_a_finite_number_in_range(
    messenger: Messenger, workspace: Workspace, changes: dict[str, float], field: str
) -> None:
    with pytest.raises(RequestInvalid) as info:
        await messenger.keys.create(workspace.id, **changes)  # type: ignore[arg-type]

    assert field_of(info.value) == field
    assert await messenger.keys.list(workspace.id) == []
