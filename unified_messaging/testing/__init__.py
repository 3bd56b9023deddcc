"""Testing helpers for host applications: the outbox and the pytest plugin."""
