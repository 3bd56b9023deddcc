"""Testing your own code with the unified-messaging pytest plugin.

    scripts/example pytest_outbox_example
    (or: .venv/bin/python -m pytest examples/pytest_outbox_example.py)

The plugin comes with the package; there is nothing to configure. Each fixture gives a
fresh test-mode workspace with all seven providers on the simulator:

- ``um_sync_messenger`` / ``um_messenger``: a ``SyncMessenger`` / async ``Messenger`` over it
- ``um_principal``: the workspace in test mode, to pass to ``send`` and friends
- ``um_outbox``: every simulated submission, in order, like Django's ``mail.outbox``
- ``um_api_key``, ``um_clock``, ``um_testbed``: the test key, the manual clock, all of it;
  ``await um_testbed.settle()`` runs the background work that is due (delivery reports)
"""

import pytest

from unified_messaging import Messenger, Principal, SyncMessenger
from unified_messaging.testing import Outbox, TestBed

# --- the application code under test (normally imported from your own package) ----------


def notify_shipped(messenger: SyncMessenger, auth: Principal, phone: str, order: str) -> str:
    response = messenger.send(auth, {"to": phone, "body": f"Siparişiniz {order} kargoda."})
    return response.job_id


# --- the tests -------------------------------------------------------------------------


def test_notify_shipped_sends_one_sms(
    um_sync_messenger: SyncMessenger, um_principal: Principal, um_outbox: Outbox
) -> None:
    job_id = notify_shipped(um_sync_messenger, um_principal, "0555 123 45 67", "A-1042")

    # The outbox holds what the (simulated) provider was handed: normalized, rendered.
    assert um_outbox.recipients() == ["+905551234567"]
    assert um_outbox.texts() == ["Siparişiniz A-1042 kargoda."]
    assert um_outbox[0].job_id == job_id
    assert um_outbox[0].sender == "UMTEST"  # the testbed's default message header


def test_each_fallback_try_is_an_outbox_entry(
    um_sync_messenger: SyncMessenger, um_principal: Principal, um_outbox: Outbox
) -> None:
    request = {"to": "+90 555 000 00 11", "body": "Kod: 1234", "fallback": ["sms_b"]}
    um_sync_messenger.send(um_principal, request)

    assert [(entry.provider, entry.outcome) for entry in um_outbox] == [
        ("sms_a", "rejected"),
        ("sms_b", "accepted"),
    ]
    assert len(um_outbox.accepted) == 1


def test_missing_consent_is_a_failed_send_not_an_exception(
    um_sync_messenger: SyncMessenger, um_principal: Principal, um_outbox: Outbox
) -> None:
    response = um_sync_messenger.send(um_principal, {"to": "+90 555 000 00 02", "body": "Hi"})

    assert response.status == "failed"
    assert response.error is not None and response.error.code == "IYS_CONSENT_MISSING"
    assert um_outbox.accepted == []


@pytest.mark.asyncio
async def test_async_code_uses_um_messenger(
    um_messenger: Messenger, um_principal: Principal, um_outbox: Outbox
) -> None:
    response = await um_messenger.send_bulk(
        um_principal,
        {"items": [{"to": "0532 111 22 33", "body": "A"}, {"to": "0533 444 55 66", "body": "B"}]},
    )

    assert response.sent == 2
    assert sorted(um_outbox.texts()) == ["A", "B"]


@pytest.mark.asyncio
async def test_delivery_reports_arrive_when_the_testbed_settles(um_testbed: TestBed) -> None:
    bed = um_testbed
    ok = await bed.messenger.send(bed.principal, {"to": "0555 123 45 67", "body": "Yolda"})
    lost = await bed.messenger.send(bed.principal, {"to": "+90 555 000 00 06", "body": "x"})

    await bed.settle()  # runs the background work that is due: here, the simulated reports

    assert (await bed.messenger.get_message(bed.principal, ok.job_id)).status == "delivered"
    assert (await bed.messenger.get_message(bed.principal, lost.job_id)).status == "failed"
