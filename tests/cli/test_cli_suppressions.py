"""``suppressions add/list/remove/import`` through the real command line."""

from __future__ import annotations

from pathlib import Path

from _cli_support import Cli


def test_add_list_remove_session(cli: Cli, workspace_id: str) -> None:
    ws = ("--workspace", workspace_id)
    added = cli("suppressions", "add", *ws, "sms", "0555 000 00 20", "--reason", "by phone",
                "--json")  # fmt: skip
    again, bot, test_mode, bad_channel, bad_number = cli.many(
        [
            ("suppressions", "add", *ws, "sms", "+905550000020", "--json"),
            ("suppressions", "add", *ws, "chatbot", "777"),
            ("suppressions", "add", *ws, "--test", "sms", "05550000030", "--json"),
            ("suppressions", "add", *ws, "fax", "05550000020"),
            ("suppressions", "add", *ws, "sms", "'; DROP TABLE um_suppressions;--"),
        ]
    )  # fmt: skip
    live_json, live_text, test_json = cli.many(
        [
            ("suppressions", "list", *ws, "--json"),
            ("suppressions", "list", *ws),
            ("suppressions", "list", *ws, "--test", "--json"),
        ]
    )
    removed = cli("suppressions", "remove", *ws, "sms", "05550000020", "--json")
    gone = cli("suppressions", "remove", *ws, "sms", "05550000020")

    entry = added.json()
    assert (entry["recipient"], entry["source"], entry["reason"]) == (
        "+905550000020", "cli", "by phone",
    )  # fmt: skip
    assert again.json() == entry  # idempotent
    assert "Suppressed 777 on chatbot" in bot.ok().stdout
    assert test_mode.json()["livemode"] is False
    assert bad_channel.returncode == 2  # argparse: not one of the choices
    assert bad_number.returncode == 1
    assert bad_number.stderr.startswith("error: INVALID_RECIPIENT: ")
    assert [e["recipient"] for e in live_json.json()] == ["777", "+905550000020"]
    assert "+905550000020" in live_text.ok().stdout and "RECIPIENT" in live_text.stdout
    assert [e["recipient"] for e in test_json.json()] == ["+905550000030"]
    assert removed.json()["id"] == entry["id"]
    assert gone.returncode == 1
    assert gone.stderr.startswith("error: NOT_FOUND: ")


def test_import_reads_a_csv_by_the_campaign_rules(
    cli: Cli, workspace_id: str, tmp_path: Path
) -> None:
    ws = ("--workspace", workspace_id)
    good = tmp_path / "optouts.csv"
    good.write_bytes(
        "\ufeffphone,reason,channel\r\n"
        "0555 000 00 21,replied İPTAL,\r\n"
        "+905550000021,twice,\r\n"
        "not a number,,\r\n"
        "4242,blocked,chatbot\r\n"
        "+905550000022,,fax\r\n".encode()
    )
    utf16 = tmp_path / "utf16.csv"
    utf16.write_bytes("phone\n05550000023\n".encode("utf-16"))
    no_column = tmp_path / "nocolumn.csv"
    no_column.write_text("number\n05550000023\n", encoding="utf-8")

    imported, wrong_encoding, missing = cli.many(
        [
            ("suppressions", "import", *ws, str(good), "--json"),
            ("suppressions", "import", *ws, str(utf16)),
            ("suppressions", "import", *ws, str(no_column)),
        ]
    )
    listed = cli("suppressions", "list", *ws, "--json")

    result = imported.json()
    assert (result["added"], result["existing"]) == (2, 1)
    assert [r["row"] for r in result["refused"]] == [4, 6]
    assert {(e["channel"], e["recipient"], e["source"]) for e in listed.json()} == {
        ("sms", "+905550000021", "import"),
        ("chatbot", "4242", "import"),
    }
    assert wrong_encoding.returncode == 1
    assert "UTF-16" in wrong_encoding.stderr
    assert missing.returncode == 1
    assert "no column 'phone'" in missing.stderr
