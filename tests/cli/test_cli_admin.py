"""Workspaces, keys, connections, templates and the allowlist, through the real command line.

Each test is an operator's session, in rounds: the commands of one round do not depend on
each other and run side by side, since every process start costs about a second.
"""

from __future__ import annotations

import json

from _cli_support import Cli

from unified_messaging._access.keys import hash_api_key

SMS_USERCODE = "acme-user-never-printed"
SMS_PASSWORD = "pw-Zq81-never-printed"
BOT_TOKEN = "123456:bot-token-never-printed"


def test_workspace_keys_and_connections_session_never_shows_a_secret(cli: Cli) -> None:
    created = cli("workspaces", "create", "Acme", "--monthly-quota", "500").ok()
    workspace_id = created.stdout.split()[1]  # "id  ws_…" is the first line
    ws = ("--workspace", workspace_id)
    live, test, sms, workspaces = cli.many(
        [
            ("keys", "create", *ws, "--name", "ci", "--json"),
            ("keys", "create", *ws, "--test"),
            ("connections", "add", *ws, "sms_a", "--json",
             "--credential", f"usercode={SMS_USERCODE}", "--credential", f"password={SMS_PASSWORD}",
             "--default-sender", "ACME", "--approved-sender", "ACME", "--approved-sender", "ACME2"),
            ("workspaces", "list", "--json"),
        ]
    )  # fmt: skip
    live_key, sms_connection = live.json(), sms.json()
    bot, revocation = cli.many(
        [
            ("connections", "add", *ws, "chatbot", "--credentials-file", "-"),
            ("keys", "revoke", live_key["id"], "--json"),
        ],
        stdin=json.dumps({"bot_token": BOT_TOKEN}),
    )
    listings = cli.many(
        [
            ("keys", "list", *ws),
            ("keys", "list", *ws, "--json"),
            ("connections", "list", *ws),
            ("connections", "list", *ws, "--json"),
            ("workspaces", "list"),
        ]
    )
    keys, connections, revoked = listings[1].json(), listings[3].json(), revocation.json()
    chatbot_id = next(c["id"] for c in connections if c["provider"] == "chatbot")
    default = cli("connections", "set-default", chatbot_id, "--json").json()
    removed = cli("connections", "remove", sms_connection["id"], "--json").json()
    left = cli("connections", "list", *ws, "--json").json()

    assert "500" in created.stdout
    [workspace] = workspaces.json()
    assert workspace["id"] == workspace_id
    assert set(workspace) == {"id", "name", "monthly_quota", "retry_unavailable", "queue_ttl",
                              "recipient_limit", "quiet_hours", "consent_policy",
                              "mask_live_text", "created_at"}  # fmt: skip
    assert workspace["quiet_hours"] == "off"  # off by default
    assert (workspace["name"], workspace["monthly_quota"]) == ("Acme", 500)
    assert workspace["recipient_limit"] == "10/1h"  # D28's default
    assert listings[4].ok().stdout.startswith("ID")
    assert workspace_id in listings[4].stdout

    # The key's secret is printed once, at creation; afterwards only its prefix.
    assert live_key["api_key"].startswith("um_live_")
    assert (live_key["livemode"], live_key["name"]) == (True, "ci")
    assert "cannot be shown again" in test.ok().stdout
    test_secret = max((w for w in test.stdout.split() if w.startswith("um_test_")), key=len)
    secret_of = {True: live_key["api_key"], False: test_secret}
    assert sorted(k["livemode"] for k in keys) == [False, True]
    for key in keys:
        assert secret_of[key["livemode"]].startswith(key["display_prefix"])
        assert key["display_prefix"] in listings[0].stdout
    assert revoked["status"] == "revoked"
    assert {k["id"]: k["status"] for k in keys}[live_key["id"]] == "revoked"

    assert (sms_connection["is_default"], sms_connection["approved_senders"]) == (
        True, ["ACME", "ACME2"]
    )  # fmt: skip
    assert "1 credential stored encrypted" in bot.ok().stdout
    assert [(c["provider"], c["is_default"]) for c in connections] == [
        ("sms_a", True), ("chatbot", False)
    ]  # fmt: skip
    assert "credentials" not in connections[0]
    assert default["is_default"] is True
    assert removed == {"id": sms_connection["id"], "removed": True}
    assert [(c["id"], c["is_default"]) for c in left] == [(chatbot_id, True)]

    everything = "".join(r.output for r in (sms, bot, *listings))
    for secret in (SMS_USERCODE, SMS_PASSWORD, BOT_TOKEN, *secret_of.values()):
        assert secret not in everything
    for secret in secret_of.values():
        assert hash_api_key(secret) not in everything


def test_templates_and_allowlist_session(cli: Cli, workspace_id: str) -> None:
    ws = ("--workspace", workspace_id)
    body = "Merhaba {{ name }}, {{ order }} numaralı siparişiniz kargoda."
    shipped, otp, bad_key, network, single, garbage = cli.many(
        [
            ("templates", "set", *ws, "order_shipped", body, "--description", "shipping"),
            ("templates", "set", *ws, "otp", "Kodunuz: {{ code }}", "--json",
             "--provider-template", "otp_code", "--provider-language", "tr"),
            ("templates", "set", *ws, "Not-A-Key", "x"),
            ("allowlist", "add", *ws, "10.0.0.0/8"),
            ("allowlist", "add", *ws, "203.0.113.7/32", "--json"),
            ("allowlist", "add", *ws, "not-an-address"),
        ]
    )  # fmt: skip
    templates_json, templates_text, allowlist_json, allowlist_text = cli.many(
        [
            ("templates", "list", *ws, "--json"),
            ("templates", "list", *ws),
            ("allowlist", "list", *ws, "--json"),
            ("allowlist", "list", *ws),
        ]
    )
    deleted, removed = cli.many(
        [("templates", "delete", *ws, "otp"), ("allowlist", "remove", *ws, "10.0.0.0/8")], "--json"
    )
    again = cli("templates", "delete", *ws, "otp")

    assert "order_shipped" in shipped.ok().stdout
    assert (otp.json()["provider_template"], otp.json()["provider_language"]) == ("otp_code", "tr")
    templates = {t["key"]: t for t in templates_json.json()}
    assert (templates["order_shipped"]["body"], templates["order_shipped"]["description"]) == (
        body, "shipping"
    )  # fmt: skip
    assert "Merhaba {{ name }}" in templates_text.ok().stdout
    assert deleted.json() == {"workspace_id": workspace_id, "key": "otp", "deleted": True}
    assert again.returncode == 1
    assert again.stderr.startswith("error: TEMPLATE_NOT_FOUND: ")
    assert bad_key.returncode == 1
    assert bad_key.stderr.startswith("error: VALIDATION_ERROR: The key must match ")

    assert "10.0.0.0/8" in network.ok().stdout
    assert single.json() == {"workspace_id": workspace_id, "entry": "203.0.113.7"}
    assert sorted(allowlist_json.json()) == ["10.0.0.0/8", "203.0.113.7"]
    assert sorted(allowlist_text.ok().stdout.split()) == sorted(allowlist_json.json())
    assert garbage.returncode == 1
    # English, not a field prefix ("cidr: must be ..."), the field kept in the error's details.
    assert garbage.stderr.startswith(
        "error: VALIDATION_ERROR: The allowlist entry must be an IPv4 or IPv6 address or CIDR"
    )
    assert removed.json() == {"workspace_id": workspace_id, "removed": "10.0.0.0/8", "remaining": 1}


def test_unknown_ids_are_exit_1_with_the_code_and_nothing_on_stdout(cli: Cli) -> None:
    ws = ("--workspace", "ws_nope")
    keys, connections, key, connection = cli.many(
        [
            ("keys", "create", *ws, "--json"),
            ("connections", "add", *ws, "sms_a", "--credential", f"password={SMS_PASSWORD}"),
            ("keys", "revoke", "key_nope"),
            ("connections", "set-default", "conn_nope", "--json"),
        ]
    )

    for result in (keys, connections):
        assert result.returncode == 1, result.args
        assert (result.stdout, result.stderr) == (
            "",
            "error: NOT_FOUND: Workspace ws_nope not found.\n",
        )
    assert SMS_PASSWORD not in connections.output
    assert (key.returncode, key.stderr) == (1, "error: NOT_FOUND: API key key_nope not found.\n")
    assert connection.returncode == 1
    assert connection.stderr == "error: NOT_FOUND: Connection conn_nope not found.\n"
