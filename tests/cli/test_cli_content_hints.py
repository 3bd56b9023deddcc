"""``workspaces update --trade-name/--mersis/--opt-out/--content-hints`` and the hints
``templates set`` prints, through the real command line (D33)."""

from __future__ import annotations

from _cli_support import Cli

COMPLETE = "KAMPANYA Örnek Gıda: %20 indirim. RET yazıp 3338'e gönderin."


def test_content_settings_are_set_shown_checked_and_cleared(cli: Cli, workspace_id: str) -> None:
    update = ("workspaces", "update", workspace_id)
    # In order: each command reads what the one before it stored.
    refused_first = cli(*update, "--content-hints", "refuse")  # nothing to check against yet
    set_ = cli(*update, "--trade-name", " Örnek Gıda A.Ş. ", "--mersis", "0123 4567 8901 2345",
               "--opt-out", "IPTAL yazıp 4545", "--content-hints", "refuse", "--json")  # fmt: skip
    bad_mersis = cli(*update, "--mersis", "12345", "--content-hints", "warn")
    shown = cli(*update)
    cleared = cli(*update, "--opt-out", "", "--content-hints", "warn", "--json")

    assert refused_first.returncode == 1
    assert refused_first.stderr.startswith("error: VALIDATION_ERROR: The refuse needs the trade")
    assert {k: set_.json()[k] for k in ("trade_name", "mersis", "opt_out", "content_hints")} == {
        "trade_name": "Örnek Gıda A.Ş.", "mersis": "0123456789012345",
        "opt_out": "IPTAL yazıp 4545", "content_hints": "refuse",
    }  # fmt: skip
    assert bad_mersis.returncode == 1 and "mersis must be 16 digits" in bad_mersis.stderr
    assert (
        "content hints" in shown.ok().stdout and "refuse" in shown.stdout
    )  # 12345 changed nothing
    assert (cleared.json()["opt_out"], cleared.json()["content_hints"]) == (None, "warn")
    assert cleared.json()["mersis"] == "0123456789012345"


def test_templates_set_shows_what_the_body_misses_as_a_commercial_sms(
    cli: Cli, workspace_id: str
) -> None:
    ws = ("--workspace", workspace_id)
    bare, complete = cli.many(
        [
            ("templates", "set", *ws, "promo", "Merhaba {{ name }}, %20 indirim", "--json"),
            ("templates", "set", *ws, "full", COMPLETE),
        ]
    )

    hints = bare.json()["commercial_hints"]
    assert [h["code"] for h in hints] == ["OPT_OUT_MISSING", "BRAND_NOT_SET",
                                          "COMMERCIAL_TAG_MISSING"]  # fmt: skip
    assert "As a commercial SMS: OPT_OUT_MISSING" not in complete.ok().stdout
    assert "As a commercial SMS: BRAND_NOT_SET" in complete.stdout
    assert "Parts as sent (the operator's code counted): 1." in complete.stdout
