"""``consents add/list/show/import/export`` and ``workspaces update --consent-policy``
through the real command line (D33)."""

from __future__ import annotations

import csv
from datetime import datetime, timedelta
from pathlib import Path

from _cli_support import Cli

from unified_messaging.consents.rules import GMT3


def iys(moment: datetime) -> str:
    return moment.astimezone(GMT3).strftime("%Y-%m-%d %H:%M:%S")


def test_add_list_show_session(cli: Cli, workspace_id: str) -> None:
    ws = ("--workspace", workspace_id)
    added = cli("consents", "add", *ws, "0532 400 00 01", "--status", "ONAY",
                "--source", "HS_ISLAK_IMZA", "--json")  # fmt: skip
    again, first_ret, no_source, bad_source, tacir, test_mode = cli.many(
        [
            ("consents", "add", *ws, "+905324000001", "--status", "ONAY", "--source", "HS_WEB"),
            ("consents", "add", *ws, "+905324000002", "--status", "RET", "--source", "HS_WEB"),
            ("consents", "add", *ws, "+905324000002", "--status", "ONAY"),
            ("consents", "add", *ws, "+905324000002", "--status", "ONAY", "--source", "HS_X"),
            ("consents", "add", *ws, "+905324000001", "--status", "ONAY",
             "--recipient-type", "TACIR", "--json"),
            ("consents", "add", *ws, "--test", "+905324000001", "--status", "ONAY",
             "--source", "HS_WEB", "--json"),
        ]
    )  # fmt: skip
    listed, text = cli.many([("consents", "list", *ws, "--json"), ("consents", "list", *ws)])
    shown = cli("consents", "show", *ws, added.json()["id"])

    consent = added.json()
    assert (consent["recipient"], consent["source"], consent["iys_state"]) == (
        "+905324000001", "HS_ISLAK_IMZA", "pending"
    )  # fmt: skip
    assert again.returncode == 1 and again.stderr.startswith("error: CONSENT_UNCHANGED: ")
    assert first_ret.returncode == 1 and first_ret.stderr.startswith("error: CONSENT_FIRST_RET")
    assert no_source.returncode == 1 and no_source.stderr.startswith("error: CONSENT_SOURCE_REQ")
    assert bad_source.returncode == 2  # argparse: not one of the choices
    assert tacir.json()["recipient_type"] == "TACIR"
    assert test_mode.json()["livemode"] is False
    assert [c["recipient_type"] for c in listed.json()] == ["TACIR", "BIREYSEL"]
    assert "+905324000001" in text.ok().stdout and "DATE (GMT+3)" in text.stdout
    assert "ONAY  HS_ISLAK_IMZA" in shown.ok().stdout


def test_import_records_each_row_and_reports_the_refused_ones(
    cli: Cli, workspace_id: str, tmp_path: Path
) -> None:
    ws = ("--workspace", workspace_id)
    now = datetime.now(GMT3)
    rows = tmp_path / "consents.csv"
    rows.write_text(
        "recipient,type,recipient_type,status,source,consent_date\n"
        f"0532 500 00 01,MESAJ,BIREYSEL,ONAY,HS_WEB,{iys(now - timedelta(hours=2))}\n"
        f"+905325000001,MESAJ,BIREYSEL,RET,HS_MESAJ,{iys(now - timedelta(hours=1))}\n"
        "+905325000002,MESAJ,BIREYSEL,ONAY,HS_2015,2015-05-01 00:00:00\n"
        "+905325000003,MESAJ,BIREYSEL,RET,HS_WEB,\n"
        "ayse@Example.com,EPOSTA,BIREYSEL,ONAY,HS_EORTAM,\n"
        "+905325000004,MESAJ,TACIR,ONAY,,\n"
        "+905325000005,MESAJ,BIREYSEL,ONAY,HS_WEB,2020-01-01 00:00:00\n",
        encoding="utf-8",
    )

    result = cli("consents", "import", *ws, str(rows), "--json").json()
    listed = cli("consents", "list", *ws, "--json").json()

    assert result["recorded"] == 5
    assert [(r["row"], r["error"].split(":")[0]) for r in result["refused"]] == [
        (5, "The first record for an address cannot be RET."),
        (8, "consent_date 2020-01-01 00"),
    ]
    by_address = {(c["recipient"], c["recipient_type"]): c["status"] for c in listed}
    assert by_address == {
        ("+905325000001", "BIREYSEL"): "RET",
        ("+905325000002", "BIREYSEL"): "ONAY",
        ("ayse@example.com", "BIREYSEL"): "ONAY",
        ("+905325000004", "TACIR"): "ONAY",
    }


def test_export_writes_what_import_reads(cli: Cli, workspace_id: str, tmp_path: Path) -> None:
    ws = ("--workspace", workspace_id)
    for n in range(3):
        cli("consents", "add", *ws, f"+90532600000{n}", "--status", "ONAY",
            "--source", "HS_WEB").ok()  # fmt: skip
    exported = tmp_path / "out.csv"

    cli("consents", "export", *ws, "--output", str(exported)).ok()
    moved = cli("consents", "import", *ws, "--test", str(exported), "--json").json()
    stdout = cli("consents", "export", *ws)

    with exported.open(encoding="utf-8") as stream:
        table = list(csv.DictReader(stream))
    assert [row["recipient"] for row in table] == [f"+90532600000{n}" for n in (2, 1, 0)]
    assert {row["source"] for row in table} == {"HS_WEB"}
    assert (moved["recorded"], moved["refused"]) == (3, [])
    assert stdout.ok().stdout.startswith("recipient,type,recipient_type,status,source,")


def test_workspaces_update_sets_the_consent_policy(cli: Cli, workspace_id: str) -> None:
    local = cli("workspaces", "update", workspace_id, "--consent-policy", "local", "--json")
    iys = cli("workspaces", "update", workspace_id, "--consent-policy", "iys", "--json")
    bad = cli("workspaces", "update", workspace_id, "--consent-policy", "all")
    audit = cli("audit", "list", "--json")

    assert local.json()["consent_policy"] == "local"
    assert iys.json()["consent_policy"] == "iys"
    assert bad.returncode == 2  # argparse offers off, local and iys only
    assert "workspace.consent_policy" in [e["action"] for e in audit.json()["data"]]
