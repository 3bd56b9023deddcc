"""The SMS-pumping guard (D34): velocity limits on verification starts, by number range and
by client address, as ``messenger.verifications.guard``.

Why: SMS pumping. A bot asks a sign-up form for codes to a run of numbers in a range it is
paid for (premium-rate numbers share their first digits), or from one machine, and every
code is a paid SMS. A per-recipient limit does not see it: each number is asked once.

What counts: a start that is about to send a code (a new verification or a re-send), after
every other rule of the start let it through; a start refused for anything else counts
nothing. The range is checked before the address: a start the address rule refuses has
been counted in its range (a bucket gives nothing back).

- ``prefix_limit``: starts to numbers of one range, the first ``prefix_digits`` digits of
  the national number (``+90 5XX YYY`` for the default 6: :func:`number_range`).
- ``address_limit``: starts for one end-user address, the request's ``client_ip`` (what the
  app saw its user come from; IPv6 by its /64: :func:`address_range`). A start without one
  is not counted by this rule: an app's server calling the API is one address for all its
  users, and counting it would refuse them all.

Each rule is a token bucket (a burst of ``limit``, refilled evenly over ``window``) in the
messenger's rate limiter, the backend the per-key limit uses (D16): this process, the
``serve --workers`` parent over a socket, or Redis with ``UM_REDIS_URL``; so a limit holds
across every process that shares it. Live and test mode are counted apart.

A refusal is 429 ``VERIFICATION_FRAUD_SUSPECTED`` with ``Retry-After``, before anything is
stored or sent; it is counted (``um_verification_refusals_total{reason}``) and written to
the audit log as ``verification.fraud_refused``, its target the rule and the range
(``prefix:+90555123``, ``address:203.0.113.7``): ids, never a whole number.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Final

from .._access.ratelimit import RateLimitPolicy, retry_after_seconds
from .._errors import VerificationFraudSuspected
from ..audit._actions import audited, of_argument
from ._guard_rules import GuardSettings, Velocity, address_range, number_range
from ._metrics import record_refusal

if TYPE_CHECKING:
    from .._access.principal import Principal
    from .._access.ratelimit import RateLimiter
    from .._clock import Clock
    from .._observability.metrics import Metrics
    from ..store.base import Store

__all__ = ["PumpingGuard"]

_UNSET: Final = object()
_MESSAGES: Final = {
    "prefix": "Too many verifications to numbers of this range in a short time (the SMS "
    "pumping guard); nothing was sent.",
    "address": "Too many verifications from this client address in a short time (the SMS "
    "pumping guard); nothing was sent.",
}


class PumpingGuard:
    """The SMS-pumping guard of one messenger: its settings and :meth:`admit`."""

    def __init__(self, store: Store, clock: Clock, limiter: RateLimiter, metrics: Metrics) -> None:
        self._store = store
        self._clock = clock
        self._limiter = limiter
        self._metrics = metrics

    def __repr__(self) -> str:
        return "PumpingGuard()"

    # ------------------------------------------------------------------ settings

    async def settings(self, workspace_id: str) -> GuardSettings:
        """The workspace's guard (the defaults until changed)."""
        found = await self._store.get_verification_guard(workspace_id)
        return found if found is not None else GuardSettings()

    async def update_settings(
        self,
        workspace_id: str,
        *,
        prefix_limit: Velocity | object | None = _UNSET,
        prefix_digits: int | None = None,
        address_limit: Velocity | object | None = _UNSET,
    ) -> GuardSettings:
        """Change some of the workspace's guard settings (those given; ``None`` turns a
        limit off). ``RequestInvalid`` naming a bad value, ``ResourceNotFound`` for an
        unknown workspace."""
        current = await self.settings(workspace_id)
        changes: dict[str, object] = {}
        if prefix_limit is not _UNSET:
            changes["prefix_limit"] = prefix_limit
        if prefix_digits is not None:
            changes["prefix_digits"] = prefix_digits
        if address_limit is not _UNSET:
            changes["address_limit"] = address_limit
        return await self.set_settings(workspace_id, replace(current, **changes))  # type: ignore[arg-type]

    @audited("workspace.verify_guard", of_argument("workspace_id"))
    async def set_settings(self, workspace_id: str, settings: GuardSettings) -> GuardSettings:
        """Replace the workspace's guard (audited ``workspace.verify_guard``)."""
        await self._store.put_verification_guard(workspace_id, settings)
        return settings

    # ------------------------------------------------------------------ the check

    async def admit(self, auth: Principal, to: str, client_ip: str | None) -> None:
        """Count one start about to send a code to ``to``, or refuse it with
        :class:`VerificationFraudSuspected` (counting nothing) when a rule is over."""
        settings = await self.settings(auth.workspace_id)
        rules = (
            ("prefix", settings.prefix_limit, number_range(to, settings.prefix_digits)),
            ("address", settings.address_limit, address_range(client_ip)),
        )
        for reason, velocity, counted_as in rules:
            if velocity is None or counted_as is None:
                continue
            key = f"verify:{reason}:{auth.workspace_id}:{int(auth.livemode)}:{counted_as}"
            policy = RateLimitPolicy(rate=velocity.rate, burst=velocity.limit)
            decision = await self._limiter.hit(key, policy)
            if not decision.allowed:
                await self._refused(auth.workspace_id, f"{reason}:{counted_as}")
                record_refusal(self._metrics, reason)
                wait = float(retry_after_seconds(decision.retry_after))
                raise VerificationFraudSuspected(_MESSAGES[reason], wait, reason)

    @audited("verification.fraud_refused", of_argument("target"), atomic=False)
    async def _refused(self, workspace_id: str, target: str) -> None:
        """The audit row of one refusal (the decorator writes it)."""
