"""pytest-django's run of the project: the same simulator, and ``um_django_outbox`` starts
every test empty (pytest-django empties ``mail.outbox`` in place, so a fixture says when). The
views run in a transaction each (``ATOMIC_REQUESTS``), so the tests ask for ``db``."""

from django.test import Client

from unified_messaging.contrib.django.testing import settle


def test_the_view_sends(client: Client, db: None, um_django_outbox: object) -> None:
    answer = client.post("/notify/", {"to": "0555 123 45 67", "order": "P-1"})

    assert answer.status_code == 201
    assert um_django_outbox.recipients() == ["+905551234567"]  # type: ignore[attr-defined]


def test_the_next_test_starts_empty(client: Client, db: None, um_django_outbox: object) -> None:
    client.post("/notify/", {"to": "0555 123 45 68", "order": "P-2"})

    assert len(um_django_outbox) == 1  # type: ignore[arg-type]
    assert settle() >= 1  # the simulated report was due
