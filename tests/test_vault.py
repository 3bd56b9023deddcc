"""The credentials vault (D21): AES-256-GCM tokens bound to workspace and connection."""

from __future__ import annotations

import base64
import copy
import logging
import os
import pickle
import stat
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from unified_messaging._errors import (
    ConfigurationError,
    DecryptionFailed,
    MasterKeyError,
    UnknownKeyId,
    VaultError,
)
from unified_messaging.vault._core import Vault, generate_key_spec

KEY1 = bytes(range(32))
KEY2 = bytes(range(100, 132))
KEY1_B64 = base64.urlsafe_b64encode(KEY1).rstrip(b"=").decode()
KEY2_B64 = base64.urlsafe_b64encode(KEY2).rstrip(b"=").decode()
SPEC1 = f"k1:{KEY1_B64}"
SECRET = "hunter2-şifre-秘密"
WS, CONN = "ws_1", "conn_1"

# Module-level so hypothesis tests need no function-scoped fixture.
VAULT = Vault.from_spec(SPEC1)

posix_only = pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")


def ids() -> dict[str, str]:
    return {"workspace_id": WS, "connection_id": CONN}


def b64d(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def b64e(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def flip(text: str, index: int) -> str:
    raw = bytearray(b64d(text))
    raw[index] ^= 0x01
    return b64e(bytes(raw))


def assert_clean(text: str) -> None:
    """No key material or plaintext in a message, repr or log line."""
    for secret in (KEY1_B64, KEY2_B64, SECRET, KEY1.hex(), KEY2.hex()):
        assert secret not in text


# -- round trips ----------------------------------------------------------------------------


def test_bytes_round_trip() -> None:
    token = VAULT.encrypt(SECRET.encode(), **ids())
    assert VAULT.decrypt(token, **ids()) == SECRET.encode()
    assert SECRET not in token


def test_token_shape() -> None:
    token = VAULT.encrypt(b"x", **ids())
    version, kid, nonce, sealed = token.split(".")
    assert (version, kid) == ("v1", "k1")
    assert len(b64d(nonce)) == 12
    assert len(b64d(sealed)) == 1 + 16
    assert "=" not in token


def test_json_round_trip_unicode() -> None:
    creds = {"username": "kullanıcı", "password": SECRET, "sender": "ŞİRKET 🚀"}
    token = VAULT.encrypt_json(creds, **ids())
    assert VAULT.decrypt_json(token, **ids()) == creds


def test_empty_plaintext_round_trips() -> None:
    assert VAULT.decrypt(VAULT.encrypt(b"", **ids()), **ids()) == b""


@given(
    plaintext=st.binary(max_size=256),
    workspace_id=st.text(min_size=1, max_size=20),
    connection_id=st.text(min_size=1, max_size=20),
)
def test_round_trip_any_ids(plaintext: bytes, workspace_id: str, connection_id: str) -> None:
    bound = {"workspace_id": workspace_id, "connection_id": connection_id}
    assert VAULT.decrypt(VAULT.encrypt(plaintext, **bound), **bound) == plaintext


@given(creds=st.dictionaries(st.text(max_size=10), st.text(max_size=30), max_size=5))
def test_json_round_trip_any_text(creds: dict[str, str]) -> None:
    assert VAULT.decrypt_json(VAULT.encrypt_json(creds, **ids()), **ids()) == creds


def test_nonce_unique_per_encryption() -> None:
    tokens = {VAULT.encrypt(b"same", **ids()) for _ in range(50)}
    assert len(tokens) == 50
    assert len({t.split(".")[2] for t in tokens}) == 50


def test_encrypt_json_rejects_non_str_without_echoing_value() -> None:
    with pytest.raises(TypeError, match="'password'") as info:
        VAULT.encrypt_json({"password": 12345}, **ids())  # type: ignore[dict-item]
    assert "12345" not in str(info.value)


def test_encrypt_rejects_str_and_empty_ids() -> None:
    with pytest.raises(TypeError):
        VAULT.encrypt(SECRET, **ids())  # type: ignore[arg-type]
    with pytest.raises(VaultError, match="workspace_id"):
        VAULT.encrypt(b"x", workspace_id="", connection_id=CONN)
    with pytest.raises(VaultError, match="connection_id"):
        VAULT.encrypt(b"x", workspace_id=WS, connection_id="")


def test_decrypt_json_rejects_non_object_payload() -> None:
    for payload in (b"[1,2]", b'{"a":1}', b"\xff\xfe", b"not json"):
        token = VAULT.encrypt(payload, **ids())
        with pytest.raises(DecryptionFailed):
            VAULT.decrypt_json(token, **ids())


# -- tampering and mis-binding --------------------------------------------------------------


def _with_part(token: str, index: int, value: str) -> str:
    parts = token.split(".")
    parts[index] = value
    return ".".join(parts)


def _decrypt_fails(vault: Vault, token: str, **bound: str) -> DecryptionFailed:
    with pytest.raises(DecryptionFailed) as info:
        vault.decrypt(token, **(bound or ids()))
    assert info.value.__cause__ is None
    assert_clean(str(info.value))
    assert_clean(repr(info.value))
    return info.value


def test_tampered_nonce() -> None:
    token = VAULT.encrypt(SECRET.encode(), **ids())
    nonce = token.split(".")[2]
    for i in (0, 5, 11):
        _decrypt_fails(VAULT, _with_part(token, 2, flip(nonce, i)))


def test_tampered_ciphertext_and_tag() -> None:
    token = VAULT.encrypt(SECRET.encode(), **ids())
    sealed = token.split(".")[3]
    size = len(b64d(sealed))
    for i in (0, size - 17, size - 16, size - 1):  # ciphertext start/end, tag start/end
        _decrypt_fails(VAULT, _with_part(token, 3, flip(sealed, i)))


def test_truncated_ciphertext() -> None:
    token = VAULT.encrypt(SECRET.encode(), **ids())
    sealed = b64d(token.split(".")[3])
    _decrypt_fails(VAULT, _with_part(token, 3, b64e(sealed[:-1])))
    _decrypt_fails(VAULT, _with_part(token, 3, b64e(sealed[:15])))


def test_changed_kid_fails_even_when_it_is_known() -> None:
    vault = Vault([("k2", KEY2), ("k1", KEY1)])
    token = vault.encrypt(SECRET.encode(), **ids())
    _decrypt_fails(vault, _with_part(token, 1, "k1"))


def test_changed_version_fails() -> None:
    token = VAULT.encrypt(SECRET.encode(), **ids())
    for version in ("v2", "V1", "", "v1 "):
        _decrypt_fails(VAULT, _with_part(token, 0, version))


def test_token_moved_to_other_workspace_or_connection() -> None:
    token = VAULT.encrypt(SECRET.encode(), **ids())
    _decrypt_fails(VAULT, token, workspace_id="ws_2", connection_id=CONN)
    _decrypt_fails(VAULT, token, workspace_id=WS, connection_id="conn_2")
    _decrypt_fails(VAULT, token, workspace_id=CONN, connection_id=WS)


def test_aad_is_unambiguous() -> None:
    token = VAULT.encrypt(b"x", workspace_id="ab", connection_id="c")
    _decrypt_fails(VAULT, token, workspace_id="a", connection_id="bc")
    token = VAULT.encrypt(b"x", workspace_id="a\x00", connection_id="b")
    _decrypt_fails(VAULT, token, workspace_id="a", connection_id="\x00b")


def test_wrong_key_same_kid() -> None:
    token = VAULT.encrypt(SECRET.encode(), **ids())
    other = Vault([("k1", KEY2)])
    error = _decrypt_fails(other, token)
    assert "k1" in str(error)


def test_unknown_kid() -> None:
    token = Vault([("k9", KEY2)]).encrypt(SECRET.encode(), **ids())
    error = _decrypt_fails(VAULT, token)
    assert "k9" in str(error)
    assert "not configured" in str(error)


def test_an_unknown_kid_is_a_configuration_error_naming_the_variable_and_the_kid() -> None:
    """A token under a key the operator dropped is theirs to fix, not a bug."""
    token = Vault([("k9", KEY2)]).encrypt(SECRET.encode(), **ids())
    configured = Vault.from_env({"UM_MASTER_KEYS": SPEC1})
    assert configured is not None

    with pytest.raises(UnknownKeyId) as info:
        configured.decrypt(token, **ids())

    error = info.value
    # Still a DecryptionFailed (what the webhook outbox and the adapters catch), and now
    # also a ConfigurationError (what the CLI turns into exit 78).
    assert isinstance(error, DecryptionFailed)
    assert isinstance(error, ConfigurationError)
    assert isinstance(error, MasterKeyError)
    assert (error.key_id, error.setting) == ("k9", "UM_MASTER_KEYS")
    assert "'k9'" in error.message
    assert "keys from UM_MASTER_KEYS: k1" in error.message
    assert error.http_status == 500
    assert error.code == "INTERNAL_ERROR"
    assert_clean(str(error))
    assert_clean(repr(error))
    assert token.split(".")[3] not in str(error)


def test_an_unknown_kid_names_the_development_key_file_when_keys_come_from_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "dev.key"
    vault = Vault.load_or_create_key_file(path)
    token = Vault([("k9", KEY2)]).encrypt(b"x", **ids())
    with pytest.raises(UnknownKeyId, match=r"development key file .*dev\.key \(UM_MASTER_KEYS"):
        vault.decrypt(token, **ids())


@pytest.mark.parametrize(
    "token",
    [
        "",
        "v1",
        "v1.k1",
        "v1.k1.AAAA",
        "v1.k1.AAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAA.extra",
        "v1..AAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAA",
        "v1.k!.AAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAA",
        "v1.k1.AAAA.AAAAAAAAAAAAAAAAAAAAAA",  # short nonce
        "v1.k1.AAAAAAAAAAAAAAAA.AAAA",  # shorter than a tag
        "v1.k1.AAAAAAAAAAAAAAAA=.AAAAAAAAAAAAAAAAAAAAAA",  # padding
        "v1.k1.AAAAAAAAAAAAAAA+.AAAAAAAAAAAAAAAAAAAAAA",  # standard alphabet
        "v1.k1.AAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAB",  # non-canonical trailing bits
        "v1.k1.AAAAAAAAAAAAAAAA.A",  # impossible length
        "v1.k1. AAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAA",
        "v1.k1.AAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAA\n",
        SECRET,  # plaintext passed by mistake is never echoed
    ],
)
def test_malformed_tokens(token: str) -> None:
    _decrypt_fails(VAULT, token)
    with pytest.raises(DecryptionFailed):
        VAULT.needs_rotation(token)


def test_non_str_token() -> None:
    with pytest.raises(DecryptionFailed):
        VAULT.decrypt(b"v1.k1.x.y", **ids())  # type: ignore[arg-type]


@given(st.text())
def test_arbitrary_text_only_raises_decryption_failed(token: str) -> None:
    with pytest.raises(DecryptionFailed):
        VAULT.decrypt(token, **ids())


_B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


@given(
    version=st.sampled_from(["v1", "v0", "v2"]),
    kid=st.sampled_from(["k1", "k2", "", "k.1"]),
    nonce=st.text(alphabet=_B64URL + "=+/", max_size=24),
    sealed=st.text(alphabet=_B64URL + "=+/", max_size=64),
    workspace_id=st.text(max_size=5),
)
def test_near_valid_tokens_only_raise_decryption_failed(
    version: str, kid: str, nonce: str, sealed: str, workspace_id: str
) -> None:
    token = f"{version}.{kid}.{nonce}.{sealed}"
    with pytest.raises(DecryptionFailed):
        VAULT.decrypt(token, workspace_id=workspace_id, connection_id=CONN)


# -- rotation -------------------------------------------------------------------------------


def test_rotation() -> None:
    old_token = VAULT.encrypt(SECRET.encode(), **ids())
    assert not VAULT.needs_rotation(old_token)

    rotated_vault = Vault.from_spec(f"k2:{KEY2_B64},{SPEC1}")
    assert rotated_vault.active_kid == "k2"
    assert rotated_vault.kids == ("k2", "k1")
    assert rotated_vault.decrypt(old_token, **ids()) == SECRET.encode()
    assert rotated_vault.needs_rotation(old_token)

    new_token = rotated_vault.rotate(old_token, **ids())
    assert new_token.split(".")[1] == "k2"
    assert not rotated_vault.needs_rotation(new_token)
    assert rotated_vault.decrypt(new_token, **ids()) == SECRET.encode()

    # After dropping the old key, only rotated tokens still decrypt.
    only_new = Vault.from_spec(f"k2:{KEY2_B64}")
    assert only_new.decrypt(new_token, **ids()) == SECRET.encode()
    _decrypt_fails(only_new, old_token)


def test_rotate_always_reencrypts() -> None:
    token = VAULT.encrypt(b"x", **ids())
    again = VAULT.rotate(token, **ids())
    assert again != token
    assert VAULT.decrypt(again, **ids()) == b"x"


def test_rotate_keeps_binding() -> None:
    token = VAULT.encrypt(b"x", **ids())
    with pytest.raises(DecryptionFailed):
        VAULT.rotate(token, workspace_id="other", connection_id=CONN)


# -- configuration --------------------------------------------------------------------------


def test_from_env() -> None:
    vault = Vault.from_env({"UM_MASTER_KEYS": f" k2:{KEY2_B64} , {SPEC1}\n"})
    assert vault is not None
    assert vault.kids == ("k2", "k1")
    assert Vault.from_env({}) is None
    assert Vault.from_env({"UM_MASTER_KEYS": "  "}) is None


def test_from_env_defaults_to_os_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UM_MASTER_KEYS", SPEC1)
    vault = Vault.from_env()
    assert vault is not None
    assert vault.active_kid == "k1"
    monkeypatch.delenv("UM_MASTER_KEYS")
    assert Vault.from_env() is None


def test_standard_base64_keys_accepted() -> None:
    padded = base64.b64encode(KEY2).decode()
    assert "=" in padded
    vault = Vault.from_spec(f"k2:{padded}")
    token = Vault([("k2", KEY2)]).encrypt(b"x", **ids())
    assert vault.decrypt(token, **ids()) == b"x"


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("k1:not*base64", "not valid base64"),
        ("k1:AAAAA", "not valid base64"),
        (f"k1:{b64e(KEY1[:16])}", "32 bytes"),
        (f"k1:{b64e(KEY1 + b'x')}", "32 bytes"),
        (f"{SPEC1},k1:{KEY2_B64}", "duplicate key id 'k1'"),
        (f"{SPEC1},,k2:{KEY2_B64}", "entry 2 is empty"),
        (f"{SPEC1},", "entry 2 is empty"),
        (",", "entry 1 is empty"),
        (f"k 1:{KEY1_B64}", "invalid key id"),
        (f"k.1:{KEY1_B64}", "invalid key id"),
        (f"{'k' * 33}:{KEY1_B64}", "invalid key id"),
        (f":{KEY1_B64}", "invalid key id"),
        (f"{KEY1_B64}:k1", "invalid key id"),  # swapped order: the key is not echoed
        (KEY1_B64, "no ':'"),
        ("k1:", "has no key after ':'"),
        (f"{SPEC1},k2:{KEY1_B64}", "hold the same key"),
    ],
)
def test_spec_errors(spec: str, match: str) -> None:
    with pytest.raises(VaultError, match=match) as info:
        Vault.from_env({"UM_MASTER_KEYS": spec})
    assert not isinstance(info.value, DecryptionFailed)
    assert isinstance(info.value, MasterKeyError)
    assert info.value.setting == "UM_MASTER_KEYS"
    assert info.value.__cause__ is None
    assert "UM_MASTER_KEYS" in str(info.value)
    assert_clean(str(info.value))
    assert_clean(repr(info.value))
    assert b64e(KEY1[:16]) not in str(info.value)


# The malformed values, each a configuration error raised when the vault is
# built, naming UM_MASTER_KEYS and never echoing what was given.
MALFORMED = {
    "only commas": (",", "entry 1 is empty"),
    "a trailing comma": (f"{SPEC1},", "entry 2 is empty"),
    "kid and colon only": ("k1:", "has no key after ':'"),
    "not base64": ("k1:notbase64", "not valid base64"),
    "16 bytes": (f"k1:{b64e(KEY2[:16])}", "must decode to 32 bytes"),
    "duplicate kid": (f"{SPEC1},k1:{KEY2_B64}", "duplicate key id 'k1'"),
    "space inside the key": (f"k1:{KEY2_B64[:20]} {KEY2_B64[20:]}", "not valid base64"),
    "newline between entries": (f"{SPEC1}\nk2:{KEY2_B64}", "not valid base64"),
    "unicode kid": (f"kı:{KEY2_B64}", "invalid key id"),
    "full-width digit kid": (f"k１:{KEY2_B64}", "invalid key id"),
    "unicode in the key": (f"k1:{KEY2_B64[:-1]}é", "not valid base64"),
    "no colon": (KEY2_B64, "no ':'"),
}


@pytest.mark.parametrize(("spec", "match"), MALFORMED.values(), ids=MALFORMED)
def test_malformed_um_master_keys_is_a_configuration_error(spec: str, match: str) -> None:
    with pytest.raises(ConfigurationError, match=match) as info:
        Vault.from_env({"UM_MASTER_KEYS": spec})
    error = info.value
    assert isinstance(error, MasterKeyError)
    assert isinstance(error, VaultError)  # what callers caught before
    assert error.setting == "UM_MASTER_KEYS"
    assert error.message.startswith("UM_MASTER_KEYS: entry ")
    assert "\n" not in error.message
    for shown in (str(error), repr(error)):
        assert_clean(shown)
        for fragment in (KEY2_B64[:20], KEY2_B64[20:], b64e(KEY2[:16]), "notbase64", "kı", "k１"):
            assert fragment not in shown


@pytest.mark.parametrize("blank", ["", "   ", "\t\n"])
def test_blank_um_master_keys_means_unset(blank: str) -> None:
    # As a shell's `UM_MASTER_KEYS= cmd` means: the caller decides what no keys means (the
    # CLI's development key file, the library's refusal for a durable store).
    assert Vault.from_env({"UM_MASTER_KEYS": blank}) is None
    with pytest.raises(MasterKeyError, match="no master keys given"):
        Vault.from_spec(blank, source="UM_MASTER_KEYS")


def test_constructor_validation() -> None:
    with pytest.raises(VaultError, match="at least one"):
        Vault([])
    with pytest.raises(VaultError, match="32 bytes") as info:
        Vault([("k1", KEY1[:31])])
    assert_clean(str(info.value))
    with pytest.raises(VaultError, match=r"(?i)invalid key id"):
        Vault([("bad kid", KEY1)])
    with pytest.raises(VaultError, match="Duplicate"):
        Vault([("k1", KEY1), ("k1", KEY2)])


def test_generate() -> None:
    vault = Vault.generate("fresh")
    assert vault.kids == ("fresh",)
    assert vault.decrypt(vault.encrypt(b"x", **ids()), **ids()) == b"x"
    assert Vault.generate().active_kid == "k1"


def test_generate_key_spec() -> None:
    spec = generate_key_spec("op_2024-01")
    kid, _, key = spec.partition(":")
    assert kid == "op_2024-01"
    assert len(b64d(key)) == 32
    assert generate_key_spec() != generate_key_spec()
    assert Vault.from_spec(spec).active_kid == "op_2024-01"
    with pytest.raises(VaultError):
        generate_key_spec("no spaces")


# -- no leaks -------------------------------------------------------------------------------


def test_repr_and_str_show_kids_only() -> None:
    vault = Vault([("k2", KEY2), ("k1", KEY1)])
    assert repr(vault) == "Vault(active_kid='k2', kids=('k2', 'k1'))"
    assert str(vault) == repr(vault)
    assert_clean(repr(vault))
    assert_clean(str(vault))
    assert not hasattr(vault, "__dict__")
    assert all(name.startswith("_") for name in Vault.__slots__)


def test_vault_cannot_be_pickled_but_copies_are_itself() -> None:
    with pytest.raises(TypeError, match="pickled"):
        pickle.dumps(VAULT)
    assert copy.copy(VAULT) is VAULT
    assert copy.deepcopy({"v": VAULT})["v"] is VAULT


# -- development key file -------------------------------------------------------------------


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@posix_only
def test_key_file_created_0600_and_reused(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "keys" / "master.key"
    with caplog.at_level(logging.WARNING, logger="unified_messaging.vault"):
        first = Vault.load_or_create_key_file(path)
    assert _mode(path) == 0o600
    assert first.kids == ("dev",)
    assert [p.name for p in path.parent.iterdir()] == ["master.key"]  # no temp file left

    key_b64 = path.read_text().strip().partition(":")[2]
    assert len(b64d(key_b64)) == 32
    records = [r for r in caplog.records if r.name == "unified_messaging.vault"]
    assert len(records) == 1
    assert records[0].levelno == logging.WARNING
    assert str(path) in records[0].getMessage()
    assert "created" in records[0].getMessage()
    assert key_b64 not in caplog.text

    token = first.encrypt(SECRET.encode(), **ids())
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="unified_messaging.vault"):
        second = Vault.load_or_create_key_file(path)
    assert second.decrypt(token, **ids()) == SECRET.encode()
    assert "using" in caplog.text
    assert key_b64 not in caplog.text


@posix_only
def test_key_file_created_with_o_excl_and_mode_0600(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[int, Any]] = []
    real_open = os.open

    def spy(path: Any, flags: int, mode: int = 0o777, *args: Any, **kwargs: Any) -> int:
        calls.append((flags, mode))
        return real_open(path, flags, mode, *args, **kwargs)

    monkeypatch.setattr(os, "open", spy)
    Vault.load_or_create_key_file(tmp_path / "k")
    creating = [(flags, mode) for flags, mode in calls if flags & os.O_CREAT]
    assert creating
    for flags, mode in creating:
        assert flags & os.O_EXCL
        assert mode == 0o600


@posix_only
def test_key_file_lost_race_reuses_winner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "k"
    winner_spec = f"{SPEC1}\n"
    real_link = os.link

    def racing_link(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
        fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, winner_spec.encode())
        os.close(fd)
        real_link(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "link", racing_link)
    vault = Vault.load_or_create_key_file(path)
    assert vault.kids == ("k1",)
    assert path.read_text() == winner_spec
    assert [p.name for p in tmp_path.iterdir()] == ["k"]


@posix_only
@pytest.mark.parametrize("mode", [0o640, 0o604, 0o620, 0o644])
def test_key_file_readable_by_others_refused(tmp_path: Path, mode: int) -> None:
    path = tmp_path / "k"
    path.write_text(SPEC1)
    path.chmod(mode)
    with pytest.raises(VaultError, match="chmod 600") as info:
        Vault.load_or_create_key_file(path)
    assert_clean(str(info.value))
    with pytest.raises(VaultError, match="group or others"):
        Vault.from_key_file(path)


@posix_only
def test_key_file_with_rotation_spec(tmp_path: Path) -> None:
    path = tmp_path / "k"
    path.write_text(f"k2:{KEY2_B64},{SPEC1}\n")
    path.chmod(0o600)
    assert Vault.from_key_file(path).kids == ("k2", "k1")


@posix_only
def test_key_file_bad_content(tmp_path: Path) -> None:
    path = tmp_path / "k"
    for content in (b"", b"\xff\xfe", f"k1:{b64e(KEY1[:16])}".encode()):
        path.write_bytes(content)
        path.chmod(0o600)
        with pytest.raises(VaultError, match=r"(?i)key file") as info:
            Vault.from_key_file(path)
        assert_clean(str(info.value))


def test_key_file_missing_or_directory(tmp_path: Path) -> None:
    with pytest.raises(VaultError, match="Cannot open"):
        Vault.from_key_file(tmp_path / "missing")
    with pytest.raises(VaultError):
        Vault.from_key_file(tmp_path)


def test_a_keyless_vault_refuses_to_seal_or_open_and_shows_no_key() -> None:
    from unified_messaging import MasterKeyError
    from unified_messaging.vault._core import KeylessVault

    vault = KeylessVault("SqlStore")
    sealed = Vault.generate().encrypt(b"x", workspace_id="ws_1", connection_id="con_1")

    for attempt in (
        lambda: vault.encrypt_json({"password": "p"}, workspace_id="ws_1", connection_id="c"),
        lambda: vault.decrypt(sealed, workspace_id="ws_1", connection_id="con_1"),
        lambda: vault.rotate(sealed, workspace_id="ws_1", connection_id="con_1"),
        lambda: vault.needs_rotation(sealed),
    ):
        with pytest.raises(MasterKeyError, match="UM_MASTER_KEYS is not set, and SqlStore"):
            attempt()
    assert repr(vault) == "KeylessVault()"
