"""Django's own test runner (``manage.py test shop``): sends go to the simulator, the outbox
starts empty in every test, as ``mail.outbox`` does, and ``settle()`` sends the delivery
signals. The views run in a transaction each (``ATOMIC_REQUESTS``), so these are
``TestCase``s."""

import json
from datetime import timedelta

from django.test import TestCase

from shop.models import Order
from unified_messaging.contrib.django import get_messenger, get_principal
from unified_messaging.contrib.django.signals import message_delivered, message_event
from unified_messaging.contrib.django.testing import outbox, settle
from unified_messaging.webhooks import generate_test_headers

SECRET = "whsec_dGVzdC1vbmx5LXdlYmhvb2stc2VjcmV0LTMyYnl0ZXM="


class NotifyTests(TestCase):
    def test_a_the_view_sends_through_the_simulator(self) -> None:
        answer = self.client.post("/notify/", {"to": "0555 123 45 67", "order": "A-1"})

        self.assertEqual(answer.status_code, 201)
        self.assertEqual(outbox.recipients(), ["+905551234567"])
        self.assertIn("A-1", outbox.texts()[0])

    def test_b_each_test_starts_with_an_empty_outbox(self) -> None:
        self.client.post("/notify/", {"to": "0555 123 45 68", "order": "B-2"})

        self.assertEqual(len(outbox), 1)  # not 2: test a's send is gone
        self.assertEqual(outbox.recipients(), ["+905551234568"])

    def test_c_a_magic_number_fails_as_the_provider_would(self) -> None:
        answer = self.client.post("/notify/", {"to": "+905550000001", "order": "C-3"})

        self.assertEqual(answer.json()["status"], "failed")  # 01: the provider rejects it

    def test_d_settle_delivers_the_simulated_report(self) -> None:
        job_id = self.client.post("/notify/", {"to": "0555 123 45 69", "order": "D-4"}).json()[
            "job_id"
        ]
        settle()

        record = get_messenger().get_message(get_principal(), job_id)
        self.assertEqual(record.status, "delivered")

    def test_e_settle_sends_the_delivery_signals_as_production_does(self) -> None:
        got: list[tuple[str, str]] = []

        def on_any(sender: str, record: object, **details: object) -> None:
            got.append((sender, record.job_id))  # type: ignore[attr-defined]

        message_event.connect(on_any)
        self.addCleanup(message_event.disconnect, on_any)
        job_id = self.client.post("/notify/", {"to": "0555 123 45 70", "order": "E-5"}).json()[
            "job_id"
        ]
        self.assertEqual(got, [])  # nothing before the worker's turn, as in production

        settle()

        # (An earlier test's sends, never settled, may be delivered here too.)
        ours = [sender for sender, about in got if about == job_id]
        self.assertEqual(ours, ["message.sent", "message.delivered"])

    def test_f_a_delivery_receiver_updates_the_order_in_the_tests_database(self) -> None:
        def mark(sender: str, record: object, **details: object) -> None:
            Order.objects.filter(sms_job_id=record.job_id).update(sms_status="delivered")  # type: ignore[attr-defined]

        message_delivered.connect(mark)
        self.addCleanup(message_delivered.disconnect, mark)
        self.client.post("/ship/", {"to": "0555 123 45 71", "order": "F-6"})

        settle()

        self.assertEqual(Order.objects.get(number="F-6").sms_status, "delivered")


class SendOnCommitTests(TestCase):
    def test_a_committed_order_sends_once_its_transaction_commits(self) -> None:
        with self.captureOnCommitCallbacks(execute=True) as callbacks:
            answer = self.client.post("/ship/", {"to": "0555 123 45 72", "order": "G-7",
                                                 "on_commit": "1"})  # fmt: skip

        self.assertEqual(answer.status_code, 201)
        self.assertEqual(len(callbacks), 1)
        self.assertEqual(outbox.recipients(), ["+905551234572"])
        self.assertTrue(Order.objects.get(number="G-7").sms_job_id.startswith("msg_"))

    def test_b_a_rolled_back_order_sends_nothing(self) -> None:
        with self.captureOnCommitCallbacks(execute=True) as callbacks:
            answer = self.client.post("/ship/", {"to": "0555 123 45 73", "order": "H-8",
                                                 "on_commit": "1", "fail": "1"})  # fmt: skip

        self.assertEqual(answer.status_code, 402)
        self.assertEqual(callbacks, [])
        self.assertEqual(len(outbox), 0)
        self.assertFalse(Order.objects.filter(number="H-8").exists())


class WebhookTests(TestCase):
    def _event(self, event_type: str) -> bytes:
        messenger = get_messenger()
        sent = messenger.send(get_principal(), {"to": "+905551112233", "body": "x"})
        record = messenger.get_message(get_principal(), sent.job_id)
        event = {"type": event_type, "timestamp": "2026-11-27T08:00:00Z", "data": record.to_dict()}
        return json.dumps(event).encode()

    def test_a_signed_event_sends_its_signal_with_the_record(self) -> None:
        got: list[dict[str, object]] = []
        every: list[str] = []

        def on_delivered(sender: str, **details: object) -> None:
            got.append(details)

        def on_any(sender: str, **details: object) -> None:
            every.append(sender)

        message_delivered.connect(on_delivered)
        message_event.connect(on_any)
        self.addCleanup(message_delivered.disconnect, on_delivered)
        self.addCleanup(message_event.disconnect, on_any)
        body = self._event("message.delivered")
        headers = generate_test_headers(body, SECRET, msg_id="msg_evt_1")

        answer = self.client.post(
            "/messaging/webhooks/", body, content_type="application/json",
            headers=headers,
        )  # fmt: skip

        self.assertEqual(answer.status_code, 204)
        self.assertEqual(len(got), 1)
        self.assertEqual(got[0]["event_id"], "msg_evt_1")
        self.assertEqual(got[0]["record"].job_id, json.loads(body)["data"]["job_id"])
        self.assertIs(got[0]["livemode"], False)
        self.assertEqual(every, ["message.delivered"])

    def test_b_a_forged_or_unsigned_event_is_refused_and_sends_nothing(self) -> None:
        got: list[object] = []

        def on_any(sender: str, **details: object) -> None:
            got.append(details)

        message_event.connect(on_any)
        self.addCleanup(message_event.disconnect, on_any)
        body = self._event("message.failed")
        forged = generate_test_headers(body, "whsec_" + "b3RoZXItc2VjcmV0LW90aGVyLXNlY3JldC0zMmI=")

        wrong = self.client.post("/messaging/webhooks/", body, content_type="application/json",
                                 headers=forged)  # fmt: skip
        unsigned = self.client.post("/messaging/webhooks/", body, content_type="application/json")
        fetched = self.client.get("/messaging/webhooks/")

        self.assertEqual((wrong.status_code, unsigned.status_code), (400, 400))
        self.assertEqual(fetched.status_code, 405)
        self.assertEqual(got, [])


class VerifyTests(TestCase):
    def test_a_code_read_from_the_outbox_logs_in(self) -> None:
        started = self.client.post("/login/code/", {"phone": "0555 123 45 72"})
        self.assertEqual(started.status_code, 201)
        code = outbox.last_code("+905551234572")

        wrong = self.client.post(
            "/login/check/", {"verification": started.json()["verification"], "code": "x"}
        )
        right = self.client.post(
            "/login/check/", {"verification": started.json()["verification"], "code": code}
        )

        self.assertEqual((wrong.json(), right.json()), ({"ok": False}, {"ok": True}))

    def test_the_visitors_address_goes_to_the_pumping_guard(self) -> None:
        from unified_messaging.verifications import GuardSettings, Velocity

        guard = get_messenger().verifications.guard
        workspace_id = get_principal().workspace_id
        guard.update_settings(workspace_id, address_limit=Velocity(1, timedelta(hours=1)))
        self.addCleanup(guard.set_settings, workspace_id, GuardSettings())
        first = self.client.post("/login/code/", {"phone": "0532 111 00 01"})
        second = self.client.post("/login/code/", {"phone": "0542 222 00 02"})

        self.assertEqual(first.status_code, 201)
        self.assertEqual(second.json(), {"error": "VERIFICATION_FRAUD_SUSPECTED"})
        self.assertEqual(second.status_code, 429)
