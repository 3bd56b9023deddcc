"""The vault in the library: where a Messenger's master keys come from, and what a
wrong configuration looks like (a ``ConfigurationError`` naming ``UM_MASTER_KEYS``).

- A durable store without ``UM_MASTER_KEYS`` is refused when the Messenger is built; it used
  to get a key that died with the process, so everything it sealed was lost on a restart.
- The memory store, which dies with the process anyway, keeps an ephemeral key.
- A malformed ``UM_MASTER_KEYS`` stops the Messenger when it is built.
- A credential sealed under a key id that is not configured is a configuration error when
  it is opened: the library raises ``UnknownKeyId``, the REST app answers 500
  ``INTERNAL_ERROR`` without a word about keys, and logs what to fix.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

import httpx
import pytest

from unified_messaging import (
    ConfigurationError,
    Connection,
    MasterKeyError,
    Messenger,
    UnknownKeyId,
    Vault,
    generate_key_spec,
)
from unified_messaging.asgi import create_app
from unified_messaging.providers import ProviderAdapter
from unified_messaging.store.memory import MemoryStore
from unified_messaging.store.sql import SqlStore

PASSWORD = "pw-sealed-never-shown-71c"
TO = "+905551234567"


def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite+aiosqlite:///{tmp_path / 'um.db'}"


class Recorded:
    """A live adapter factory that keeps the credentials it was built with (then refuses)."""

    def __init__(self) -> None:
        self.credentials: list[dict[str, str]] = []

    def __call__(self, connection: Connection, credentials: Mapping[str, str]) -> ProviderAdapter:
        self.credentials.append(dict(credentials))
        raise RuntimeError("recorded; this test sends nothing")


# -------------------------------------------------------------------------- item 7


@pytest.mark.parametrize("unset", [None, "", "  "], ids=["unset", "empty", "blank"])
@pytest.mark.parametrize(
    "url", ["sqlite", "postgresql+asyncpg://user@127.0.0.1:1/never"], ids=["sqlite", "postgresql"]
)
def test_a_durable_store_without_master_keys_is_refused_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, unset: str | None, url: str
) -> None:
    if unset is None:
        monkeypatch.delenv("UM_MASTER_KEYS", raising=False)
    else:
        monkeypatch.setenv("UM_MASTER_KEYS", unset)
    # Built, not opened: the refusal comes before any database is touched.
    store = SqlStore(sqlite_url(tmp_path) if url == "sqlite" else url)

    with pytest.raises(MasterKeyError) as info:
        Messenger(store)

    error = info.value
    assert isinstance(error, ConfigurationError)
    assert error.setting == "UM_MASTER_KEYS"
    assert error.message.startswith("UM_MASTER_KEYS is not set, and SqlStore keeps")
    assert "vault generate-key" in error.message
    assert not (tmp_path / "um.db").exists()


async def test_the_memory_store_keeps_an_ephemeral_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("UM_MASTER_KEYS", raising=False)
    recorded = Recorded()

    # Subclasses too: the tests' own stores are often a MemoryStore with one method changed.
    class Subclass(MemoryStore):
        pass

    for store in (None, MemoryStore(), Subclass()):
        async with Messenger(store, live_adapters={"sms_a": recorded}) as messenger:
            workspace = await messenger.workspaces.create("Acme")
            await messenger.connections.add(
                workspace.id, "sms_a", credentials={"usercode": "u", "password": PASSWORD},
                default_sender="ACME",
            )  # fmt: skip
            key = await messenger.keys.create(workspace.id, livemode=True)
            auth = await messenger.authenticate(key.secret)
            with pytest.raises(RuntimeError, match="recorded"):
                await messenger.send(auth, {"to": TO, "body": "x"})

    assert recorded.credentials == [{"usercode": "u", "password": PASSWORD}] * 3


async def test_with_um_master_keys_what_one_messenger_seals_the_next_one_opens(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("UM_MASTER_KEYS", generate_key_spec("k1"))
    recorded = Recorded()
    async with Messenger(SqlStore(sqlite_url(tmp_path))) as first:
        workspace = await first.workspaces.create("Acme")
        await first.connections.add(
            workspace.id, "sms_a", credentials={"usercode": "u", "password": PASSWORD},
            default_sender="ACME",
        )  # fmt: skip
        key = await first.keys.create(workspace.id, livemode=True)

    async with Messenger(
        SqlStore(sqlite_url(tmp_path)), live_adapters={"sms_a": recorded}
    ) as next_:
        auth = await next_.authenticate(key.secret)
        with pytest.raises(RuntimeError, match="recorded"):
            await next_.send(auth, {"to": TO, "body": "x"})

    assert recorded.credentials == [{"usercode": "u", "password": PASSWORD}]


# -------------------------------------------------------------------------- item 12


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (",", "entry 1 is empty"),
        ("k1:", "entry 1 (kid 'k1') has no key after ':'"),
        ("k1:notbase64", "entry 1 (kid 'k1'): the key is not valid base64"),
        ("k1:" + "A" * 22, "entry 1 (kid 'k1'): the key must decode to 32 bytes (AES-256), got 16"),
        (f"{generate_key_spec('k1')},{generate_key_spec('k1')}", "entry 2: duplicate key id 'k1'"),
        ("k1:" + "A" * 20 + " " + "A" * 23, "entry 1 (kid 'k1'): the key is not valid base64"),
        ("kı:" + "A" * 43, "entry 1: invalid key id"),
    ],
    ids=["comma", "kid-colon", "not-base64", "16-bytes", "duplicate", "space", "unicode"],
)
@pytest.mark.parametrize("durable", [False, True], ids=["memory", "sqlite"])
def test_a_malformed_um_master_keys_stops_the_messenger_when_it_is_built(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, value: str, problem: str, durable: bool
) -> None:
    monkeypatch.setenv("UM_MASTER_KEYS", value)
    store = SqlStore(sqlite_url(tmp_path)) if durable else MemoryStore()

    with pytest.raises(ConfigurationError) as info:
        Messenger(store)

    assert isinstance(info.value, MasterKeyError)
    assert info.value.message.startswith(f"UM_MASTER_KEYS: {problem}"), info.value.message
    for part in value.replace(":", ",").replace(" ", ",").split(","):
        if len(part) > 8:  # a key, or part of one: never shown
            assert part not in str(info.value)


async def sealed_under_k1(tmp_path: Path) -> str:
    """A live key of a workspace whose one connection's credentials are sealed under k1."""
    async with Messenger(SqlStore(sqlite_url(tmp_path)), vault=Vault.generate("k1")) as first:
        workspace = await first.workspaces.create("Acme")
        await first.connections.add(
            workspace.id, "sms_a", credentials={"usercode": "u", "password": PASSWORD},
            default_sender="ACME",
        )  # fmt: skip
        return (await first.keys.create(workspace.id, livemode=True)).secret


async def test_opening_a_token_under_a_key_id_not_configured_names_it(tmp_path: Path) -> None:
    api_key = await sealed_under_k1(tmp_path)
    recorded = Recorded()
    store = SqlStore(sqlite_url(tmp_path))
    vault = Vault.from_env({"UM_MASTER_KEYS": generate_key_spec("k2")})
    async with Messenger(store, vault=vault, live_adapters={"sms_a": recorded}) as messenger:
        auth = await messenger.authenticate(api_key)
        with pytest.raises(UnknownKeyId) as info:
            await messenger.send(auth, {"to": TO, "body": "x"})

    assert recorded.credentials == []
    assert info.value.key_id == "k1"
    assert info.value.message.startswith(
        "Sealed data uses master key id 'k1', which is not configured "
        "(keys from UM_MASTER_KEYS: k2). Add key 'k1' back to UM_MASTER_KEYS"
    )
    assert PASSWORD not in str(info.value)


async def test_the_rest_app_answers_500_without_a_word_about_keys_and_logs_what_to_fix(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    api_key = await sealed_under_k1(tmp_path)
    vault = Vault.from_env({"UM_MASTER_KEYS": generate_key_spec("k2")})
    messenger = Messenger(SqlStore(sqlite_url(tmp_path)), vault=vault)
    app = create_app(messenger)
    async with messenger:
        transport = httpx.ASGITransport(app=app)
        headers = {"Authorization": f"Bearer {api_key}"}
        async with httpx.AsyncClient(
            transport=transport, base_url="http://t", headers=headers
        ) as c:
            with caplog.at_level(logging.ERROR, logger="unified_messaging.asgi"):
                response = await c.post("/v1/messages", json={"to": TO, "body": "x"})

    assert response.status_code == 500
    assert response.json() == {"error": {"code": "INTERNAL_ERROR", "message": "Internal error."}}
    assert "k1" not in response.text
    [record] = [r for r in caplog.records if r.name == "unified_messaging.asgi"]
    assert record.getMessage().startswith(
        "configuration error: Sealed data uses master key id 'k1', which is not configured"
    )
    assert "UM_MASTER_KEYS" in record.getMessage()
    assert record.exc_info is None  # an operator's mistake, not a bug: no traceback
    assert PASSWORD not in caplog.text
