"""Bad input in every dashboard form, over real HTTP: a clear 4xx (or the form again), never a
500. Each value goes into every field the dashboard's forms have."""

from __future__ import annotations

import pytest
from _dash_support import Console

from unified_messaging.testing import TestBed

UGLY = ["", " ", "nan", "inf", "-1", "1e999", "9" * 40, "\x00", "<b>x</b>", "ş" * 70, "0",
        "2099-02-30T00:00", "../../etc", "a,b,,c"]  # fmt: skip
FIELDS = (
    "name", "rate_limit", "rate_burst", "expires_at", "cidr", "confirmed", "key", "body",
    "description", "provider_template", "provider_language", "url", "events", "provider",
    "default_sender", "approved_senders", "iys_mode", "base_url", "make_default", "max_rate",
    "max_calls", "window", "min_calls", "failure_ratio", "consecutive", "cooldown",
    "workspace_id", "livemode", "back", "cred_usercode", "cred_password",
)  # fmt: skip


@pytest.mark.parametrize("value", UGLY)
async def test_no_form_answers_500_whatever_is_typed(
    signed_in: Console, bed: TestBed, value: str
) -> None:
    connection = (await bed.messenger.connections.list(bed.workspace.id))[0]
    endpoint = await bed.messenger.webhooks.create(bed.workspace.id, "https://h.example/x")
    paths = [
        "/keys", "/allowlist", "/allowlist/remove", "/templates", "/templates/preview",
        "/webhooks", f"/webhooks/{endpoint.endpoint.id}/events", "/connections",
        f"/connections/{connection.id}/senders", f"/connections/{connection.id}/rate",
        f"/connections/{connection.id}/breaker", "/view", "/keys/nope/revoke",
        "/templates/nope/delete", "/webhooks/deliveries/nope/redeliver",
    ]  # fmt: skip
    token = await signed_in.token()
    for path in paths:
        answer = await signed_in.post(path, dict.fromkeys(FIELDS, value), csrf=token)
        assert answer.status_code < 500, (path, value, answer.text[:300])
