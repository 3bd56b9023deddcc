"""Fallback across real adapters over loopback HTTP: one job, three providers, three attempts.

``sms_a`` (NetGSM) answers 5xx, ``sms_b`` (İletimerkezi) refuses the order, ``sms_c``
(Verimor) accepts: the job is ``sent`` by ``sms_c`` with every try in ``attempts``.
"""

from __future__ import annotations

from fakes.iletimerkezi import Canned as IletimerkeziCanned
from fakes.iletimerkezi import IletimerkeziFake
from fakes.netgsm import Canned as NetgsmCanned
from fakes.netgsm import NetgsmFake
from fakes.verimor import FakeVerimor, serve

from unified_messaging import Messenger, Vault


async def test_5xx_then_rejection_then_acceptance_is_one_job_with_three_attempts() -> None:
    netgsm, iletimerkezi, verimor = NetgsmFake(), IletimerkeziFake(), FakeVerimor()
    netgsm.script(NetgsmCanned(status=503, body=b"Service Unavailable", content_type="text/plain"))
    iletimerkezi.script(IletimerkeziCanned(code=402))  # insufficient credit: provider-level
    async with serve(netgsm.app) as a, serve(iletimerkezi.app) as b, serve(verimor.app) as c:
        messenger = Messenger(vault=Vault.generate())
        async with messenger:
            workspace = await messenger.workspaces.create("live fallback")
            await messenger.connections.add(
                workspace.id, "sms_a", base_url=a, default_sender="ACME",
                credentials={"usercode": netgsm.usercode, "password": netgsm.password},
            )  # fmt: skip
            await messenger.connections.add(
                workspace.id, "sms_b", base_url=b, default_sender="ACME",
                credentials={"api_key": iletimerkezi.key, "api_hash": iletimerkezi.hash},
            )  # fmt: skip
            await messenger.connections.add(
                workspace.id, "sms_c", base_url=c, default_sender="UMTEST",
                credentials={"username": verimor.username, "password": verimor.password},
            )  # fmt: skip
            principal = await messenger.principal(workspace.id, livemode=True)
            response = await messenger.send(
                principal,
                {"to": "0555 123 45 67", "body": "Şişli'de buluşalım", "sender": None,
                 "fallback": ["sms_b", "sms_c"]},
            )  # fmt: skip
            record = await messenger.get_message(principal, response.job_id)

    assert response.status == "sent"
    assert response.provider == "sms_c"
    attempts = [(a.provider, a.status, a.error.code if a.error else None) for a in record.attempts]
    assert attempts == [
        ("sms_a", "unavailable", "PROVIDER_UNAVAILABLE"),
        ("sms_b", "rejected", "INSUFFICIENT_CREDIT"),
        ("sms_c", "accepted", None),
    ]
    assert record.attempts[2].provider_message_id is not None
    assert len(netgsm.sends) == 1
    assert len(iletimerkezi.orders) == 1
    (verimor_send,) = verimor.sends()
    assert verimor_send.json["messages"][0]["msg"] == "Şişli'de buluşalım"
    assert verimor_send.json["source_addr"] == "UMTEST"
