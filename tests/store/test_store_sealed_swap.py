"""The ``Store`` contract of the vault rotation's writes (D21), on every
backend: a compare-and-set of a row's sealed fields alone, which fails when they changed."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from test_store_contract import T0, a_connection, a_workspace, an_endpoint

from unified_messaging.store.base import Store


@pytest.fixture
async def ws(store: Store) -> Store:
    await store.create_workspace(a_workspace())
    return store


async def test_credentials_are_swapped_only_while_they_are_what_was_read(ws: Store) -> None:
    await ws.add_connection(a_connection("c_1"))
    read = await ws.get_connection("c_1")
    assert read is not None
    # An admin update meanwhile: another field, then new credentials.
    await ws.update_connection(replace(read, default_sender="NEW"))
    assert await ws.swap_connection_credentials("c_1", read.credentials, "v1.k2.n.resealed")
    assert not await ws.swap_connection_credentials("c_1", read.credentials, "v1.k2.n.stale")
    assert not await ws.swap_connection_credentials("c_missing", read.credentials, "v1.k2.x")
    after = await ws.get_connection("c_1")
    assert after is not None
    assert (after.credentials, after.default_sender) == ("v1.k2.n.resealed", "NEW")


async def test_webhook_secrets_are_swapped_only_while_they_are_what_was_read(ws: Store) -> None:
    await ws.add_webhook_endpoint(an_endpoint("we_1"))
    read = await ws.get_webhook_endpoint("we_1")
    assert read is not None and read.sealed_secrets == ("v1.k1.nonce.secret", None)
    await ws.set_webhook_endpoint_health("we_1", enabled=False, disabled_at=T0,
                                         failing_since=None)  # fmt: skip
    expires = T0 + timedelta(days=1)
    swapped = await ws.swap_webhook_secrets(
        "we_1", expected=read.sealed_secrets, secret="v1.k2.n.new", previous="v1.k2.n.old",
        previous_expires_at=expires,
    )  # fmt: skip
    assert swapped
    stale = await ws.swap_webhook_secrets(
        "we_1", expected=read.sealed_secrets, secret="v1.k2.n.stale", previous=None,
        previous_expires_at=None,
    )  # fmt: skip
    assert not stale
    after = await ws.get_webhook_endpoint("we_1")
    assert after is not None
    assert after.sealed_secrets == ("v1.k2.n.new", "v1.k2.n.old")
    assert (after.previous_secret_expires_at, after.enabled) == (expires, False)
    again = await ws.swap_webhook_secrets(
        "we_1", expected=after.sealed_secrets, secret="v1.k2.n.next", previous=None,
        previous_expires_at=None,
    )  # fmt: skip
    assert again
    final = await ws.get_webhook_endpoint("we_1")
    assert final is not None and final.sealed_secrets == ("v1.k2.n.next", None)
