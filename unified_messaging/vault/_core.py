"""The credentials vault (D21): provider credentials encrypted at rest with AES-256-GCM.

A stored credential is one ASCII token::

    v1.<key id>.<nonce>.<ciphertext>

``nonce`` (96 random bits, fresh per encryption) and ``ciphertext`` (with the 16-byte GCM tag
appended) are unpadded base64url. The ciphertext is bound, as associated data, to the format
version, the key id, the workspace id and the connection id, so a token copied into another
workspace or connection row, or relabelled with another key id, fails to decrypt.

Master keys come from ``UM_MASTER_KEYS`` = ``kid:base64key,kid2:base64key2,…``. The first key
is active and encrypts; every listed key decrypts. To rotate, put a new key first, keep the old
ones after it, re-encrypt with :meth:`Vault.rotate` every token for which
:meth:`Vault.needs_rotation` is true, then drop the old key.

Without ``UM_MASTER_KEYS`` a development server may use :meth:`Vault.load_or_create_key_file`,
which keeps a key in a file that only its owner can read, and warns that it does.

A wrong configuration is the operator's to fix, and says so: a malformed value raises
:class:`~unified_messaging.MasterKeyError` when the vault is built, and a token sealed under
a key id the vault does not hold raises :class:`~unified_messaging.UnknownKeyId` (also a
``DecryptionFailed``) when it is opened. Both name ``UM_MASTER_KEYS`` and the key id.

No message, ``repr`` or log line ever contains key material or plaintext.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Final, NoReturn

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from .._errors import DecryptionFailed, MasterKeyError, UnknownKeyId, VaultError

__all__ = ["KeylessVault", "Vault", "default_vault", "generate_key_spec"]

ENV_VAR: Final = "UM_MASTER_KEYS"
KEY_BYTES: Final = 32
NONCE_BYTES: Final = 12
_TAG_BYTES: Final = 16
_VERSION: Final = "v1"
# Domain separation: AAD of this format can never equal AAD some other use of a key builds.
_AAD_DOMAIN: Final = b"unified-messaging/vault\x00"

_KID_RE: Final = re.compile(r"[A-Za-z0-9_-]{1,32}")
_B64URL_RE: Final = re.compile(r"[A-Za-z0-9_-]+")
# Operators paste keys from `openssl rand -base64 32` as often as from generate_key_spec, so
# master keys accept both alphabets, padded or not. Tokens are always unpadded base64url.
_KEY_B64_RE: Final = re.compile(r"[A-Za-z0-9+/_-]+={0,2}")
_KID_RULE: Final = "key ids must match [A-Za-z0-9_-]{1,32}"

_log = logging.getLogger("unified_messaging.vault")


def _b64e(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _b64d_token_part(text: str) -> bytes | None:
    """Strict unpadded base64url, or None. Only the canonical spelling is accepted, so a
    token has exactly one valid text form (no aliasing through unused trailing bits)."""
    if not _B64URL_RE.fullmatch(text):
        return None
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        return None
    return raw if _b64e(raw) == text else None


def _decode_key(text: str) -> bytes | None:
    if not _KEY_B64_RE.fullmatch(text):
        return None
    body = text.rstrip("=").replace("-", "+").replace("_", "/")
    try:
        return base64.b64decode(body + "=" * (-len(body) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None


def _length_prefixed(part: str) -> bytes:
    # surrogatepass keeps the encoding total and injective over every Python str, so no id
    # can make AAD construction itself raise.
    raw = part.encode("utf-8", "surrogatepass")
    return len(raw).to_bytes(4, "big") + raw


def _aad(kid: str, workspace_id: str, connection_id: str) -> bytes:
    # Length prefixes make the binding unambiguous: ("ab", "c") and ("a", "bc") differ.
    return (
        _AAD_DOMAIN
        + _length_prefixed(_VERSION)
        + _length_prefixed(kid)
        + _length_prefixed(workspace_id)
        + _length_prefixed(connection_id)
    )


def _check_ids(workspace_id: str, connection_id: str) -> None:
    if not isinstance(workspace_id, str) or not workspace_id:
        raise VaultError("workspace_id must be a non-empty string.")
    if not isinstance(connection_id, str) or not connection_id:
        raise VaultError("connection_id must be a non-empty string.")


def _parse_spec(spec: str, source: str) -> list[tuple[str, bytes]]:
    """``kid:base64key,…`` into (kid, key) pairs, in order.

    Errors name the entry by position and, once it is known to be valid, by kid. They never
    echo an invalid kid or a key: a kid that fails validation may well be a key pasted in the
    wrong place.
    """

    def bad(message: str) -> NoReturn:
        raise MasterKeyError(message, setting=source)

    if not isinstance(spec, str) or not spec.strip():
        bad(f"{source}: no master keys given (expected 'kid:base64key,…').")
    keys: list[tuple[str, bytes]] = []
    kid_of: dict[bytes, str] = {}
    for index, entry in enumerate(spec.split(","), start=1):
        entry = entry.strip()
        where = f"{source}: entry {index}"
        if not entry:
            bad(f"{where} is empty (expected 'kid:base64key').")
        kid, sep, encoded = entry.partition(":")
        kid, encoded = kid.strip(), encoded.strip()
        if not sep:
            bad(f"{where} has no ':' (expected 'kid:base64key').")
        if not _KID_RE.fullmatch(kid):
            bad(f"{where}: invalid key id; {_KID_RULE}.")
        if not encoded:
            bad(f"{where} (kid {kid!r}) has no key after ':'.")
        key = _decode_key(encoded)
        if key is None:
            bad(f"{where} (kid {kid!r}): the key is not valid base64.")
        if len(key) != KEY_BYTES:
            bad(
                f"{where} (kid {kid!r}): the key must decode to {KEY_BYTES} bytes "
                f"(AES-256), got {len(key)}."
            )
        if any(kid == known for known, _ in keys):
            bad(f"{where}: duplicate key id {kid!r}.")
        if key in kid_of:
            bad(f"{where}: key ids {kid_of[key]!r} and {kid!r} hold the same key.")
        kid_of[key] = kid
        keys.append((kid, key))
    return keys


def generate_key_spec(kid: str = "k1") -> str:
    """A fresh ``kid:base64key`` entry (32 random bytes) for ``UM_MASTER_KEYS``.

    To rotate, prepend it to the existing value: ``new,old``.
    """
    if not isinstance(kid, str) or not _KID_RE.fullmatch(kid):
        raise VaultError(f"Invalid key id; {_KID_RULE}.")
    return f"{kid}:{_b64e(AESGCM.generate_key(bit_length=256))}"


def default_vault(*, durable: bool, store_name: str = "the store") -> Vault:
    """The vault of a ``Messenger`` given none: ``UM_MASTER_KEYS``, else a fresh key that
    dies with the process, which only a store that dies with it (``durable=False``) may use.

    A durable store without keys is refused (:class:`~unified_messaging.MasterKeyError`):
    everything sealed under a throwaway key would be unreadable after a restart, a failure
    that would only show, silently, in the next process.
    """
    configured = Vault.from_env()
    if configured is not None:
        return configured
    if not durable:
        return Vault.generate("ephemeral")
    raise _keys_missing(store_name)


def _keys_missing(store_name: str) -> MasterKeyError:
    return MasterKeyError(
        f"{ENV_VAR} is not set, and {store_name} keeps credentials and webhook secrets "
        "beyond this process: sealed under a throwaway key they would be unreadable after a "
        f"restart. Set {ENV_VAR} (make a key with 'unified-messaging vault generate-key'), "
        "or pass vault= (Vault.load_or_create_key_file(path) for development)."
    )


class Vault:
    """Encrypts and decrypts credential blobs under a set of master keys; the first is active.

    Immutable. Only AEAD objects are kept, in private attributes; the raw key bytes are not
    retained, and ``repr`` shows key ids only.
    """

    __slots__ = ("_active_kid", "_ciphers", "_mac_keys", "_source")

    _active_kid: str
    _ciphers: dict[str, AESGCM]
    #: Per key id, a key for keyed digests (D34's codes), derived with HKDF: the master key
    #: itself never keys an HMAC, and a digest never reveals anything about the AES key.
    _mac_keys: dict[str, bytes]
    _source: str

    def __init__(self, keys: Iterable[tuple[str, bytes]], *, source: str = "Vault(keys)") -> None:
        """``keys``: (kid, 32-byte key) pairs; the first pair is the active key. ``source``
        says where they came from, for errors (``UM_MASTER_KEYS``, a key file)."""
        ciphers: dict[str, AESGCM] = {}
        mac_keys: dict[str, bytes] = {}
        seen: dict[bytes, str] = {}
        for kid, key in keys:
            if not isinstance(kid, str) or not _KID_RE.fullmatch(kid):
                raise VaultError(f"Invalid key id; {_KID_RULE}.")
            if kid in ciphers:
                raise VaultError(f"Duplicate key id {kid!r}.")
            if not isinstance(key, bytes) or len(key) != KEY_BYTES:
                raise VaultError(f"Key {kid!r} must be exactly {KEY_BYTES} bytes (AES-256).")
            # The same key under two ids is always a mistake, typically a rotation that
            # added a new id but pasted the old key: it would rotate nothing.
            if key in seen:
                raise VaultError(f"Key ids {seen[key]!r} and {kid!r} hold the same key.")
            seen[key] = kid
            ciphers[kid] = AESGCM(key)
            mac_keys[kid] = _derive_mac_key(key)
        if not ciphers:
            raise VaultError("A vault needs at least one master key.")
        self._ciphers = ciphers
        self._mac_keys = mac_keys
        self._active_kid = next(iter(ciphers))
        self._source = source

    # -- construction ---------------------------------------------------------------------

    @classmethod
    def from_spec(cls, spec: str, *, source: str = "master key spec") -> Vault:
        """Parse ``kid:base64key,kid2:base64key2,…`` (the ``UM_MASTER_KEYS`` format);
        :class:`~unified_messaging.MasterKeyError` naming ``source`` if it is malformed."""
        return cls(_parse_spec(spec, source), source=source)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Vault | None:
        """The vault configured by ``UM_MASTER_KEYS``, or None when it is unset or blank."""
        env = os.environ if environ is None else environ
        spec = env.get(ENV_VAR, "")
        if not spec.strip():
            return None
        return cls.from_spec(spec, source=ENV_VAR)

    @classmethod
    def generate(cls, kid: str = "k1") -> Vault:
        """A vault with one fresh random key (tests, throwaway setups)."""
        return cls.from_spec(generate_key_spec(kid), source="a key generated by this process")

    @classmethod
    def from_key_file(cls, path: str | os.PathLike[str], *, source: str | None = None) -> Vault:
        """Load a key file (``UM_MASTER_KEYS`` format). Refuses a file that anyone but its
        owner may read or write, as ssh does for private keys."""
        file = Path(path)
        setting = f"key file {file}"

        def bad(message: str) -> NoReturn:
            raise MasterKeyError(message, setting=setting)

        try:
            fd = os.open(file, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError as exc:
            raise MasterKeyError(
                f"Cannot open key file {file}: {exc.strerror}.", setting=setting
            ) from None
        try:
            # fstat the descriptor we read from, not the path, so the checked file is the read one.
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                bad(f"Key file {file} is not a regular file.")
            if os.name == "posix" and st.st_mode & 0o077:
                bad(
                    f"Key file {file} is accessible by group or others "
                    f"(mode {stat.S_IMODE(st.st_mode):04o}); run 'chmod 600 {file}'."
                )
            with os.fdopen(fd, "rb") as handle:
                fd = -1  # now owned by the file object
                data = handle.read()
        finally:
            if fd >= 0:
                os.close(fd)
        try:
            spec = data.decode("ascii")
        except UnicodeDecodeError:
            raise MasterKeyError(
                f"Key file {file} is not an ASCII key spec.", setting=setting
            ) from None
        return cls(_parse_spec(spec, setting), source=source or setting)

    @classmethod
    def load_or_create_key_file(cls, path: str | os.PathLike[str], *, kid: str = "dev") -> Vault:
        """Development fallback when no ``UM_MASTER_KEYS`` is set: reuse the key in ``path``,
        or create it with a fresh key, readable by its owner only. Logs a warning either way,
        since a key next to the data it protects is not production key management."""
        file = Path(path)
        created = not file.exists() and cls._create_key_file(file, kid)
        _log.warning(
            "No %s configured: %s the development master key file at %s. "
            "Do not use it in production; set %s instead.",
            ENV_VAR,
            "created" if created else "using",
            file,
            ENV_VAR,
        )
        return cls.from_key_file(file, source=f"the development key file {file} ({ENV_VAR} unset)")

    @staticmethod
    def _create_key_file(file: Path, kid: str) -> bool:
        """Create ``file`` holding a fresh key spec; False when another process won the race.

        The key is written to a private temporary file and then hard-linked into place, so
        concurrent dev workers starting together see either no file or a complete one, and
        all end up with the same key. O_EXCL with mode 0o600 means no file here is ever
        readable by others, not even between creation and a chmod.
        """
        content = (generate_key_spec(kid) + "\n").encode("ascii")
        try:
            file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise MasterKeyError(
                f"Cannot create key file directory {file.parent}: {exc.strerror}; "
                f"set {ENV_VAR} instead.",
                setting=f"key file {file}",
            ) from None
        tmp = file.with_name(f".{file.name}.{secrets.token_hex(8)}.tmp")
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(tmp, flags, 0o600)
            try:
                view = memoryview(content)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            finally:
                os.close(fd)
            try:
                os.link(tmp, file)
            except FileExistsError:
                return False
        except OSError as exc:
            raise MasterKeyError(
                f"Cannot create key file {file}: {exc.strerror}; set {ENV_VAR} instead.",
                setting=f"key file {file}",
            ) from None
        finally:
            tmp.unlink(missing_ok=True)
        return True

    # -- introspection --------------------------------------------------------------------

    @property
    def active_kid(self) -> str:
        """The id of the key that encrypts."""
        return self._active_kid

    @property
    def kids(self) -> tuple[str, ...]:
        """Every key id that decrypts, the active one first."""
        return tuple(self._ciphers)

    def __repr__(self) -> str:
        return f"Vault(active_kid={self._active_kid!r}, kids={self.kids!r})"

    def __reduce__(self) -> NoReturn:
        # Pickling would write master keys into caches, queues or crash dumps.
        raise TypeError("Vault objects hold master keys and cannot be pickled.")

    def __copy__(self) -> Vault:
        return self  # immutable

    def __deepcopy__(self, memo: dict[int, object]) -> Vault:
        return self

    # -- encryption -----------------------------------------------------------------------

    def encrypt(self, plaintext: bytes, *, workspace_id: str, connection_id: str) -> str:
        """Encrypt under the active key, bound to ``workspace_id`` and ``connection_id``."""
        if not isinstance(plaintext, bytes | bytearray | memoryview):
            raise TypeError(f"plaintext must be bytes, not {type(plaintext).__name__}.")
        _check_ids(workspace_id, connection_id)
        kid = self._active_kid
        nonce = os.urandom(NONCE_BYTES)
        sealed = self._ciphers[kid].encrypt(
            nonce, bytes(plaintext), _aad(kid, workspace_id, connection_id)
        )
        return f"{_VERSION}.{kid}.{_b64e(nonce)}.{_b64e(sealed)}"

    def decrypt(self, token: str, *, workspace_id: str, connection_id: str) -> bytes:
        """Decrypt a token made by any known key for this workspace and connection.

        Raises DecryptionFailed for anything else: malformed or tampered tokens, unknown key
        ids, wrong keys, and tokens bound to another workspace or connection.
        """
        kid, nonce, sealed = self._parse(token)
        cipher = self._ciphers.get(kid)
        if cipher is None:
            # An operator's problem (a key dropped before `vault rotate` ran, or another
            # deployment's data), so it says which key is missing and where keys come from.
            raise UnknownKeyId(
                f"Sealed data uses master key id {kid!r}, which is not configured (keys from "
                f"{self._source}: {', '.join(self._ciphers)}). Add key {kid!r} back to "
                f"{ENV_VAR} after the active key, and run 'vault rotate' before dropping it.",
                key_id=kid,
            )
        if not isinstance(workspace_id, str) or not isinstance(connection_id, str):
            raise DecryptionFailed("workspace_id and connection_id must be strings.")
        try:
            return cipher.decrypt(nonce, sealed, _aad(kid, workspace_id, connection_id))
        except InvalidTag:
            # One message for every cause: telling them apart would need the key anyway.
            raise DecryptionFailed(
                f"Stored credentials failed authentication under key id {kid!r}: wrong key, "
                "tampered token, or a token bound to another workspace or connection."
            ) from None

    @staticmethod
    def _parse(token: str) -> tuple[str, bytes, bytes]:
        """Split and decode a token's structure. Never echoes the token: it holds ciphertext,
        and a caller may pass plaintext here by mistake."""

        def malformed(why: str) -> NoReturn:
            raise DecryptionFailed(f"Malformed credential token: {why}.")

        if not isinstance(token, str):
            malformed("not a string")
        if not token:
            malformed("empty")
        parts = token.split(".")
        if len(parts) != 4:
            malformed(f"expected 4 dot-separated parts, got {len(parts)}")
        version, kid, nonce_text, sealed_text = parts
        if version != _VERSION:
            # A version we do not know could be anything: do not echo it either.
            malformed(f"unsupported format version (expected {_VERSION!r})")
        if not _KID_RE.fullmatch(kid):
            malformed(f"invalid key id; {_KID_RULE}")
        nonce = _b64d_token_part(nonce_text)
        if nonce is None or len(nonce) != NONCE_BYTES:
            malformed(f"the nonce must be {NONCE_BYTES} bytes of unpadded base64url")
        sealed = _b64d_token_part(sealed_text)
        if sealed is None or len(sealed) < _TAG_BYTES:
            malformed("the ciphertext must be unpadded base64url including a 16-byte tag")
        return kid, nonce, sealed

    def encrypt_json(
        self, mapping: Mapping[str, str], *, workspace_id: str, connection_id: str
    ) -> str:
        """Encrypt a credential dict (str → str), e.g. ``{"username": …, "password": …}``."""
        if not isinstance(mapping, Mapping):
            raise TypeError(f"credentials must be a mapping, not {type(mapping).__name__}.")
        for name, value in mapping.items():
            # Names are field names, safe to show; values are secrets and never are.
            if not isinstance(name, str):
                raise TypeError(f"credential names must be str, not {type(name).__name__}.")
            if not isinstance(value, str):
                raise TypeError(f"credential {name!r} must be a str, not {type(value).__name__}.")
        # ensure_ascii keeps lone surrogates round-trippable; sort_keys makes output stable.
        payload = json.dumps(
            dict(mapping), ensure_ascii=True, sort_keys=True, separators=(",", ":")
        )
        return self.encrypt(
            payload.encode("ascii"), workspace_id=workspace_id, connection_id=connection_id
        )

    def decrypt_json(self, token: str, *, workspace_id: str, connection_id: str) -> dict[str, str]:
        """Decrypt a token made by :meth:`encrypt_json` back into its dict."""
        raw = self.decrypt(token, workspace_id=workspace_id, connection_id=connection_id)
        try:
            value = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise DecryptionFailed("Decrypted credentials are not valid JSON.") from None
        if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()
        ):
            raise DecryptionFailed("Decrypted credentials are not a JSON object of strings.")
        return value

    # -- rotation -------------------------------------------------------------------------

    def needs_rotation(self, token: str) -> bool:
        """True when ``token`` is not under the active key. A header check only: it does not
        authenticate the token (rotate does). Raises DecryptionFailed if it is malformed."""
        kid, _, _ = self._parse(token)
        return kid != self._active_kid

    def rotate(self, token: str, *, workspace_id: str, connection_id: str) -> str:
        """Decrypt with whichever key made ``token`` and re-encrypt under the active key.

        Always re-encrypts (fresh nonce), even when the token already uses the active key;
        use :meth:`needs_rotation` to skip those.
        """
        plaintext = self.decrypt(token, workspace_id=workspace_id, connection_id=connection_id)
        return self.encrypt(plaintext, workspace_id=workspace_id, connection_id=connection_id)

    # -- keyed digests --------------------------------------------------------------------

    def keyed_digest(self, message: bytes, *, purpose: str) -> str:
        """``<key id>.<base64url HMAC-SHA256>`` of ``message`` under the active key's MAC key,
        bound to ``purpose``: a one-way record of a secret (D34's codes) that only a holder
        of the master keys can test a guess against."""
        kid = self._active_kid
        return f"{kid}.{_b64e(_mac(self._mac_keys[kid], purpose, message))}"

    def digest_matches(self, message: bytes, digest: str, *, purpose: str) -> bool:
        """Is ``digest`` (from :meth:`keyed_digest`, under any key id still held) the digest of
        ``message``? Compared in constant time; an unknown key id or a malformed digest is
        ``False``."""
        kid, _, encoded = digest.partition(".")
        key = self._mac_keys.get(kid)
        expected = _b64d_token_part(encoded)
        if key is None or expected is None:
            return False
        return hmac.compare_digest(_mac(key, purpose, message), expected)


def _derive_mac_key(key: bytes) -> bytes:
    return HKDF(
        algorithm=hashes.SHA256(), length=32, salt=None, info=b"unified-messaging/mac/v1"
    ).derive(key)


def _mac(key: bytes, purpose: str, message: bytes) -> bytes:
    # The purpose is length-prefixed, so no (purpose, message) pair can pose as another.
    return hmac.new(key, _length_prefixed(purpose) + message, hashlib.sha256).digest()


class KeylessVault(Vault):
    """A vault with no master key, for a host whose process may never need one (a Django
    project's ``manage.py`` commands, sends through test keys): sealing or opening a secret
    raises :class:`~unified_messaging.MasterKeyError`, as :func:`default_vault` does for a
    durable store, and nothing else does. Nothing is ever sealed under a throwaway key."""

    __slots__ = ("_store_name",)

    def __init__(self, store_name: str = "the store") -> None:
        # The parent wants a key: a random one that nothing below ever uses.
        super().__init__([("none", AESGCM.generate_key(bit_length=256))], source="no keys")
        self._store_name = store_name

    def __repr__(self) -> str:
        return "KeylessVault()"

    def encrypt(self, plaintext: bytes, *, workspace_id: str, connection_id: str) -> str:
        raise _keys_missing(self._store_name)

    def decrypt(self, token: str, *, workspace_id: str, connection_id: str) -> bytes:
        raise _keys_missing(self._store_name)

    def needs_rotation(self, token: str) -> bool:
        raise _keys_missing(self._store_name)

    def keyed_digest(self, message: bytes, *, purpose: str) -> str:
        raise _keys_missing(self._store_name)

    def digest_matches(self, message: bytes, digest: str, *, purpose: str) -> bool:
        raise _keys_missing(self._store_name)
