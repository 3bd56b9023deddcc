"""``sms_e``'s gateway is a credential: ``connections add`` takes ``gateway=jasmin`` and refuses
the other gateway's settings by name, through the real command line."""

from __future__ import annotations

from _cli_support import Cli

PASSWORD = "jasmin-pw-never-printed"


def test_connections_add_takes_the_jasmin_gateway_and_refuses_kannels_settings(
    cli: Cli, workspace_id: str
) -> None:
    add = ("connections", "add", "--workspace", workspace_id, "sms_e", "--json",
           "--base-url", "http://jasmin.example:1401", "--default-sender", "ACME",
           "--credential", "username=acme", "--credential", f"password={PASSWORD}")  # fmt: skip
    added, refused, unknown = cli.many(
        [
            (*add, "--credential", "gateway=jasmin"),
            (*add, "--credential", "gateway=jasmin", "--credential", "smsc=route1"),
            (*add, "--credential", "gateway=smpp"),
        ]
    )

    assert added.json()["provider"] == "sms_e"
    assert refused.returncode == 1
    assert "INVALID_CREDENTIALS" in refused.stderr
    assert "smsc is a Kannel setting" in refused.stderr
    assert unknown.returncode == 1
    assert "gateway" in unknown.stderr
    for result in (added, refused, unknown):
        assert PASSWORD not in result.output
