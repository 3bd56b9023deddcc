"""Masking by what a value looks like: any DLR-shaped path loses its
token, and a secret-shaped request id never reaches a log line."""

from __future__ import annotations

import logging
import secrets
import string

from hypothesis import given
from hypothesis import strategies as st

from unified_messaging._ids import new_id
from unified_messaging._observability.log_context import LogContextFilter, bind_log_context
from unified_messaging._observability.logsafe import (
    SafeLogFilter,
    looks_secret,
    mask_secrets,
    safe_log_text,
)

URLSAFE = string.ascii_letters + string.digits + "-_"
tokens = st.text(alphabet=URLSAFE, min_size=12, max_size=48).filter(
    lambda t: any(c.isdigit() for c in t) and any(c.isalpha() for c in t) and "conn_" not in t
)
dlr_words = st.sampled_from(["dlr", "DLR", "Dlr", "dLr"])
prefixes = st.sampled_from(["", "/v1", "/V1", "/api/v1", "/v2"])
connections = st.sampled_from(["", "conn_01M89B98XWJJ85X3N4VK8WHKZK", "conn_x", "c", "x/y"])
tails = st.sampled_from(["", "/", "/extra", "/a/b", "?hub.mode=subscribe", "#frag"])


@given(prefixes, dlr_words, st.integers(0, 2), connections, tokens, tails)
def test_any_dlr_shaped_path_has_its_token_masked(
    prefix: str, dlr: str, empties: int, connection: str, token: str, tail: str
) -> None:
    path = f"{prefix}/{dlr}/{'/' * empties}{connection}{'/' if connection else ''}{token}{tail}"
    for line in (path, f'127.0.0.1 - "POST {path} HTTP/1.1" 404', f"path={path}"):
        assert token not in safe_log_text(line), line


@given(st.text(alphabet=string.ascii_letters + string.digits, min_size=32, max_size=64))
def test_our_api_keys_and_webhook_secrets_look_secret(body: str) -> None:
    for value in (f"um_live_{body}", f"um_test_{body}", f"whsec_{body}", f"Bearer {body}"):
        assert looks_secret(value)


def test_long_random_tokens_look_secret_and_ordinary_request_ids_do_not() -> None:
    for _ in range(50):
        assert looks_secret(secrets.token_urlsafe(24).replace("-", "a") + "0a")
        assert looks_secret(secrets.token_hex(16) + "a")
    ordinary = [
        "req-from-client-1",
        "6f1c2b9a-1e2d-4c3b-9a8b-7c6d5e4f3a2b",
        "6F1C2B9A-1E2D-4C3B-9A8B-7C6D5E4F3A2B",
        new_id("req"),
        new_id("msg"),
        "checkout.web:1234",
    ]
    assert [rid for rid in ordinary if looks_secret(rid)] == []


def test_a_secret_shaped_context_field_is_masked_whole() -> None:
    record = logging.LogRecord("unified_messaging.x", logging.INFO, __file__, 1, "hi", None, None)
    bind_log_context(request_id="abcDEF123abcDEF123abcDEF123abcDEF123", job_id="msg_1")
    try:
        LogContextFilter().filter(record)
    finally:
        bind_log_context(request_id="-", job_id="-")
    SafeLogFilter().filter(record)
    assert (record.request_id, record.job_id) == ("***", "msg_1")  # type: ignore[attr-defined]


def test_the_right_dlr_path_keeps_its_connection_id() -> None:
    connection = new_id("conn")
    assert mask_secrets(f"/v1/dlr/{connection}/tok3n") == f"/v1/dlr/{connection}/***"


# --- tokens by shape, wherever they are in a path ------------------------------------------


@given(
    st.sampled_from(
        [
            "/v1/dlrs/{conn}/{token}",
            "/v1/dlr;x/{conn}/{token}",
            "/v1/d1r/{conn}/{token}",
            "/dashboard/login/link/{token}",
            "/dashboard/login/lnk/{token}?next=/",
            "/anything/{token}/more",
            "/v1/health?x={token}&y=1",
            "/p;session={token}",
            "/p?{token}",
            "/p?a=1&{token}",
        ]
    ),
    st.sampled_from([24, 32]),
)
def test_a_minted_token_is_masked_in_any_path(template: str, nbytes: int) -> None:
    # The shapes we mint: secrets.token_urlsafe(24) (DLR tokens) and (32) (sign-in links).
    token = secrets.token_urlsafe(nbytes)
    path = template.format(conn=new_id("conn"), token=token)
    for line in (path, f'127.0.0.1:5 - "GET {path} HTTP/1.1" 404', f"path={path}"):
        assert token not in safe_log_text(line), line


def test_ids_uuids_and_words_in_a_path_are_not_tokens() -> None:
    kept = [
        f"/v1/messages/{new_id('msg')}",
        f"/v1/dlr/{new_id('conn')}/",
        "/v1/x/6f1c2b9a-1e2d-4c3b-9a8b-7c6d5e4f3a2b",
        "/docs/a-very-long-page-name-made-of-words-only",
        "/v1/messages?created_after=2026-11-25T12:44:59Z&limit=20",
    ]
    assert [safe_log_text(path) for path in kept] == kept


def test_a_unix_time_is_not_a_phone_number_but_a_turkish_mobile_is() -> None:
    line = "/v1/messages?ts=1764630000&to=05321112233&alt=5321112233&intl=%2B4915112345678"
    assert safe_log_text(line) == (
        "/v1/messages?ts=1764630000&to=*******2233&alt=******2233&intl=%2B*********5678"
    )
