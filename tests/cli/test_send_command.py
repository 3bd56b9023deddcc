"""``unified-messaging send``: one message through the façade, run as the real command line.

A test-mode workspace on the CLI's SQLite file (all seven providers on the simulator); each
test reads back what the command stored.
"""

from __future__ import annotations

import json

import pytest
from _campaign_bed import TEMPLATE, Bed, make_bed
from _cli_support import Cli


@pytest.fixture
def bed(database_url: str, master_keys: str) -> Bed:
    return make_bed(database_url, master_keys)


def _send(bed: Bed, *args: str) -> list[str]:
    return ["send", "--workspace", bed.workspace_id, "--test", *args]


def test_send_prints_the_answer_and_stores_the_message(cli: Cli, bed: Bed) -> None:
    as_json, as_text = cli.many(
        [
            _send(bed, "--to", "0532 100 00 01", "--body", "Merhaba", "--json"),
            _send(bed, "--to", "(0532) 100-00-02", "--body", "Selam", "--provider", "sms_c"),
        ]
    )

    answer = as_json.json()
    assert answer["status"] == "sent"
    assert answer["to"] == "+905321000001"  # normalized as the REST edge does (D5)
    assert (answer["provider"], answer["segments"], answer["encoding"]) == ("sms_a", 1, "gsm7")
    lines = dict(line.split(None, 1) for line in as_text.ok().stdout.splitlines() if line)
    assert lines["Status"] == "sent"
    assert lines["Provider"] == "sms_c"
    stored = {m.job_id: m for m in bed.messages()}
    assert set(stored) == {answer["job_id"], lines["Job"]}
    assert stored[answer["job_id"]].text == "Merhaba"
    assert stored[lines["Job"]].to == "+905321000002"
    assert bed.messages(livemode=True) == []  # --test: nothing in live mode


def test_send_renders_a_template_from_its_variables(cli: Cli, bed: Bed) -> None:
    answer = cli(
        *_send(bed, "--to", "05321000003", "--template", TEMPLATE),
        "--var",
        "name=Ayşe",
        "--var",
        "order=A-1042",
        "--json",
    ).json()

    [stored] = bed.messages()
    assert stored.job_id == answer["job_id"]
    assert stored.text == "Merhaba Ayşe, siparişiniz A-1042 yolda."
    assert stored.template_key == TEMPLATE


def test_send_with_fallback_shows_the_attempts(cli: Cli, bed: Bed) -> None:
    # The simulator's +90 555 000 00 11: the first provider tried refuses it.
    answer = cli(
        *_send(bed, "--to", "+905550000011", "--body", "Merhaba", "--provider", "sms_a"),
        "--fallback",
        "sms_b",
        "--json",
    ).json()

    assert answer["provider"] == "sms_b"
    assert [(a["provider"], a["status"]) for a in answer["attempts"]] == [
        ("sms_a", "rejected"),
        ("sms_b", "accepted"),
    ]


TO = ["--to", "05321000004"]


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["--to", "12345", "--body", "x"], "INVALID_RECIPIENT"),
        ([*TO, "--body", "x", "--provider", "sms_z"], "VALIDATION_ERROR"),
        ([*TO, "--body", "x" * 1601], "VALIDATION_ERROR"),
        ([*TO, "--template", "nope"], "TEMPLATE_NOT_FOUND"),
        ([*TO, "--template", TEMPLATE, "--var", "name=A"], "TEMPLATE_VARIABLE_MISSING"),
        ([*TO, "--body", "x", "--sender", "OTHER"], "SENDER_NOT_APPROVED"),
        (
            [*TO, "--body", "x", "--provider", "chatbot", "--fallback", "sms_b"],
            "FALLBACK_NOT_ALLOWED",
        ),
    ],
)
def test_a_refused_send_prints_the_code_exits_1_and_stores_nothing(
    cli: Cli, bed: Bed, args: list[str], code: str
) -> None:
    result = cli(*_send(bed, *args))

    assert result.returncode == 1
    assert result.stderr.startswith(f"error: {code}: ")
    assert "Traceback" not in result.output
    assert result.stdout == ""
    assert bed.messages() == []


def test_a_message_the_provider_refused_is_printed_and_exits_1(cli: Cli, bed: Bed) -> None:
    # +90 555 000 00 01: the provider rejects it at submit (a 201 "failed" over REST).
    rejected = cli(*_send(bed, "--to", "+905550000001", "--body", "Merhaba", "--json"))
    # +90 555 000 00 03: the provider times out; no fallback left (502 over REST, D7).
    unreachable = cli(*_send(bed, "--to", "+905550000003", "--body", "Merhaba"))

    assert rejected.returncode == 1
    answer = json.loads(rejected.stdout)
    assert answer["status"] == "failed"
    assert answer["error"]["code"] == "PROVIDER_REJECTED"
    assert rejected.stderr.startswith("error: PROVIDER_REJECTED: ")
    assert unreachable.returncode == 1
    assert unreachable.stderr.startswith("error: PROVIDER_UNAVAILABLE: ")
    stored = {m.to: m for m in bed.messages()}
    # D7: the job is kept as failed, and the error line names it so it can be looked up.
    assert f"(job {stored['+905550000003'].job_id})" in unreachable.stderr
    assert {m.status for m in stored.values()} == {"failed"}


def test_usage_errors_exit_2(cli: Cli, bed: Bed) -> None:
    no_text, both, var_without_template, bad_var = cli.many(
        [
            _send(bed, "--to", "05321000005"),
            _send(bed, "--to", "05321000005", "--body", "x", "--template", TEMPLATE),
            _send(bed, "--to", "05321000005", "--body", "x", "--var", "a=b"),
            _send(bed, "--to", "05321000005", "--template", TEMPLATE, "--var", "novalue"),
        ]
    )

    assert [r.returncode for r in (no_text, both, var_without_template, bad_var)] == [2] * 4
    assert "--var: only together with --template" in var_without_template.stderr
    assert "'novalue' is not NAME=VALUE" in bad_var.stderr
    assert bed.messages() == []


def test_an_unknown_workspace_is_not_found(cli: Cli, bed: Bed) -> None:
    result = cli("send", "--workspace", "ws_nope", "--to", "05321000006", "--body", "x", "--test")

    assert result.returncode == 1
    assert result.stderr.startswith("error: NOT_FOUND: ")
