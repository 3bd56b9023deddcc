"""``SyncMessenger`` in a synchronous web app (Django, Flask, a management command).

    scripts/example sync_django_style    (or: .venv/bin/python examples/sync_django_style.py)

``SyncMessenger`` has the async ``Messenger``'s methods without ``await``. It runs its own
event loop on one background thread, so make one per process (in Django, in an
``AppConfig.ready()`` or a module imported once) and close it at shutdown.
"""

from unified_messaging import MessagingError, SyncMessenger

messenger = SyncMessenger()


def send_order_sms(api_key: str, phone: str, order: str) -> tuple[int, dict[str, object]]:
    """What a view does: authenticate the caller, send, answer with a status and a body."""
    try:
        auth = messenger.authenticate(api_key)
        response = messenger.send(auth, {"to": phone, "body": f"Siparişiniz {order} yolda."})
    except MessagingError as exc:
        # Every library error carries the HTTP status and stable code to answer with.
        return exc.http_status, {"error": {"code": exc.code, "message": exc.message}}
    return 201, response.to_dict()


def set_up_test_workspace() -> str:
    """One-time set-up (a dashboard's job); returns a test key."""
    workspace = messenger.workspaces.create("Acme")
    messenger.connections.add(workspace.id, "sms_c", default_sender="ACME")
    return messenger.keys.create(workspace.id, livemode=False).secret


if __name__ == "__main__":
    try:
        key = set_up_test_workspace()
        status, body = send_order_sms(key, "0555 123 45 67", "A-1042")
        print(status, body["status"], body["job_id"], body["provider"])
        status, body = send_order_sms("um_test_not-a-real-key", "0555 123 45 67", "A-1043")
        print(status, body)
    finally:
        messenger.close()
