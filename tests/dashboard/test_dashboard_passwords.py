"""D31's password rules through the library (``Messenger.create_user``, which the command
line's ``users create`` calls too): long enough, not the commonest passwords, not one
character or a short group repeated; the refusal names the rule, never the password."""

from __future__ import annotations

import pytest

from unified_messaging import Messenger
from unified_messaging._errors import RequestInvalid


@pytest.mark.parametrize(
    ("password", "rule"),
    [
        ("short", "must be 12-1024 characters"),
        ("aaaaaaaaaaaa", "must not be one character or a short group of characters repeated"),
        ("121212121212", "must not be one character or a short group of characters repeated"),
        ("password1234", "is one of the most common passwords"),
        ("PASSWORD1234", "is one of the most common passwords"),  # case does not help
        ("qwertyuiop123", "is one of the most common passwords"),
        ("sunshine2024!", "is one of the most common passwords"),  # common + digits, symbols
    ],
)
async def test_a_weak_password_is_refused_naming_the_rule(
    messenger: Messenger, password: str, rule: str
) -> None:
    with pytest.raises(RequestInvalid) as refused:
        await messenger.users.create("ops@example.com", password, operator=True)
    assert [(d.field, rule in d.message) for d in refused.value.details] == [("password", True)]
    assert password not in str(refused.value) and password not in repr(refused.value)
    assert await messenger.users.list() == []


async def test_a_passphrase_is_accepted(messenger: Messenger) -> None:
    user = await messenger.users.create("ops@example.com", "correct horse battery staple",
                                       operator=True)  # fmt: skip
    assert await messenger.users.check_password(user.email, "correct horse battery staple")
