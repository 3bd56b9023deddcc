"""``serve`` serves the dashboard (D31), and ``serve --demo`` prints a one-time sign-in link
for the demo operator: the real process, reached over loopback."""

from __future__ import annotations

import html
import json
import re
import signal

import httpx
from _cli_support import Cli
from test_cli_serve import serving, stop


def _csrf(page: str) -> str:
    found = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert found
    return html.unescape(found.group(1))


def test_the_demo_link_signs_in_once_and_the_pages_answer(cli: Cli) -> None:
    with serving(cli, "--demo", "--json") as proc:
        assert proc.stdout is not None
        demo = json.loads(proc.stdout.readline())
        link = demo["dashboard_login_url"]
        assert link.startswith(demo["url"] + "/dashboard/login/link?token=")
        origin = {"Origin": demo["url"]}
        with httpx.Client(timeout=10) as browser:
            page = browser.get(link)
            signed = browser.post(link, data={"csrf_token": _csrf(page.text)}, headers=origin)
            overview = browser.get(demo["url"] + "/dashboard/")
            keys = browser.get(demo["url"] + "/dashboard/keys")
        with httpx.Client(timeout=10) as stranger:
            page = stranger.get(link)
            reused = stranger.post(link, data={"csrf_token": _csrf(page.text)}, headers=origin)
        _, stderr = stop(proc, signal.SIGTERM)

    assert signed.status_code == 303, signed.text
    assert overview.status_code == 200 and "demo@example.com (operator)" in overview.text
    assert "um_test_" in keys.text and "pytest" not in keys.text  # the demo key, named so
    assert reused.status_code == 410
    assert proc.returncode == 0, stderr


def test_the_demo_dashboard_adds_a_loopback_webhook_receiver(cli: Cli) -> None:
    # A new user's first receiver is on their own machine: serve --demo allows it without
    # UM_WEBHOOK_ALLOW_PRIVATE (which cli.environ() leaves unset).
    with serving(cli, "--demo", "--json") as proc:
        assert proc.stdout is not None
        demo = json.loads(proc.stdout.readline())
        link, origin = demo["dashboard_login_url"], {"Origin": demo["url"]}
        with httpx.Client(timeout=10, base_url=demo["url"]) as browser:
            page = browser.get(link)
            browser.post(link, data={"csrf_token": _csrf(page.text)}, headers=origin)
            form = browser.get("/dashboard/webhooks")
            added = browser.post(
                "/dashboard/webhooks",
                data={"csrf_token": _csrf(form.text), "url": "http://127.0.0.1:9/hook"},
                headers=origin,
            )
            listed = browser.get("/dashboard/webhooks")
        stop(proc, signal.SIGTERM)

    assert added.status_code == 303, added.text
    assert "http://127.0.0.1:9/hook" in listed.text


def test_the_demo_text_names_the_dashboard_link(cli: Cli) -> None:
    with serving(cli, "--demo") as proc:
        assert proc.stdout is not None
        lines = iter(proc.stdout.readline, "")
        heading = next(line for line in lines if line.startswith("Dashboard"))
        link = next(lines).strip()
        page = httpx.get(link, timeout=10)
        stop(proc, signal.SIGINT)

    assert "one-time sign-in link" in heading
    assert page.status_code == 200 and "Sign in" in page.text
