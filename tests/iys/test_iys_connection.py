"""An İYS connection per workspace (D33): connect with the API user (the password sealed by
the vault, never shown or logged), show, disconnect; the token İYS gives (7,200 s access,
14,400 s refresh) is one for every process, renewed before it runs out and after a 401, and
never asked for more than a few times an hour. On SQLite and PostgreSQL."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from _iys_support import iys_rig
from _sql_apps import BACKENDS

from unified_messaging.iys import IysCredentialsRefused, IysNotConnected, IysTokenLimit
from unified_messaging.iys.api import IysApi
from unified_messaging.iys.tokens import SharedTokens


@pytest.mark.parametrize("backend", BACKENDS)
async def test_connecting_checks_the_user_and_keeps_the_password_sealed(
    backend: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with iys_rig(backend, tmp_path) as r:
        shown = await r.messenger.iys.get(r.workspace_id)
        stored = await r.store.get_iys_connection(r.workspace_id)
        workspace = await r.messenger.workspaces.get(r.workspace_id)
        audit = await r.messenger.audit.list(workspace_id=r.workspace_id)

        assert r.fake.token_requests == ["password"]
        assert (shown.iys_code, shown.brand_code, shown.username) == (
            r.fake.iys_code, r.fake.brand_code, r.fake.username,
        )  # fmt: skip
        assert shown.token_valid_until is not None
        assert stored is not None and r.fake.password not in stored.password
        assert r.fake.password not in repr(stored) and "password" not in shown.to_dict()
        assert workspace.consent_policy == "iys"  # off becomes iys once connected
        assert "iys.connect" in [event.action for event in audit.data]
        assert r.fake.password not in caplog.text


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_wrong_password_is_refused_and_nothing_is_stored(
    backend: str, tmp_path: Path
) -> None:
    async with iys_rig(backend, tmp_path, connect=False) as r:
        with pytest.raises(IysCredentialsRefused) as refused:
            await r.connect(password="wrong")

        assert refused.value.http_status == 422
        assert "wrong" not in refused.value.message
        with pytest.raises(IysNotConnected):
            await r.messenger.iys.get(r.workspace_id)


@pytest.mark.parametrize("backend", BACKENDS)
async def test_bad_input_is_a_400_naming_the_field(backend: str, tmp_path: Path) -> None:
    async with iys_rig(backend, tmp_path, connect=False) as r:
        for changes, field in (
            ({"iys_code": 0}, "iys_code"),
            ({"brand_code": "abc"}, "brand_code"),
            ({"username": ""}, "username"),
            ({"username": "a\nb"}, "username"),
            ({"password": ""}, "password"),
            ({"base_url": "notaurl"}, "base_url"),
        ):
            with pytest.raises(Exception) as caught:  # noqa: PT011 - checked below
                await r.connect(**changes)
            error = caught.value
            assert getattr(error, "http_status", None) == 400, (changes, error)
            named = [detail.field for detail in getattr(error, "details", ())]
            assert field in named, (changes, error)
        assert r.fake.token_requests == []


@pytest.mark.parametrize("backend", BACKENDS)
async def test_disconnecting_forgets_the_connection(backend: str, tmp_path: Path) -> None:
    async with iys_rig(backend, tmp_path) as r:
        gone = await r.messenger.iys.disconnect(r.workspace_id)

        assert gone.workspace_id == r.workspace_id
        assert await r.store.get_iys_connection(r.workspace_id) is None
        with pytest.raises(IysNotConnected):
            await r.messenger.iys.disconnect(r.workspace_id)


@pytest.mark.parametrize("backend", BACKENDS)
async def test_one_token_serves_every_process_until_it_is_about_to_run_out(
    backend: str, tmp_path: Path
) -> None:
    async with iys_rig(backend, tmp_path) as r, r.other() as second:
        await r.record("+905321000001")
        await second.consents.create(
            await r.live(), {"recipient": "+905321000002", "status": "ONAY", "source": "HS_WEB"}
        )
        await r.work()
        await second.worker().run_until_idle()
        assert r.fake.token_requests == ["password"]  # connect's token, used by both

        await r.later(7200 - 4 * 60)  # within the 5 minutes before its end: renewed
        await r.record("+905321000003")
        await second.worker().run_until_idle()

        assert r.fake.token_requests == ["password", "refresh_token"]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_401_gets_a_new_token_and_the_call_is_made_again(
    backend: str, tmp_path: Path
) -> None:
    async with iys_rig(backend, tmp_path) as r:
        r.fake.expire_tokens()
        consent = await r.record("+905321000001")
        await r.work()

        assert r.fake.token_requests == ["password", "refresh_token"]
        assert (await r.state(consent.id))["iys_state"] == "registered"
        assert r.fake.posts_of("+905321000001") == 1


@pytest.mark.parametrize("backend", BACKENDS)
async def test_token_requests_stop_at_the_hourly_cap(backend: str, tmp_path: Path) -> None:
    async with iys_rig(backend, tmp_path, token_requests_per_hour=3) as r:
        stored = await r.store.get_iys_connection(r.workspace_id)
        assert stored is not None
        tokens = SharedTokens(r.store, r.vault, r.clock, holder="t", per_hour=3)
        api = IysApi(r.client, r.base_url, r.fake.iys_code, r.fake.brand_code)
        for _ in range(2):  # connect made the first
            access = await tokens.access(r.workspace_id, api)
            await tokens.spent(r.workspace_id, access.version)  # a 401: renewed next time
            await tokens.access(r.workspace_id, api)
        access = await tokens.access(r.workspace_id, api)
        await tokens.spent(r.workspace_id, access.version)
        with pytest.raises(IysTokenLimit) as limited:
            await tokens.access(r.workspace_id, api)

        assert len(r.fake.token_requests) == 3
        assert limited.value.retry_after is not None and limited.value.retry_after > 0
        r.clock.advance(3601)
        await tokens.access(r.workspace_id, api)
        assert len(r.fake.token_requests) == 4
