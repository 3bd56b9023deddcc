"""Fallback: backup SMS providers, tried in order until one accepts.

    scripts/example fallback    (or: .venv/bin/python examples/fallback.py)

Test mode's magic numbers ``+90 555 000 00 XX`` make the simulated providers misbehave on
purpose (see the README's table), so each path can be seen without a real outage.
"""

import asyncio

from unified_messaging import Messenger, Principal, ProviderUnavailable, SendResponse


def show(label: str, response: SendResponse) -> None:
    tries = ", ".join(f"{a.provider} {a.status}" for a in response.attempts or [])
    print(f"{label}: {response.status} via {response.provider} [{tries}]")


async def send(messenger: Messenger, auth: Principal, to: str) -> SendResponse:
    # The first provider is the workspace default (sms_a, the first one connected).
    return await messenger.send(
        auth, {"to": to, "body": "Doğrulama kodunuz: 482913", "fallback": ["sms_b", "sms_c"]}
    )


async def main() -> None:
    async with Messenger() as messenger:
        workspace = await messenger.workspaces.create("Acme")
        for code in ("sms_a", "sms_b", "sms_c"):
            await messenger.connections.add(workspace.id, code, default_sender="ACME")
        key = await messenger.keys.create(workspace.id, livemode=False)
        auth = await messenger.authenticate(key.secret)

        # ...12: the first two providers tried reject; the third accepts.
        show("two rejections", await send(messenger, auth, "+90 555 000 00 12"))
        # ...02: no IYS consent. Every provider checks IYS, so fallback stops at once.
        show("no IYS consent", await send(messenger, auth, "+90 555 000 00 02"))
        # ...03: every provider times out. With the whole chain unavailable: 502, job kept.
        try:
            await send(messenger, auth, "+90 555 000 00 03")
        except ProviderUnavailable as exc:
            # The job was stored before any provider was called, so its id explains the 502.
            record = await messenger.get_message(auth, exc.job_id or "")
            tries = len(record.attempts)
            print(f"all unavailable: {exc.code}, job {exc.job_id}: {record.status}, {tries} tries")


if __name__ == "__main__":
    asyncio.run(main())
