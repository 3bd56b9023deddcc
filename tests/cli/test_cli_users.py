"""``users`` through the real command line (D31): create, list, disable; passwords on stdin."""

from __future__ import annotations

from _cli_support import Cli

PASSWORD = "correct horse battery staple"


def test_an_operator_and_a_member_are_created_and_listed(cli: Cli, workspace_id: str) -> None:
    operator = cli("users", "create", " Ops@Example.COM ", "--operator", "--password-stdin",
                   "--json", stdin=PASSWORD + "\n").json()  # fmt: skip
    member = cli("users", "create", "ayse@example.com", "--workspace", workspace_id,
                 "--password-stdin", "--json", stdin=PASSWORD).json()  # fmt: skip
    assert (operator["email"], operator["role"], operator["workspace_id"]) == (
        "ops@example.com", "operator", None)  # fmt: skip
    assert (member["role"], member["workspace_id"]) == ("member", workspace_id)
    assert "password" not in str(operator) and PASSWORD not in str(member)
    listed = cli("users", "list", "--json").json()
    assert [u["email"] for u in listed] == ["ops@example.com", "ayse@example.com"]


def test_refusals_name_the_problem(cli: Cli, workspace_id: str) -> None:
    short, no_role, both, unknown_ws, twice_first = cli.many(
        [
            ("users", "create", "a@example.com", "--operator", "--password-stdin"),
            ("users", "create", "b@example.com", "--password-stdin"),
            ("users", "create", "c@example.com", "--operator", "--workspace", workspace_id,
             "--password-stdin"),
            ("users", "create", "d@example.com", "--workspace", "ws_nope", "--password-stdin"),
            ("users", "create", "not-an-email", "--operator", "--password-stdin"),
        ],
        stdin="short",
    )  # fmt: skip
    assert short.returncode != 0 and "password" in short.stderr
    assert no_role.returncode == 2 and "--operator" in no_role.stderr
    assert both.returncode == 2 and "not allowed with" in both.stderr
    assert unknown_ws.returncode != 0
    assert twice_first.returncode != 0 and "e-mail" in twice_first.stderr
    cli("users", "create", "e@example.com", "--operator", "--password-stdin",
        stdin=PASSWORD).ok()  # fmt: skip
    again = cli("users", "create", "E@example.com", "--operator", "--password-stdin",
                stdin=PASSWORD)  # fmt: skip
    assert again.returncode != 0 and "already exists" in again.stderr


def test_a_disabled_user_is_listed_as_disabled(cli: Cli) -> None:
    cli("users", "create", "ops@example.com", "--operator", "--password-stdin",
        stdin=PASSWORD).ok()  # fmt: skip
    disabled = cli("users", "disable", "OPS@example.com", "--json").json()
    assert disabled["enabled"] is False and disabled["disabled_at"]
    assert cli("users", "list", "--json").json()[0]["enabled"] is False
    missing = cli("users", "disable", "nobody@example.com")
    assert missing.returncode != 0 and "nobody@example.com" in missing.stderr


def test_common_and_repeated_passwords_are_refused_without_being_echoed(cli: Cli) -> None:
    refusals = {
        "password1234": "most common passwords",  # in the list as it is
        "Iloveyou2024!!": "most common passwords",  # a common one with digits and symbols
        "aaaaaaaaaaaa": "one character or a short group",
        "abcabcabcabc": "one character or a short group",
    }
    for password, rule in refusals.items():
        refused = cli("users", "create", "ops@example.com", "--operator", "--password-stdin",
                      stdin=password)  # fmt: skip
        assert refused.returncode != 0, password
        assert "password" in refused.stderr and rule in refused.stderr, refused.stderr
        assert password not in refused.stderr + refused.stdout
    assert cli("users", "list", "--json").json() == []
