"""The ``Host`` names ``/mcp`` answers to under ``serve`` (D25): the bind address's own, the
``--allowed-host`` names when given, and always the host of ``--public-url``."""

from __future__ import annotations

from unified_messaging.cli._serve_hosts import allowed_hosts, allowed_origins


def test_a_loopback_bind_answers_its_loopback_names() -> None:
    assert allowed_hosts("127.0.0.1", ()) == ["127.0.0.1", "localhost", "[::1]"]


def test_named_hosts_replace_the_binds_own() -> None:
    assert allowed_hosts("127.0.0.1", ["api.example.com"]) == ["api.example.com"]


def test_the_public_urls_host_is_always_allowed() -> None:
    public = "https://sms.example.com/base"
    assert allowed_hosts("127.0.0.1", (), public) == [
        "127.0.0.1", "localhost", "[::1]", "sms.example.com",
    ]  # fmt: skip
    assert allowed_hosts("10.0.0.5", ["api.example.com"], public) == [
        "api.example.com", "sms.example.com",
    ]  # fmt: skip
    origins = allowed_origins(allowed_hosts("10.0.0.5", (), public), ())
    assert "https://sms.example.com" in origins
