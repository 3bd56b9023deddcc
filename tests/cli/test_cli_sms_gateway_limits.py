"""What an ``sms_e`` connection really does, as the command line shows it: ``connections test``
names the gateway's part limit (a longer text is refused before the call), and the connection
never claims the Turkish single shift, which neither gateway's HTTP API can send."""

from __future__ import annotations

import asyncio

from _cli_support import Cli
from fakes._server import serve
from fakes.kannel import PASSWORD, USERNAME, KannelFake


async def test_connections_test_names_the_gateways_part_limit(cli: Cli, workspace_id: str) -> None:
    fake = KannelFake()
    async with serve(fake.app) as base_url:
        other = await asyncio.to_thread(cli, "workspaces", "create", "Other", "--json")

        def add(workspace: str, *extra: str) -> str:
            added = cli(
                "connections", "add", "--workspace", workspace, "sms_e", "--json",
                "--base-url", base_url, "--default-sender", "ACME",
                "--credential", f"username={USERNAME}", "--credential", f"password={PASSWORD}",
                *extra,
            ).json()  # fmt: skip
            return str(added["id"])

        default = await asyncio.to_thread(add, workspace_id)
        three = await asyncio.to_thread(add, other.json()["id"], "--credential", "max_parts=3")
        as_json, as_text, with_three = await asyncio.to_thread(
            cli.many,
            [
                ("connections", "test", default, "--json"),
                ("connections", "test", default),
                ("connections", "test", three, "--json"),
            ],
        )

    # Kannel's max-messages default: one SMS.
    assert as_json.json() == {"id": default, "provider": "sms_e", "ok": True, "max_parts": 1}
    assert "It sends at most 1 SMS part a message." in as_text.ok().stdout
    assert with_three.json()["max_parts"] == 3


def test_an_sms_e_connection_never_lists_the_turkish_shift(cli: Cli, workspace_id: str) -> None:
    added = cli(
        "connections", "add", "--workspace", workspace_id, "sms_e", "--json",
        "--base-url", "http://kannel.example:13013", "--default-sender", "ACME",
        "--credential", f"username={USERNAME}", "--credential", f"password={PASSWORD}",
    ).json()  # fmt: skip
    [listed] = cli("connections", "list", "--workspace", workspace_id, "--json").json()

    assert (added["turkish_shift"], listed["turkish_shift"]) == (False, False)
