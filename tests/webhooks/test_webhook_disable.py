"""``disable_webhook_endpoint``: an operator stops an endpoint's deliveries until it is
enabled again, through the façade and a real local receiver."""

from __future__ import annotations

from _webhook_support import LOOPBACK, message_record, running_receiver

from unified_messaging import ManualClock, Messenger
from unified_messaging._lifecycle.worker import Worker
from unified_messaging.vault._core import Vault
from unified_messaging.webhooks._outbox import WORK_KIND, WebhookOutbox
from unified_messaging.webhooks._sender import WebhookSender


async def test_a_disabled_endpoint_gets_no_event_until_it_is_enabled_again() -> None:
    clock, vault = ManualClock(), Vault.generate()
    async with (
        running_receiver() as receiver,
        WebhookSender(policy=LOOPBACK) as sender,
        Messenger(clock=clock, vault=vault, webhook_policy=LOOPBACK) as messenger,
    ):
        workspace = await messenger.workspaces.create("Acme")
        created = await messenger.webhooks.create(workspace.id, receiver.url())
        endpoint_id = created.endpoint.id
        outbox = WebhookOutbox(messenger.store, vault, clock, sender=sender)
        worker = Worker(messenger.store, clock, {WORK_KIND: outbox.handle})

        disabled = await messenger.webhooks.disable(endpoint_id)
        again = await messenger.webhooks.disable(endpoint_id)  # no change
        queued_while_disabled = await outbox.emit(message_record(workspace.id), "message.sent")
        await worker.run_until_idle()
        enabled = await messenger.webhooks.enable(endpoint_id)
        queued_after = await outbox.emit(message_record(workspace.id), "message.delivered")
        await worker.run_until_idle()

    assert (disabled.enabled, disabled.disabled_at) == (False, clock.now())
    assert again == disabled
    assert (queued_while_disabled, queued_after) == (0, 1)
    assert (enabled.enabled, enabled.disabled_at) == (True, None)
    assert len(receiver.received) == 1
