"""A vault rotation (D21) reaches İYS's sealed values: the connection's password is
re-sealed under the new key and the old token dropped, so once the old key is gone the
worker still signs in to İYS (with the password: one token request)."""

from __future__ import annotations

from pathlib import Path

import pytest
from _iys_support import iys_rig
from _sql_apps import BACKENDS

from unified_messaging import Messenger, Vault
from unified_messaging.iys import IysSettings
from unified_messaging.vault._core import generate_key_spec


@pytest.mark.parametrize("backend", BACKENDS)
async def test_rotating_the_vault_reseals_the_iys_password(backend: str, tmp_path: Path) -> None:
    old = generate_key_spec("k1")
    new = generate_key_spec("k2")
    async with iys_rig(backend, tmp_path, vault=Vault.from_spec(old)) as r:
        both = Messenger(r.store, clock=r.clock, vault=Vault.from_spec(f"{new},{old}"),
                         iys=IysSettings(client=r.client))  # fmt: skip
        report = await both.vault.rotate()
        only_new = Messenger(r.store, clock=r.clock, vault=Vault.from_spec(new),
                             iys=IysSettings(client=r.client))  # fmt: skip
        consent = await only_new.consents.create(
            await only_new.principal(r.workspace_id, livemode=True),
            {"recipient": "+905321000001", "status": "ONAY", "source": "HS_WEB"},
        )
        await only_new.worker().run_until_idle()
        state = await r.state(consent.id)

        assert report.iys_passwords == 1
        assert state["iys_state"] == "registered"
        assert r.fake.token_requests[-1] == "password"  # the old token went with the old key
