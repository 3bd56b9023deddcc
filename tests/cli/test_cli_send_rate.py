"""A connection's send rate (D27) on the real command line: ``connections add|update
--max-rate/--max-calls`` (a number a second, ``off``, ``default``), shown by ``list``, and
every bad value refused as VALIDATION_ERROR naming the field, changing nothing."""

from __future__ import annotations

from _cli_support import Cli


def test_rates_are_set_on_add_changed_on_update_and_listed(cli: Cli, workspace_id: str) -> None:
    verimor, telegram = cli.many(
        [
            ("connections", "add", "sms_c", "--default-sender", "ACME", "--max-rate", "100"),
            ("connections", "add", "chatbot"),
        ],
        "--workspace", workspace_id, "--json",
    )  # fmt: skip
    added = verimor.json()
    assert (added["max_rate"], added["max_calls"]) == (100, 2.5)  # calls: Verimor's own limit
    assert (telegram.json()["max_rate"], telegram.json()["max_calls"]) == (30, None)

    calls, off = cli.many(
        [
            ("connections", "update", added["id"], "--max-calls", "10", "--json"),
            ("connections", "update", telegram.json()["id"], "--max-rate", "off", "--json"),
        ]
    )
    assert (calls.json()["max_rate"], calls.json()["max_calls"]) == (100, 10)
    assert (calls.json()["breaker"]["cooldown"]) == 30  # the breaker left as it was
    assert off.json()["max_rate"] is None

    back = cli("connections", "update", added["id"], "--max-calls", "default", "--max-rate",
               "0.5", "--json").json()  # fmt: skip
    assert (back["max_rate"], back["max_calls"]) == (0.5, 2.5)

    as_json, table = cli.many(
        [
            ("connections", "list", "--workspace", workspace_id, "--json"),
            ("connections", "list", "--workspace", workspace_id),
        ]
    )
    assert {r["provider"]: (r["max_rate"], r["max_calls"]) for r in as_json.json()} == {
        "sms_c": (0.5, 2.5),
        "chatbot": (None, None),
    }
    header, *lines = table.ok().stdout.splitlines()
    assert "MSG/S" in header and "CALLS/S" in header
    verimor_line = next(line for line in lines if "sms_c" in line)
    assert verimor_line.split()[-2:] == ["0.5", "2.5"]


def test_bad_rates_are_refused_naming_the_field(cli: Cli, workspace_id: str) -> None:
    conn = cli("connections", "add", "sms_a", "--workspace", workspace_id, "--max-rate", "50",
               "--json").json()["id"]  # fmt: skip
    cases = [
        (("connections", "update", conn, "--max-rate", "0"), "max_rate"),
        (("connections", "update", conn, "--max-rate=-3"), "max_rate"),
        (("connections", "update", conn, "--max-rate", "nan"), "max_rate"),
        (("connections", "update", conn, "--max-calls", "inf"), "max_calls"),
        (("connections", "update", conn, "--max-calls", "20000"), "max_calls"),
        (("connections", "update", conn, "--max-rate", "fast"), "max_rate"),
        (("connections", "add", "sms_b", "--workspace", workspace_id, "--max-calls", "0"),
         "max_calls"),
    ]  # fmt: skip
    results = cli.many([argv for argv, _ in cases])
    for refused, (_, field) in zip(results, cases, strict=True):
        assert refused.returncode == 1, refused.args
        assert refused.stderr.startswith(f"error: VALIDATION_ERROR: {field}: "), refused.stderr
        assert "Traceback" not in refused.stderr
    [listed] = cli("connections", "list", "--workspace", workspace_id, "--json").json()
    assert (listed["provider"], listed["max_rate"]) == ("sms_a", 50)  # unchanged, no sms_b
