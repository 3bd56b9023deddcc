"""Send one SMS with the async ``Messenger``, in test mode.

    scripts/example send_single    (or: .venv/bin/python examples/send_single.py)

A test API key (``um_test_…``) sends every message to the simulator: no provider account is
needed and nothing is sent for real. The same code with a live key and a live adapter sends
for real.
"""

import asyncio

from unified_messaging import MessagingError, Messenger


async def main() -> None:
    # With no arguments, Messenger keeps everything in memory: right for a script or a test.
    async with Messenger() as messenger:
        # One-time set-up, the part a dashboard or an admin command does.
        workspace = await messenger.workspaces.create("Acme")
        await messenger.connections.add(
            workspace.id,
            "sms_a",
            # A live connection also takes credentials={...}; they are sealed at once.
            default_sender="ACME",
            approved_senders=["ACME"],
        )
        key = await messenger.keys.create(workspace.id, livemode=False)
        print(f"made a test key: {key.record.display_prefix}…")

        # Per request: turn the caller's key into a Principal, then send on its behalf.
        auth = await messenger.authenticate(key.secret)
        response = await messenger.send(
            auth, {"to": "0555 123 45 67", "body": "Merhaba! Siparişiniz yola çıktı."}
        )
        print(f"{response.status}: job {response.job_id} to {response.to} via {response.provider}")
        print(f"encoding {response.encoding}, {response.segments} segment(s)")

        # Reading it back, the way GET /v1/messages/{job_id} does.
        record = await messenger.get_message(auth, response.job_id)
        print(f"status record: {record.status}, sender {record.sender}")

        # Bad input raises a MessagingError that carries its HTTP status and stable code.
        try:
            await messenger.send(auth, {"to": "0212 555 12 34", "body": "Merhaba!"})
        except MessagingError as exc:
            print(f"refused: {exc.http_status} {exc.code}: {exc.message}")


if __name__ == "__main__":
    asyncio.run(main())
