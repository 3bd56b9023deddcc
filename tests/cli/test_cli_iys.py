"""``unified-messaging iys connect/show/disconnect/sync`` as a user runs them, against the
loopback fake İYS: the password comes from standard input only and never comes back out;
``sync`` registers what is pending and pulls, then exits."""

from __future__ import annotations

import asyncio
import json

import pytest
from _cli_support import Cli, Result
from fakes.iys import FakeIys, serve


@pytest.fixture
def fake() -> FakeIys:
    return FakeIys()


def connect_args(workspace_id: str, fake: FakeIys, url: str) -> list[str]:
    return ["iys", "connect", "--workspace", workspace_id, "--iys-code", str(fake.iys_code),
            "--brand-code", str(fake.brand_code), "--username", fake.username,
            "--base-url", url]  # fmt: skip


async def run(cli: Cli, *args: str, stdin: str | None = None) -> Result:
    return await asyncio.to_thread(cli, *args, stdin=stdin)


async def test_connect_reads_the_password_from_stdin_and_never_shows_it(
    cli: Cli, workspace_id: str, fake: FakeIys
) -> None:
    async with serve(fake.app()) as url:
        args = connect_args(workspace_id, fake, url)
        no_stdin = await run(cli, *args)
        wrong = await run(cli, *args, "--password-stdin", stdin="wrong\n")
        connected = await run(cli, *args, "--password-stdin", "--json",
                              stdin=fake.password + "\n")  # fmt: skip
        shown = await run(cli, "iys", "show", "--workspace", workspace_id)
        audit = await run(cli, "audit", "list", "--json")

    assert no_stdin.returncode == 2 and "--password-stdin" in no_stdin.stderr
    assert wrong.returncode == 1 and "IYS_CREDENTIALS_REFUSED" in wrong.stderr
    assert "wrong" not in wrong.output
    document = connected.json()
    assert document["iys_code"] == fake.iys_code and "password" not in document
    assert document["token_valid_until"]
    assert shown.ok().stdout.count(str(fake.brand_code)) == 1
    for result in (connected, shown, audit):
        assert fake.password not in result.output
    assert "iys.connect" in [e["action"] for e in audit.json()["data"]]
    assert fake.token_requests == ["password", "password"]


async def test_sync_registers_pending_consents_and_disconnect_forgets(
    cli: Cli, workspace_id: str, fake: FakeIys
) -> None:
    async with serve(fake.app()) as url:
        await run(cli, *connect_args(workspace_id, fake, url), "--password-stdin",
                  stdin=fake.password)  # fmt: skip
        added = await run(cli, "consents", "add", "05321000001", "--workspace", workspace_id,
                          "--status", "ONAY", "--source", "HS_WEB", "--json")  # fmt: skip
        fake.citizen_change("+905321000002", "RET", when="2026-11-30 10:00:00")
        synced = await run(cli, "iys", "sync", "--workspace", workspace_id, "--json")
        shown = await run(cli, "consents", "show", added.json()["id"], "--workspace",
                          workspace_id, "--json")  # fmt: skip
        listed = await run(cli, "consents", "list", "--workspace", workspace_id, "--json")
        gone = await run(cli, "iys", "disconnect", "--workspace", workspace_id)
        again = await run(cli, "iys", "show", "--workspace", workspace_id)

    report = synced.json()
    assert report["registered"] == 1 and report["pending"] == 0
    assert report["pulled"]["applied"] == 1  # the citizen's RET
    assert shown.json()["iys_state"] == "registered"
    assert fake.posts_of("+905321000001") == 1
    statuses = {c["recipient"]: c["status"] for c in listed.json()}
    assert statuses == {"+905321000001": "ONAY", "+905321000002": "RET"}
    assert gone.ok().stdout.startswith("Disconnected")
    assert again.returncode == 1 and "IYS_NOT_CONNECTED" in again.stderr
    assert json.dumps(fake.password) not in synced.output


async def test_connect_via_provider_registers_through_iletimerkezi(
    cli: Cli, workspace_id: str
) -> None:
    from fakes.provider_consents import IletimerkeziConsentsFake

    im = IletimerkeziConsentsFake()
    async with serve(im.app()) as url:
        ws = ("--workspace", workspace_id)
        added = await run(cli, "connections", "add", *ws, "sms_b", "--base-url", url,
                          "--default-sender", "ACME", "--credentials-file", "-", "--json",
                          stdin=json.dumps({"api_key": im.key, "api_hash": im.hash}))  # fmt: skip
        connection_id = added.json()["id"]
        mixed = await run(cli, "iys", "connect", *ws, "--brand-code", str(im.brand_code),
                          "--via-provider", connection_id, "--username", "u")  # fmt: skip
        connected = await run(cli, "iys", "connect", *ws, "--brand-code", str(im.brand_code),
                              "--via-provider", connection_id)  # fmt: skip
        await run(cli, "consents", "add", "05321000001", *ws, "--status", "ONAY",
                  "--source", "HS_WEB")  # fmt: skip
        synced = await run(cli, "iys", "sync", *ws, "--json")
        shown = await run(cli, "iys", "show", *ws, "--json")

    assert mixed.returncode == 2 and "--via-provider: takes no" in mixed.stderr
    assert f"Connected through {connection_id}" in connected.ok().stdout
    assert synced.json()["registered"] == 1 and synced.json()["pending"] == 0
    assert shown.json()["via_provider"] == connection_id
    assert [c["recipient"] for c in im.consents_sent()] == ["+905321000001"]
    assert im.hash not in synced.output + shown.output + connected.output
