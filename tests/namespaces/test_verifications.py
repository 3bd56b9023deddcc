"""Verify (D34) through the library: the rules as pure functions, the texts, the keyed
digests, ``messenger.verifications`` (with its pumping ``guard``) and its blocking twin, and
the pytest outbox's ``last_code``."""

from __future__ import annotations

import inspect
import random
from datetime import timedelta

import pytest

from namespaces._audit import audit_rows
from unified_messaging import (
    ManualClock,
    MasterKeyError,
    RequestInvalid,
    SyncMessenger,
    Vault,
    VerificationFraudSuspected,
    generate_key_spec,
)
from unified_messaging._encoding import analyze_sms
from unified_messaging.store._records import WorkItem
from unified_messaging.testing import build_testbed, create_testbed
from unified_messaging.vault._core import KeylessVault
from unified_messaging.verifications import (
    VerificationNotFound,
    Verifications,
    VerificationSettings,
)
from unified_messaging.verifications._events import WORK_EXPIRY
from unified_messaging.verifications._guard_rules import GuardSettings, Velocity
from unified_messaging.verifications._rules import code_digest, new_code
from unified_messaging.verifications._sync import SyncVerifications
from unified_messaging.verifications._texts import CODE_MASK, code_text

# ------------------------------------------------------------------------ codes


def test_codes_come_from_secrets_not_random(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(*args: object) -> int:
        raise AssertionError("random was used for a code")

    for name in ("random", "randint", "randrange", "choice", "choices", "getrandbits"):
        monkeypatch.setattr(random, name, refused)
    codes = [new_code(length) for length in range(4, 11) for _ in range(50)]

    assert all(code.isdigit() for code in codes)
    assert {len(code) for code in codes} == set(range(4, 11))
    assert len(set(codes)) > 300  # 350 codes: repeats are rare


@pytest.mark.parametrize("length", [3, 11, 0])
def test_a_code_has_four_to_ten_digits(length: int) -> None:
    with pytest.raises(ValueError, match="4-10 digits"):
        new_code(length)


def test_a_digest_is_keyed_bound_to_its_verification_and_survives_a_key_rotation() -> None:
    spec = generate_key_spec("k1")
    old = Vault.from_spec(spec)
    digest = code_digest(old, "ver_a", "123456")
    rotated = Vault.from_spec(f"{generate_key_spec('k2')},{spec}")
    message = b"ver_a\x00123456"

    assert "123456" not in digest
    assert old.digest_matches(message, digest, purpose="verification-code")
    assert rotated.digest_matches(message, digest, purpose="verification-code")
    assert code_digest(old, "ver_b", "123456") != digest  # bound to the verification
    other = Vault.from_spec(generate_key_spec("k1"))
    assert not other.digest_matches(message, digest, purpose="verification-code")
    assert not old.digest_matches(message, digest, purpose="another purpose")
    assert not old.digest_matches(message, "k1.not base64!", purpose="verification-code")


def test_a_keyless_vault_refuses_to_make_a_digest() -> None:
    with pytest.raises(MasterKeyError):
        code_digest(KeylessVault(), "ver_a", "123456")


# ------------------------------------------------------------------------ texts


@pytest.mark.parametrize("locale", ["tr", "en"])
@pytest.mark.parametrize("app_hash", [None, "FA+9qCX9VSu"])
def test_every_default_text_fits_one_sms_part_with_the_turkish_shift(
    locale: str, app_hash: str | None
) -> None:
    for length in range(4, 11):
        text = code_text("9" * length, locale=locale, template=None, app_hash=app_hash)  # type: ignore[arg-type]
        sms = analyze_sms(text, allow_turkish_shift=True)
        assert sms.encoding != "ucs2", text
        # One part, with room left for an operator's suffix (a few dozen characters).
        assert (sms.segments, sms.units <= sms.per_segment - 40) == (1, True), text


def test_the_masked_text_is_the_text_with_the_code_masked() -> None:
    text = code_text("123456", locale="tr", template=None, app_hash="FA+9qCX9VSu")
    masked = code_text(CODE_MASK, locale="tr", template=None, app_hash="FA+9qCX9VSu")

    assert text == "<#> Doğrulama kodunuz: 123456. Kimseyle paylaşmayın.\nFA+9qCX9VSu"
    assert masked == text.replace("123456", "******")


# ------------------------------------------------------------------------ the service


async def test_start_read_the_code_from_the_outbox_and_check() -> None:
    bed = await create_testbed()
    started = await bed.messenger.verifications.start(bed.principal, {"to": "0555 765 43 21"})
    code = bed.outbox.last_code("+905557654321")
    assert code is not None and len(code) == 6

    checked = await bed.messenger.verifications.check(bed.principal, started.id, {"code": code})

    assert checked.status == "approved"
    assert bed.outbox.last_code("05557654321") == code  # any typed form of the number
    assert bed.outbox.last_code("+905550000000") is None


async def test_an_unknown_id_is_verification_not_found() -> None:
    bed = await create_testbed()
    with pytest.raises(VerificationNotFound):
        await bed.messenger.verifications.get(bed.principal, "ver_nothing")


async def test_settings_have_the_documented_defaults_and_refuse_bad_values() -> None:
    bed = await create_testbed()
    verifications = bed.messenger.verifications

    assert await verifications.settings(bed.workspace.id) == VerificationSettings(
        max_checks=5, max_sends=5, resend_cooldown=timedelta(seconds=30), hourly_limit=10
    )
    with pytest.raises(RequestInvalid) as too_few:
        await verifications.update_settings(bed.workspace.id, max_sends=0)
    assert [d.field for d in too_few.value.details] == ["max_sends"]
    with pytest.raises(RequestInvalid) as too_long:
        await verifications.update_settings(bed.workspace.id, resend_cooldown=timedelta(hours=2))
    assert [d.field for d in too_long.value.details] == ["resend_cooldown"]
    changed = await verifications.update_settings(bed.workspace.id, hourly_limit=3)
    assert (changed.hourly_limit, changed.max_checks) == (3, 5)


async def test_cancel_recent_and_stats_of_the_callers_verifications() -> None:
    bed = await create_testbed(clock=ManualClock())
    verifications = bed.messenger.verifications
    first = await verifications.start(bed.principal, {"to": "+905557654321"})
    second = await verifications.start(bed.principal, {"to": "+905551112233"})
    code = bed.outbox.last_code("+905551112233")
    await verifications.check(bed.principal, second.id, {"code": code})

    canceled = await verifications.cancel(bed.principal, first.id)

    assert canceled.status == "canceled"
    assert [(v.id, v.status) for v in await verifications.recent(bed.principal)] == [
        (second.id, "approved"), (first.id, "canceled"),
    ]  # fmt: skip
    stats = await verifications.stats(bed.principal, {"hours": 2})
    assert [(t.channel, t.started, t.approved, t.conversion) for t in stats.totals] == [
        ("sms", 2, 1, 0.5),
    ]  # fmt: skip
    with pytest.raises(RequestInvalid):
        await verifications.stats(bed.principal, {"hours": 169})
    other = await create_testbed(messenger=bed.messenger, name="other")
    with pytest.raises(VerificationNotFound) as unknown:
        await verifications.cancel(other.principal, first.id)
    assert unknown.value.code == "VERIFICATION_NOT_FOUND"


async def test_the_expiry_item_ends_a_pending_verification_at_its_time() -> None:
    clock = ManualClock()
    bed = await create_testbed(clock=clock)
    started = await bed.messenger.verifications.start(bed.principal, {"to": "+905557654321"})
    item = WorkItem(
        id=f"vex_{started.id}",
        kind=WORK_EXPIRY,
        ref=started.id,
        due_at=started.expires_at,
        created_at=clock.now(),
        payload={"workspace_id": bed.workspace.id, "livemode": False},
    )

    assert await bed.messenger.verifications.handle_expiry(item) == started.expires_at
    clock.advance(started.expires_at - clock.now())
    assert await bed.messenger.verifications.handle_expiry(item) is None

    assert (await bed.messenger.verifications.get(bed.principal, started.id)).status == "expired"


async def test_set_settings_replaces_the_limits_and_is_audited() -> None:
    bed = await create_testbed()
    wanted = VerificationSettings(
        max_checks=3, max_sends=2, resend_cooldown=timedelta(seconds=60), hourly_limit=4
    )

    assert await bed.messenger.verifications.set_settings(bed.workspace.id, wanted) == wanted

    assert await bed.messenger.verifications.settings(bed.workspace.id) == wanted
    assert (await audit_rows(bed.messenger))[0] == (
        "workspace.verify_limits", bed.workspace.id, bed.workspace.id,
    )  # fmt: skip


async def test_the_guard_refuses_a_pumped_range_and_audits_the_refusal() -> None:
    bed = await create_testbed(clock=ManualClock())
    guard = bed.messenger.verifications.guard
    assert (await guard.settings(bed.workspace.id)).prefix_digits == 6
    tight = await guard.update_settings(
        bed.workspace.id, prefix_limit=Velocity(2, timedelta(hours=1)), address_limit=None
    )
    assert (tight.prefix_limit, tight.address_limit) == (Velocity(2, timedelta(hours=1)), None)

    await guard.admit(bed.principal, "+905557654321", None)
    await guard.admit(bed.principal, "+905557654322", None)
    with pytest.raises(VerificationFraudSuspected) as refused:
        await guard.admit(bed.principal, "+905557654323", None)

    assert (refused.value.code, refused.value.http_status) == ("VERIFICATION_FRAUD_SUSPECTED", 429)
    assert (await audit_rows(bed.messenger))[0][0] == "verification.fraud_refused"
    off = await guard.set_settings(
        bed.workspace.id, GuardSettings(prefix_limit=None, address_limit=None)
    )
    assert off.prefix_limit is None
    await guard.admit(bed.principal, "+905557654324", None)  # every rule off: admitted


def test_the_sync_twin_starts_and_checks_a_code() -> None:
    bed = build_testbed(clock=ManualClock())
    with SyncMessenger(bed.messenger) as sync:
        started = sync.verifications.start(bed.principal, {"to": "+905557654321"})
        code = bed.outbox.last_code("+905557654321")
        checked = sync.verifications.check(bed.principal, started.id, {"code": code})
        assert checked.status == "approved"
        assert sync.verifications.get(bed.principal, started.id).status == "approved"


def test_every_verifications_method_has_a_blocking_twin_with_its_signature() -> None:
    # handle_expiry is the worker's handler: it runs on the worker's loop, never a host's.
    public = [n for n in vars(Verifications) if not n.startswith("_") and n != "handle_expiry"]
    for name in public:
        twin = getattr(SyncVerifications, name)
        original = getattr(Verifications, name)
        assert (
            inspect.signature(twin).parameters.keys()
            == inspect.signature(original).parameters.keys()
        ), name
