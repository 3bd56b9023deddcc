"""A bulk send in template mode: one template, each recipient with its own variables.

    scripts/example send_bulk_template    (or: .venv/bin/python examples/send_bulk_template.py)

A problem with one item (a bad number, a missing variable) fails that item only; the rest
go out, and every item gets a ``job_id``.
"""

import asyncio

from unified_messaging import Messenger


async def main() -> None:
    async with Messenger() as messenger:
        workspace = await messenger.workspaces.create("Acme")
        await messenger.connections.add(workspace.id, "sms_b", default_sender="ACME")
        # Placeholders are {{ name }}; extra variables are ignored, missing ones are an error.
        await messenger.templates.set(
            workspace.id, "order_shipped", "Merhaba {{ name }}, {{ order }} kargoya verildi."
        )
        key = await messenger.keys.create(workspace.id, livemode=False)
        auth = await messenger.authenticate(key.secret)

        response = await messenger.send_bulk(
            auth,
            {
                "template": "order_shipped",
                "items": [
                    {"to": "0532 111 22 33", "variables": {"name": "Ayşe", "order": "A-1"}},
                    {"to": "0533 444 55 66", "variables": {"name": "Mehmet", "order": "A-2"}},
                    {"to": "0534 555 66 77", "variables": {"name": "Zeynep"}},  # no "order"
                    {"to": "12345", "variables": {"name": "Can", "order": "A-4"}},  # bad number
                ],
            },
        )
        print(f"bulk: total {response.total}, sent {response.sent}, failed {response.failed}")
        for result in response.results:
            why = f" {result.error.code}" if result.error else ""
            print(f"  {result.to:<15} {result.status}{why}  {result.job_id}")


if __name__ == "__main__":
    asyncio.run(main())
