"""Input that used to be accepted and then failed later, or was silently changed, is refused
when it is given: exit 1, ``error: VALIDATION_ERROR: FIELD: …`` naming what to fix, and
nothing stored. The rules are the library's (``tests/test_admin_input.py``); this checks the
command line reaches them and says so clearly.
"""

from __future__ import annotations

from _cli_support import Cli, refused_for

PRIVATE_SWITCH = "UM_WEBHOOK_ALLOW_PRIVATE=1"


def assert_refused(result_stderr: str, returncode: int, field: str) -> None:
    assert returncode == 1, result_stderr
    assert refused_for(result_stderr, field), result_stderr
    assert result_stderr.count("\n") == 1  # one line, no traceback


def test_each_bad_value_is_refused_when_given_and_nothing_is_stored(
    cli: Cli, workspace_id: str
) -> None:
    ws = ("--workspace", workspace_id)
    base_url, expiry, template, webhook, allowlist = cli.many(
        [
            ("connections", "add", *ws, "sms_a", "--base-url", "notaurl"),
            ("keys", "create", *ws, "--expires-at", "2020-01-31T00:00:00Z"),
            ("templates", "set", *ws, "greeting", "Merhaba {{ name, hoş geldiniz"),
            ("webhooks", "add", *ws, "https://hooks.example.com/order shipped"),
            ("allowlist", "add", *ws, "203.0.113.7 "),
        ]
    )
    connections, keys, templates, endpoints, entries = cli.many(
        [
            ("connections", "list", *ws),
            ("keys", "list", *ws),
            ("templates", "list", *ws),
            ("webhooks", "list", *ws),
            ("allowlist", "list", *ws),
        ],
        "--json",
    )

    assert_refused(base_url.stderr, base_url.returncode, "base_url")
    assert "http:// or https://" in base_url.stderr
    assert_refused(expiry.stderr, expiry.returncode, "expires_at")
    assert "must be in the future" in expiry.stderr
    assert_refused(template.stderr, template.returncode, "body")
    assert "'{{ name, hoş geldiniz' (character 9) opens no placeholder" in template.stderr
    assert_refused(webhook.stderr, webhook.returncode, "url")
    assert "must not contain spaces" in webhook.stderr
    assert_refused(allowlist.stderr, allowlist.returncode, "cidr")
    assert "spaces around it" in allowlist.stderr
    for listing in (connections, keys, templates, endpoints, entries):
        assert listing.json() == [], listing.args


def test_a_commercial_mutlucell_connection_is_refused_with_the_reason(
    cli: Cli, workspace_id: str
) -> None:
    ws = ("--workspace", workspace_id)
    refused, listing = cli.many(
        [
            ("connections", "add", *ws, "sms_d", "--iys-mode", "commercial_individual"),
            ("connections", "list", *ws, "--json"),
        ]
    )

    assert_refused(refused.stderr, refused.returncode, "iys_mode")
    assert "Mutlucell (sms_d) cannot send commercial_individual traffic" in refused.stderr
    assert "its API documents no IYS marking" in refused.stderr
    assert listing.json() == []


def test_the_same_values_written_right_are_accepted(cli: Cli, workspace_id: str) -> None:
    ws = ("--workspace", workspace_id)
    results = cli.many(
        [
            ("connections", "add", *ws, "sms_a", "--base-url", "http://127.0.0.1:9/netgsm"),
            ("keys", "create", *ws, "--expires-at", "2099-01-31T00:00:00Z"),
            ("templates", "set", *ws, "greeting", "Merhaba {{ name }}, hoş geldiniz"),
            ("webhooks", "add", *ws, "https://hooks.example.com/order%20shipped"),
            ("allowlist", "add", *ws, "203.0.113.7"),
        ]
    )

    for result in results:
        result.ok()


def test_a_private_webhook_target_names_the_switch_that_allows_it(
    cli: Cli, workspace_id: str
) -> None:
    ws = ("--workspace", workspace_id)
    loopback, localhost, scheme, spaced = cli.many(
        [
            ("webhooks", "add", *ws, "http://127.0.0.1:8080/hook"),
            ("webhooks", "add", *ws, "http://localhost:8080/hook"),
            ("webhooks", "add", *ws, "ftp://127.0.0.1/hook"),
            ("webhooks", "add", *ws, "http://127.0.0.1:8080/a hook"),
        ]
    )

    assert_refused(loopback.stderr, loopback.returncode, "url")
    assert "points to a loopback address; set UM_WEBHOOK_ALLOW_PRIVATE=1" in loopback.stderr
    assert_refused(localhost.stderr, localhost.returncode, "url")
    assert PRIVATE_SWITCH in localhost.stderr
    # Refused for another reason: the switch would not help, so it is not offered.
    for result in (scheme, spaced):
        assert_refused(result.stderr, result.returncode, "url")
        assert PRIVATE_SWITCH not in result.stderr
