"""A connection's SMS senders (D3) on the real command line: ``connections update
--default-sender/--no-default-sender --approved-sender/--any-sender``, the flags given change
and the others stay, every bad value refused as VALIDATION_ERROR naming its field and
changing nothing, each change one ``connection.senders`` audit row by ``cli``."""

from __future__ import annotations

from _cli_support import Cli, refused_for


def test_senders_change_with_the_flags_given_and_the_rest_stays(
    cli: Cli, workspace_id: str
) -> None:
    conn = cli("connections", "add", "sms_a", "--workspace", workspace_id, "--default-sender",
               "ACME", "--approved-sender", "ACME", "--json").json()["id"]  # fmt: skip
    update = ("connections", "update", conn)
    default = cli(*update, "--default-sender", "ACME2", "--json")
    approved = cli(*update, "--approved-sender", "ACME3", "--approved-sender", "ACME4", "--json")
    cleared = cli(*update, "--no-default-sender", "--any-sender", "--json")
    nothing = cli(*update, "--max-rate", "5", "--json")  # no sender flag: senders stay
    # The default joins a non-empty approved list (add_connection's rule, the same function).
    assert (default.json()["default_sender"], default.json()["approved_senders"]) == (
        "ACME2", ["ACME", "ACME2"])  # fmt: skip
    assert approved.json()["default_sender"] == "ACME2"  # kept: only --approved-sender given
    assert approved.json()["approved_senders"] == ["ACME3", "ACME4", "ACME2"]
    assert (cleared.json()["default_sender"], cleared.json()["approved_senders"]) == (None, [])
    assert (nothing.json()["default_sender"], nothing.json()["approved_senders"]) == (None, [])

    audit = cli("audit", "list", "--action", "connection.senders", "--json").json()
    assert [(row["actor"], row["target"]) for row in audit["data"]] == [("cli", conn)] * 3


def test_bad_senders_are_refused_naming_the_field_and_change_nothing(
    cli: Cli, workspace_id: str
) -> None:
    conn = cli("connections", "add", "sms_a", "--workspace", workspace_id, "--default-sender",
               "ACME", "--json").json()["id"]  # fmt: skip
    cases = [
        (("connections", "update", conn, "--default-sender", "A" * 33), "default_sender"),
        (("connections", "update", conn, "--approved-sender", "AC\x1bME"), "approved_senders"),
        (("connections", "update", conn, "--approved-sender", ""), "approved_senders"),
    ]
    results = cli.many([argv for argv, _ in cases])
    for refused, (_, field) in zip(results, cases, strict=True):
        assert refused.returncode == 1, refused.args
        assert refused_for(refused.stderr, field), refused.stderr
    both = cli("connections", "update", conn, "--default-sender", "X", "--no-default-sender")
    assert both.returncode == 2 and "not allowed with" in both.stderr
    [listed] = cli("connections", "list", "--workspace", workspace_id, "--json").json()
    assert (listed["default_sender"], listed["approved_senders"]) == ("ACME", [])
