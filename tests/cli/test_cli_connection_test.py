"""``connections test ID`` asks the real provider (here NetGSM's fake on loopback) about the
stored credentials, through the command line and the vault."""

from __future__ import annotations

import asyncio
import socket

from _cli_support import Cli
from fakes._server import serve
from fakes.netgsm import NetgsmFake

PASSWORD = "pw-never-printed-9f2"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_connections_test_reports_accepted_refused_and_unreachable(cli: Cli) -> None:
    fake = NetgsmFake(usercode="8501112233", password=PASSWORD)
    async with serve(fake.app) as base_url:

        def add(password: str, url: str) -> str:
            # One sms_a connection per workspace, so each case gets its own workspace.
            workspace_id = cli("workspaces", "create", "Acme", "--json").json()["id"]
            added = cli(
                "connections", "add", "--workspace", workspace_id, "sms_a", "--json",
                "--credential", "usercode=8501112233", "--credential", f"password={password}",
                "--default-sender", "ACME", "--base-url", url,
            ).json()  # fmt: skip
            return str(added["id"])

        good = await asyncio.to_thread(add, PASSWORD, base_url)
        bad = await asyncio.to_thread(add, "wrong-password-also-secret", base_url)
        closed = _closed_port()
        gone = await asyncio.to_thread(add, PASSWORD, f"http://127.0.0.1:{closed}")
        # TLS spoken to a plain-HTTP server: the handshake fails.
        no_tls = await asyncio.to_thread(add, PASSWORD, base_url.replace("http:", "https:"))

        accepted, as_text, refused, unreachable, unknown, tls = await asyncio.to_thread(
            cli.many,
            [
                ("connections", "test", good, "--json"),
                ("connections", "test", good),
                ("connections", "test", bad),
                ("connections", "test", gone, "--json"),
                ("connections", "test", "conn_nope"),
                ("connections", "test", no_tls),
            ],
        )

    assert accepted.json() == {"id": good, "provider": "sms_a", "ok": True, "max_parts": None}
    assert f"accepted the credentials of {good}" in as_text.ok().stdout
    # The check really reached the provider with the stored (decrypted) credentials.
    assert [r.path for r in fake.received].count("/sms/rest/v2/msgheader") == 3
    assert refused.returncode == 1
    assert refused.stderr.startswith("error: INVALID_CREDENTIALS: NetGSM refused")
    assert unreachable.returncode == 1
    assert unreachable.stdout == ""
    assert "error: PROVIDER_UNAVAILABLE:" in unreachable.stderr
    # Why it could not be asked.
    assert f"127.0.0.1:{closed} refused the connection" in unreachable.stderr
    assert tls.returncode == 1
    assert "error: PROVIDER_UNAVAILABLE:" in tls.stderr
    assert "the TLS handshake with 127.0.0.1:" in tls.stderr
    assert unknown.returncode == 1
    assert "error: NOT_FOUND:" in unknown.stderr
    for result in (accepted, as_text, refused, unreachable, unknown, tls):
        assert PASSWORD not in result.output
        assert "wrong-password-also-secret" not in result.output
