"""``SyncMessenger`` is the blocking twin of ``Messenger``: every public method of the async
façade (coroutine or not) has a twin of the same name, parameters and defaults, returning what
the coroutine returns. The few deliberate exceptions are listed here, each with its reason;
a new ``Messenger`` method without a twin fails this test.
"""

from __future__ import annotations

import inspect
import threading
import time
import typing
from collections.abc import Callable
from typing import Any

import pytest

from unified_messaging import (
    InvalidCredentials,
    ManualClock,
    Messenger,
    SyncMessenger,
    Workspace,
)
from unified_messaging.providers.base import InboundCallback
from unified_messaging.testing import build_testbed
from unified_messaging.workspaces._service import Workspaces

#: Public ``Messenger`` members that have no twin of that name, and why.
NO_TWIN: dict[str, str] = {
    "open": "SyncMessenger() opens its messenger when it is built.",
    "aclose": "close() (or leaving the with block) closes the messenger and stops the loop.",
    "worker": "It returns the async Worker, whose methods must run on the messenger's loop; "
    "a sync host runs one with run_worker.",
    "store": "The async Store: its methods must be awaited on the messenger's loop "
    "(reach it as sync.messenger.store from async code).",
}
#: Twins whose signature differs on purpose, and why.
DIFFERENT: dict[str, str] = {
    "run_worker": "It blocks the calling thread, and its stop is a threading.Event: an "
    "asyncio.Event must not be set from another thread.",
}


def public(cls: type) -> list[str]:
    return sorted(name for name in dir(cls) if not name.startswith("_"))


TWINNED = [name for name in public(Messenger) if name not in NO_TWIN and name not in DIFFERENT]


def test_every_public_messenger_member_has_a_sync_twin() -> None:
    missing = [name for name in public(Messenger) if name not in NO_TWIN]
    missing = [name for name in missing if not hasattr(SyncMessenger, name)]

    assert missing == [], "add these to SyncMessenger, or to NO_TWIN with a reason"
    # The lists stay honest: nothing listed that has a twin after all or no longer exists.
    assert [name for name in NO_TWIN if hasattr(SyncMessenger, name)] == []
    assert [name for name in {**NO_TWIN, **DIFFERENT} if name not in public(Messenger)] == []


def _hints(function: Callable[..., Any]) -> dict[str, Any]:
    """The evaluated annotations; as written where one names a type imported only for
    type checkers (both sides of a comparison then come from the same source text)."""
    try:
        return typing.get_type_hints(function)
    except NameError:
        return dict(inspect.unwrap(function).__annotations__)


def _parameters(function: Callable[..., Any]) -> list[tuple[str, Any, Any, Any]]:
    hints = _hints(function)
    return [
        (p.name, p.kind, p.default, hints.get(p.name))
        for p in inspect.signature(function).parameters.values()
        if p.name != "self"
    ]


@pytest.mark.parametrize("name", TWINNED)
def test_a_twin_has_the_same_signature_and_returns_the_awaited_type(name: str) -> None:
    original = inspect.getattr_static(Messenger, name)
    twin = inspect.getattr_static(SyncMessenger, name)
    if isinstance(original, property):
        assert isinstance(twin, property)
        assert original.fget is not None and twin.fget is not None
        returns = typing.get_type_hints(original.fget)["return"]
        assert typing.get_type_hints(twin.fget)["return"] == returns
        return
    method = getattr(Messenger, name)

    assert callable(twin)
    assert not inspect.iscoroutinefunction(twin), "a twin blocks: it returns, never awaits"
    # A twin made from the method must be made from this one, not a neighbour's.
    assert getattr(twin, "__wrapped__", method) is method
    assert _parameters(twin) == _parameters(method)
    # An ``async def f() -> X``'s annotation is already the awaited type.
    assert _hints(twin)["return"] == _hints(method)["return"]


def test_the_sync_worker_takes_a_threading_event() -> None:
    assert list(inspect.signature(SyncMessenger.run_worker).parameters) == [
        "self",
        "stop",
        "options",
    ]
    assert typing.get_type_hints(SyncMessenger.run_worker)["stop"] == threading.Event | None


# --------------------------------------------------------------------------- they work


def test_the_new_twins_run_the_messengers_methods_from_a_plain_thread() -> None:
    bed = build_testbed()
    with SyncMessenger(bed.messenger) as sync:
        workspace_id = bed.workspace.id

        assert sync.allowlist.add(workspace_id, "10.0.0.0/8") == "10.0.0.0/8"
        assert sync.allowlist.list(workspace_id) == ["10.0.0.0/8"]
        sync.allowlist.remove(workspace_id, "10.0.0.0/8")
        assert sync.allowlist.list(workspace_id) == []

        assert sync.workspaces.set_retry_unavailable(workspace_id, True).retry_unavailable is True

        created = sync.webhooks.create(workspace_id, "https://hooks.example.com/um")
        endpoint = created.endpoint
        assert [e.id for e in sync.webhooks.list(workspace_id)] == [endpoint.id]
        assert sync.webhooks.get(endpoint.id).url == endpoint.url
        assert sync.webhooks.rotate_secret(endpoint.id).secret != created.secret
        assert sync.webhooks.enable(endpoint.id).id == endpoint.id
        assert sync.webhooks.list_deliveries(endpoint.id) == []
        sync.webhooks.remove(endpoint.id)
        assert sync.webhooks.list(workspace_id) == []

        principal, _ = sync.access.authorize(bed.api_key, "127.0.0.1")
        assert principal.workspace_id == workspace_id
        connection = next(c for c in sync.connections.available(principal) if c.provider == "sms_a")
        assert sync.connections.get(connection.id) == connection
        with pytest.raises(InvalidCredentials):
            sync.connections.test(connection.id)  # added for test keys only
        assert sync.reports.challenge(connection.id, connection.dlr_token, {}) is None

        sent = sync.send(principal, {"to": "05551234567", "body": "Merhaba", "provider": "sms_a"})
        [simulated] = [
            a.provider_message_id for a in sync.get_message(principal, sent.job_id).attempts
        ]
        assert simulated is not None
        body = f'{{"provider_message_id": "{simulated}", "status": "delivered"}}'.encode()
        callback = InboundCallback("POST", {"content-type": "application/json"}, {}, body)

        result = sync.reports.ingest(connection.id, connection.dlr_token, callback)

        assert (result.received, result.matched, result.changed) == (1, 1, 1)
        assert sync.get_message(principal, sent.job_id).status == "delivered"
        assert sync.clock.now() == bed.messenger.clock.now()
        assert sync.clock is bed.messenger.clock


def test_a_twin_runs_the_namespace_it_wraps_including_an_override() -> None:
    class NoWorkspaces(Workspaces):
        async def list(self) -> list[Workspace]:
            return []

    messenger = Messenger(clock=ManualClock())
    messenger.workspaces = NoWorkspaces(messenger.store, messenger.clock)
    with SyncMessenger(messenger) as sync:
        created = sync.workspaces.create("one")

        assert sync.workspaces.list() == []  # the override's answer
        assert sync.workspaces.get(created.id).name == "one"


# --------------------------------------------------------------------------- namespaces


def _namespaces(owner: object) -> dict[str, object]:
    return {
        name: value
        for name, value in vars(owner).items()
        if not name.startswith("_") and not callable(value) and hasattr(value, "__dict__")
        and name != "messenger"
    }  # fmt: skip


def test_every_messenger_namespace_has_a_sync_twin_with_every_method() -> None:
    messenger = Messenger(clock=ManualClock())
    with SyncMessenger(messenger) as sync:
        namespaces = _namespaces(messenger)
        twins = _namespaces(sync)

        assert sorted(twins) == sorted(namespaces)
        for name, namespace in namespaces.items():
            missing = [
                m
                for m in public(type(namespace))
                if not hasattr(twins[name], m) and f"{name}.{m}" not in NAMESPACE_NO_TWIN
            ]
            assert missing == [], f"sync.{name} lacks {missing}"


#: Public namespace members with no twin, and why.
NAMESPACE_NO_TWIN: dict[str, str] = {
    "verifications.handle_expiry": "The worker's handler: the worker calls it on the loop.",
    "iys.handlers": "The worker's handlers: the worker takes them on the loop.",
    "iys.batch_handlers": "The worker's batch handlers, as above.",
    "iys.aclose": "Messenger.aclose closes it; SyncMessenger.close calls that.",
    "stats.keep_folded": "Runs beside the worker on the loop (run_worker starts it).",
    "accounts.handle": "The worker's handler: the worker calls it on the loop.",
}


def _namespace_methods() -> list[tuple[str, str]]:
    messenger = Messenger(clock=ManualClock())
    return [
        (name, method)
        for name, namespace in _namespaces(messenger).items()
        for method in public(type(namespace))
        if f"{name}.{method}" not in NAMESPACE_NO_TWIN
    ]


@pytest.mark.parametrize(("namespace", "name"), _namespace_methods())
def test_a_namespace_twin_has_the_same_signature_and_blocks(namespace: str, name: str) -> None:
    messenger = Messenger(clock=ManualClock())
    with SyncMessenger(messenger) as sync:
        method = getattr(type(getattr(messenger, namespace)), name)
        twin = getattr(type(getattr(sync, namespace)), name)

        assert callable(twin)
        assert not inspect.iscoroutinefunction(twin), "a twin blocks: it returns, never awaits"
        assert getattr(twin, "__wrapped__", method) is method
        assert _parameters(twin) == _parameters(method)
        assert _hints(twin)["return"] == _hints(method)["return"]


def test_run_worker_blocks_and_does_the_work_until_its_threading_event_is_set() -> None:
    bed = build_testbed()
    with SyncMessenger(bed.messenger) as sync:
        sent = sync.send(bed.principal, {"to": "05551234567", "body": "Merhaba"})
        assert sync.get_message(bed.principal, sent.job_id).status == "sent"
        stop = threading.Event()
        worker = threading.Thread(
            target=sync.run_worker, args=(stop,), kwargs={"idle_interval": 0.01}, daemon=True
        )
        worker.start()
        try:
            # The simulated report is due at once (report_delay 0): the worker applies it.
            deadline = time.monotonic() + 30
            while sync.get_message(bed.principal, sent.job_id).status != "delivered":
                assert time.monotonic() < deadline, "the worker never applied the report"
                time.sleep(0.01)
            assert worker.is_alive()  # it blocks until told to stop
        finally:
            stop.set()
            worker.join(timeout=30)
        assert not worker.is_alive()
