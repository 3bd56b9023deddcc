"""One-time notices: post/redirect/get for every form of the dashboard (D31).

A form post that changed something answers ``303`` to a page, never a page of its own, so a
refresh or the back button repeats a harmless GET and never the change. What the post had
to say ("Send rate saved.", or a new key's secret, shown once) is left here as a notice for
the session, and the next full page it loads takes it: read and deleted in one step, so it
is shown exactly once, in whichever process serves that page. A refused post (bad input)
changed nothing; it answers its form again with the error beside the field.

A notice is sealed (AES-256-GCM) under a key derived from the session's cookie value, which
is never stored (the store keeps its SHA-256): a copy of the database opens no notice, and a
secret in one is no more readable at rest than the hash the key list keeps. It never goes
into a URL or a log line. One left unread is deleted with its session, or shown no later
than :data:`LIFETIME` after it was left.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import secrets
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from typing import Final, Literal

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from .._clock import Clock
from .._errors import ResourceNotFound
from .._ids import new_id
from .._messenger import Messenger
from ._auth import SignedIn

__all__ = ["LIFETIME", "Notice", "Notices"]

#: A notice not shown within this time is dropped unread (a tab closed before its redirect).
LIFETIME: Final = timedelta(minutes=10)
_DOMAIN: Final = b"um-dashboard-notice-v1"
_NONCE_BYTES: Final = 12

Tone = Literal["notice", "error"]


@dataclass(frozen=True, slots=True)
class Notice:
    """What a page shows once, above its content.

    ``secret``: a value shown this once with a copy button (``element_id`` names its element,
    ``copy_text`` its button). ``link``: a dashboard path and the link's text.
    """

    text: str
    title: str = ""
    tone: Tone = "notice"
    secret: str | None = field(default=None, repr=False)
    element_id: str = "secret"
    copy_text: str = "Copy"
    link: tuple[str, str] | None = None


class Notices:
    """The session's notices in the store."""

    def __init__(self, messenger: Messenger) -> None:
        self._store = messenger.store
        self._clock: Clock = messenger.clock

    async def leave(self, signed_in: SignedIn, notice: Notice) -> None:
        plain = json.dumps(asdict(notice), ensure_ascii=True).encode()
        sealed = _seal(signed_in, plain)
        session_hash = signed_in.session.id_hash
        # Signed out meanwhile (the session is gone): nobody is left to show it to.
        with contextlib.suppress(ResourceNotFound):
            await self._store.add_notice(new_id("ntc"), session_hash, self._clock.now(), sealed)

    async def take(self, signed_in: SignedIn) -> tuple[Notice, ...]:
        """The session's notices, oldest first; none is ever given out twice."""
        oldest = self._clock.now() - LIFETIME
        found = await self._store.take_notices(signed_in.session.id_hash)
        shown = [_open(signed_in, sealed) for at, sealed in found if at >= oldest]
        return tuple(notice for notice in shown if notice is not None)


def _key(signed_in: SignedIn) -> bytes:
    return hmac.new(signed_in.session_id.encode(), _DOMAIN, hashlib.sha256).digest()


def _seal(signed_in: SignedIn, plain: bytes) -> str:
    nonce = secrets.token_bytes(_NONCE_BYTES)
    aad = signed_in.session.id_hash.encode()
    sealed = AESGCM(_key(signed_in)).encrypt(nonce, plain, aad)
    return base64.urlsafe_b64encode(nonce + sealed).decode()


def _open(signed_in: SignedIn, token: str) -> Notice | None:
    """The notice, or ``None`` for one that does not open (it cannot be shown; it is gone)."""
    try:
        raw = base64.urlsafe_b64decode(token.encode())
        aad = signed_in.session.id_hash.encode()
        plain = AESGCM(_key(signed_in)).decrypt(raw[:_NONCE_BYTES], raw[_NONCE_BYTES:], aad)
        data = json.loads(plain)
        link = data.pop("link", None)
        return Notice(**data, link=None if link is None else (str(link[0]), str(link[1])))
    except (InvalidTag, ValueError, TypeError):
        return None
