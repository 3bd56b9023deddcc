"""API keys (D1) and identifiers: formats, what is stored, authentication, id order."""

from __future__ import annotations

import dataclasses
import hashlib
import re
import time
from collections.abc import Iterator
from datetime import timedelta

import pytest

from unified_messaging import ALL_PROVIDERS, ManualClock, RequestInvalid, Unauthorized
from unified_messaging._access.keys import (
    generate_api_key,
    hash_api_key,
    key_display_prefix,
    parse_api_key,
)
from unified_messaging._ids import new_id
from unified_messaging.testing import TestBed

KEY_SHAPE = re.compile(r"um_(live|test)_[A-Za-z0-9]{40}")
CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
ID_SHAPE = re.compile(r"[a-z]+_[0-9A-HJKMNP-TV-Z]{26}")


def manual_clock(bed: TestBed) -> ManualClock:
    assert isinstance(bed.clock, ManualClock)
    return bed.clock


def strings_in(value: object) -> Iterator[str]:
    """Every string held anywhere inside ``value``: containers, dataclasses, object attributes."""
    seen: set[int] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
            continue
        if id(item) in seen or isinstance(item, int | float | bytes | type(None)):
            continue
        seen.add(id(item))
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple | set | frozenset):
            stack.extend(item)
        elif dataclasses.is_dataclass(item):
            stack.extend(getattr(item, f.name) for f in dataclasses.fields(item))
        elif hasattr(item, "__dict__"):
            stack.extend(vars(item).values())


# ------------------------------------------------------------------------------ key format


@pytest.mark.parametrize(("livemode", "prefix"), [(True, "um_live_"), (False, "um_test_")])
def test_a_key_is_its_mode_prefix_and_40_base62_characters(livemode: bool, prefix: str) -> None:
    key = generate_api_key(livemode=livemode)
    assert key.startswith(prefix)
    assert KEY_SHAPE.fullmatch(key)
    assert parse_api_key(key) is livemode


def test_keys_do_not_repeat() -> None:
    keys = {generate_api_key(livemode=False) for _ in range(2000)}
    assert len(keys) == 2000


def test_keys_use_the_whole_base62_alphabet() -> None:
    characters = set("".join(generate_api_key(livemode=True)[8:] for _ in range(300)))
    assert characters == set("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def test_the_hash_is_the_sha256_hex_digest_of_the_whole_key() -> None:
    key = generate_api_key(livemode=False)
    digest = hash_api_key(key)
    assert digest == hashlib.sha256(key.encode()).hexdigest()
    assert re.fullmatch(r"[0-9a-f]{64}", digest)


def test_the_display_prefix_is_the_mode_prefix_and_four_characters() -> None:
    key = generate_api_key(livemode=True)
    assert key_display_prefix(key) == key[:12]
    assert key_display_prefix(key).startswith("um_live_")


@pytest.mark.parametrize(
    "candidate",
    [
        "",
        "um_test_",
        "um_test_" + "a" * 31,
        "um_prod_" + "a" * 40,
        "UM_TEST_" + "a" * 40,
        "um_test_" + "a" * 129,
        "um_test_" + "a" * 39 + "!",
        "um_test_" + "ş" * 40,
        "um_test_" + "a" * 40 + "\n",
        " um_test_" + "a" * 40,
        "Bearer um_test_" + "a" * 40,
    ],
)
def test_malformed_keys_parse_as_none(candidate: str) -> None:
    assert parse_api_key(candidate) is None


@pytest.mark.parametrize("length", [32, 40, 128])
def test_keys_of_32_to_128_characters_after_the_prefix_are_well_formed(length: int) -> None:
    assert parse_api_key("um_test_" + "a" * length) is False


# ------------------------------------------------------------------------------ stored keys


async def test_a_created_key_has_the_format_and_the_record_its_hash(bed: TestBed) -> None:
    created = await bed.messenger.keys.create(bed.workspace.id, livemode=True, name="ci")
    assert KEY_SHAPE.fullmatch(created.secret)
    assert created.secret.startswith("um_live_")
    assert created.record.key_hash == hashlib.sha256(created.secret.encode()).hexdigest()
    assert created.record.display_prefix == created.secret[:12]
    assert created.record.livemode is True


async def test_only_the_hash_of_a_key_is_stored(bed: TestBed) -> None:
    created = await bed.messenger.keys.create(bed.workspace.id, name="ci")
    secret = created.secret
    random_part = secret.removeprefix("um_test_")

    stored = await bed.messenger.store.get_api_key(created.record.id)
    assert stored is not None
    assert stored.key_hash == hash_api_key(secret)
    everything_stored = list(strings_in(bed.messenger.store))
    assert hash_api_key(secret) in everything_stored
    assert not any(random_part in text for text in everything_stored)
    assert not any(random_part[:16] in text for text in everything_stored)


async def test_listed_keys_carry_no_secret(bed: TestBed) -> None:
    created = await bed.messenger.keys.create(bed.workspace.id)
    keys = await bed.messenger.keys.list(bed.workspace.id)
    assert created.record in keys
    assert not any(created.secret in text for text in strings_in(keys))


async def test_the_secret_is_not_in_reprs(bed: TestBed) -> None:
    created = await bed.messenger.keys.create(bed.workspace.id)
    assert created.secret not in repr(created)
    assert created.record.key_hash not in repr(created.record)


# ------------------------------------------------------------------------------ authenticate


async def test_a_test_key_authenticates_to_its_workspace_in_test_mode(bed: TestBed) -> None:
    principal = await bed.messenger.authenticate(bed.api_key)
    assert principal.workspace_id == bed.workspace.id
    assert principal.livemode is False
    assert principal.key is not None
    assert principal.key.key_hash == hash_api_key(bed.api_key)


async def test_a_live_key_authenticates_in_live_mode(bed: TestBed) -> None:
    created = await bed.messenger.keys.create(bed.workspace.id, livemode=True)
    principal = await bed.messenger.authenticate(created.secret)
    assert (principal.workspace_id, principal.livemode) == (bed.workspace.id, True)


async def assert_unauthorized(bed: TestBed, candidate: str | None) -> None:
    with pytest.raises(Unauthorized) as info:
        await bed.messenger.authenticate(candidate)
    error = info.value
    assert (error.code, error.http_status) == ("UNAUTHORIZED", 401)
    # One message for every cause: nothing hints at which part was wrong (D1).
    assert error.message == Unauthorized().message
    assert str(error) == Unauthorized().message
    if candidate:
        assert candidate not in repr(error)


@pytest.mark.parametrize("candidate", [None, ""])
async def test_a_missing_key_is_unauthorized(bed: TestBed, candidate: str | None) -> None:
    await assert_unauthorized(bed, candidate)


@pytest.mark.parametrize(
    "mangle",
    [
        pytest.param(lambda k: f"Bearer {k}", id="with-scheme"),
        pytest.param(lambda k: f" {k}", id="leading-space"),
        pytest.param(lambda k: f"{k}\n", id="trailing-newline"),
        pytest.param(lambda k: k[:20], id="truncated"),
        pytest.param(lambda k: k[:-1] + "!", id="bad-character"),
        pytest.param(lambda k: k.upper(), id="upper-case-prefix"),
        pytest.param(lambda k: k.replace("um_test_", "um_prod_"), id="unknown-mode"),
        pytest.param(lambda k: k[:12], id="display-prefix"),
    ],
)
async def test_a_malformed_key_is_unauthorized(bed: TestBed, mangle: object) -> None:
    assert callable(mangle)
    await assert_unauthorized(bed, mangle(bed.api_key))


async def test_an_unknown_well_formed_key_is_unauthorized(bed: TestBed) -> None:
    await assert_unauthorized(bed, generate_api_key(livemode=False))


async def test_a_key_with_one_character_changed_is_unauthorized(bed: TestBed) -> None:
    last = bed.api_key[-1]
    await assert_unauthorized(bed, bed.api_key[:-1] + ("a" if last != "a" else "b"))


async def test_a_key_with_the_other_mode_prefix_is_unauthorized(bed: TestBed) -> None:
    await assert_unauthorized(bed, bed.api_key.replace("um_test_", "um_live_"))


async def test_a_revoked_key_is_unauthorized(bed: TestBed) -> None:
    created = await bed.messenger.keys.create(bed.workspace.id)
    await bed.messenger.authenticate(created.secret)
    await bed.messenger.keys.revoke(created.record.id)
    await assert_unauthorized(bed, created.secret)


async def test_revoking_one_key_leaves_the_others_working(bed: TestBed) -> None:
    created = await bed.messenger.keys.create(bed.workspace.id)
    await bed.messenger.keys.revoke(created.record.id)
    assert (await bed.messenger.authenticate(bed.api_key)).workspace_id == bed.workspace.id


async def test_a_key_works_until_it_expires(bed: TestBed) -> None:
    clock = manual_clock(bed)
    expires_at = clock.now() + timedelta(hours=1)
    created = await bed.messenger.keys.create(bed.workspace.id, expires_at=expires_at)

    clock.advance(timedelta(hours=1) - timedelta(microseconds=1))
    await bed.messenger.authenticate(created.secret)
    clock.advance(timedelta(microseconds=1))
    await assert_unauthorized(bed, created.secret)


async def test_an_expiry_without_a_timezone_is_refused(bed: TestBed) -> None:
    naive = manual_clock(bed).now().replace(tzinfo=None)
    with pytest.raises(RequestInvalid) as info:
        await bed.messenger.keys.create(bed.workspace.id, expires_at=naive)
    assert [d.field for d in info.value.details] == ["expires_at"]


# ------------------------------------------------------------------------------ ids


def decode_millis(identifier: str) -> int:
    value = 0
    for char in identifier.split("_", 1)[1][:10]:
        value = value * 32 + CROCKFORD.index(char)
    return value


def test_an_id_is_its_prefix_and_26_crockford_characters() -> None:
    identifier = new_id("msg")
    assert identifier.startswith("msg_")
    assert ID_SHAPE.fullmatch(identifier)


def test_an_id_carries_the_time_it_was_made() -> None:
    before = time.time_ns() // 1_000_000
    identifier = new_id("msg")
    after = time.time_ns() // 1_000_000
    assert before <= decode_millis(identifier) <= after


def test_10k_ids_are_unique() -> None:
    ids = [new_id("msg") for _ in range(10_000)]
    assert len(set(ids)) == 10_000


def test_ids_sort_in_the_order_they_were_made() -> None:
    # Thousands per millisecond: ordering must hold inside one millisecond too.
    ids = [new_id("msg") for _ in range(10_000)]
    assert ids == sorted(ids)
    assert len({decode_millis(i) for i in ids}) < len(ids)  # the same-millisecond case was hit


async def test_job_ids_are_prefixed_msg(bed: TestBed) -> None:
    response = await bed.messenger.send(bed.principal, {"to": "+905321234567", "body": "x"})
    assert ID_SHAPE.fullmatch(response.job_id)
    assert response.job_id.startswith("msg_")


async def test_admin_ids_are_prefixed_by_kind(bed: TestBed) -> None:
    connections = await bed.messenger.connections.list(bed.workspace.id)
    key = bed.principal.key
    assert key is not None
    assert bed.workspace.id.startswith("ws_")
    assert key.id.startswith("key_")
    assert all(c.id.startswith("conn_") for c in connections)


async def test_bulk_job_ids_sort_in_item_order(bed: TestBed) -> None:
    items = [{"to": "+905321234567", "body": f"m{i}"} for i in range(50)]
    response = await bed.messenger.send_bulk(bed.principal, {"items": items})
    job_ids = [result.job_id for result in response.results]
    assert job_ids == sorted(job_ids)


async def test_connections_added_at_the_same_instant_list_in_the_order_added(
    bed: TestBed,
) -> None:
    # The testbed's ManualClock gives every connection the same created_at; the id decides.
    connections = await bed.messenger.connections.list(bed.workspace.id)
    assert len({c.created_at for c in connections}) == 1
    assert tuple(c.provider for c in connections) == ALL_PROVIDERS
