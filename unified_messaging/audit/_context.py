"""Who is acting (D32): the actor and client address that an audit row records.

The edges say who acts (the dashboard its signed-in user, the command line ``cli``); the
admin methods read it here when they write their audit row. No admin method takes an actor
argument, so a new edge cannot forget to pass one: what it does not set reads as ``library``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Actor:
    """Who made a change: ``library``, ``cli`` or ``dashboard:<e-mail>``, and from where."""

    name: str
    client_address: str | None = None


LIBRARY = Actor("library")
CLI = Actor("cli")

_current: ContextVar[Actor] = ContextVar("um_audit_actor", default=LIBRARY)


def current_actor() -> Actor:
    """The actor of the change being made now (``library`` unless an edge said otherwise)."""
    return _current.get()


@contextlib.contextmanager
def acting_as(actor: Actor) -> Iterator[Actor]:
    """Makes ``actor`` the one that changes made inside the block are recorded under."""
    token = _current.set(actor)
    try:
        yield actor
    finally:
        _current.reset(token)
