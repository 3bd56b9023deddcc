"""``workspaces``, ``keys``, ``templates`` and ``allowlist``: thin calls to the admin façade."""

from __future__ import annotations

import argparse
from datetime import timedelta
from typing import TYPE_CHECKING, get_args

from .._types import TEMPLATE_KEY_PATTERN, ConsentPolicy
from ._args import (
    Subparsers,
    add_command,
    add_group,
    aware_datetime,
    finite_number,
    positive_seconds,
)
from ._args import workspace_option as _workspace
from ._content_commands import (
    CONTENT_LABELS,
    add_content_options,
    content_json,
    content_settings,
    template_hints,
)
from ._context import SERVER_CACHE_TTL, admin_command
from ._output import JsonObject, JsonValue, Report, fields_report, table_report
from ._records import (
    API_KEY_COLUMNS,
    TEMPLATE_COLUMNS,
    WORKSPACE_COLUMNS,
    api_key_json,
    template_json,
    workspace_json,
)

if TYPE_CHECKING:
    from .._access.flood_guard import RecipientLimit
    from .._messenger import Messenger
    from .._schedule import QuietHours
    from ..verifications import GuardSettings, VerificationSettings

__all__ = ["add_allowlist", "add_keys", "add_templates", "add_workspaces"]

# ------------------------------------------------------------------------------ workspaces


def add_workspaces(commands: Subparsers) -> None:
    group = add_group(commands, "workspaces", help="create and list workspaces")
    create = add_command(
        group, "create", help="create a workspace", run=admin_command(_create_workspace)
    )
    create.add_argument("name", metavar="NAME")
    create.add_argument(
        "--monthly-quota",
        type=int,
        metavar="N",
        help="messages per calendar month (UTC); unlimited when left out",
    )
    create.add_argument(
        "--retry-unavailable",
        action="store_true",
        help="when no provider can be reached, answer queued and retry for 10 minutes (D7) "
        "instead of 502",
    )
    _queue_ttl(create)
    _recipient_limit(create)
    update = add_command(
        group,
        "update",
        help="change a workspace's D7 settings and flood guard",
        description="Change a workspace's D7 settings, flood guard and quiet hours. A running "
        f"serve or worker keeps workspace settings for up to {_CACHED_FOR}: it applies the "
        "change within that long.",
        run=admin_command(_update),
    )
    update.add_argument("workspace_id", metavar="WORKSPACE_ID")
    retry = update.add_mutually_exclusive_group()
    retry.add_argument(
        "--retry-unavailable",
        dest="retry_unavailable",
        action="store_true",
        default=None,
        help="answer queued and retry when no provider is reachable",
    )
    retry.add_argument(
        "--no-retry-unavailable",
        dest="retry_unavailable",
        action="store_false",
        help="answer 502 when no provider is reachable",
    )
    _queue_ttl(update)
    _recipient_limit(update)
    _quiet_hours(update)
    update.add_argument(
        "--consent-policy",
        choices=get_args(ConsentPolicy),
        help="the İYS consent check before a commercial SMS is handed over: off (the "
        "providers decide; the default) or local (our consent records decide)",
    )
    masking = update.add_mutually_exclusive_group()
    masking.add_argument(
        "--mask-live-text",
        dest="mask_live_text",
        action="store_true",
        default=None,
        help="hide the text of live messages wherever it is shown (personal data, KVKK)",
    )
    masking.add_argument(
        "--show-live-text",
        dest="mask_live_text",
        action="store_false",
        help="show the text of live messages again (the default)",
    )
    _verify_limits(update)
    add_content_options(update)
    add_command(group, "list", help="list every workspace", run=admin_command(_list_workspaces))


def _queue_ttl(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--queue-ttl", type=positive_seconds, metavar="SECONDS",
                        help="how long queued messages are retried (D7; default 600)")  # fmt: skip


def _recipient_limit(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--recipient-limit",
        metavar="N/WINDOW",
        help="flood guard (D28): at most N messages to one recipient per WINDOW, e.g. 10/1h "
        "(the default), 5/10m, 3/90s; off turns it off",
    )


def _quiet_hours(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--quiet-hours",
        metavar="HH:MM-HH:MM",
        help="sends inside this daily window wait until it ends, e.g. 21:00-09:00; off turns "
        "it off (the default). A send may opt out with ignore_quiet_hours",
    )
    parser.add_argument(
        "--quiet-zone",
        default="Europe/Istanbul",
        metavar="ZONE",
        help="the window's time zone (IANA name; default Europe/Istanbul)",
    )
    parser.add_argument(
        "--quiet-scope",
        default="commercial",
        choices=("commercial", "all"),
        help="which sends wait: commercial (IYS) ones (the default) or all",
    )


#: How long a running ``serve``/``worker`` may go on with the settings it read (its cache).
_CACHED_FOR = f"{SERVER_CACHE_TTL:g} s"
_APPLIES_WITHIN = (
    f"A running serve or worker applies the change within {_CACHED_FOR} (it keeps workspace "
    "settings that long)."
)


def _verify_limits(parser: argparse.ArgumentParser) -> None:
    # D34's limits; each left out stays as it is (the defaults: 5, 5, 30, 10).
    parser.add_argument(
        "--verify-max-checks",
        type=int,
        metavar="N",
        help="one-time codes: the N-th wrong code fails a verification (5)",
    )
    parser.add_argument(
        "--verify-max-sends",
        type=int,
        metavar="N",
        help="one-time codes: at most N sends per verification (5)",
    )
    parser.add_argument(
        "--verify-cooldown",
        type=int,
        metavar="SECONDS",
        help="one-time codes: no re-send within SECONDS of the last (30)",
    )
    parser.add_argument("--verify-hourly-limit", type=int, metavar="N",
                        help="one-time codes: at most N verifications per recipient an hour "
                        "(10)")  # fmt: skip
    parser.add_argument("--verify-whatsapp-template", metavar="NAME",
                        help="one-time codes: the approved WhatsApp authentication template "
                        "codes go by on bizchat")  # fmt: skip
    parser.add_argument("--verify-escalate-after", type=int, metavar="SECONDS",
                        help="one-time codes: wait SECONDS for delivered before the next "
                        "channel (30)")  # fmt: skip
    # The SMS-pumping guard's (20/10m, 6, 10/10m).
    parser.add_argument("--verify-prefix-limit", metavar="N/WINDOW",
                        help="one-time codes: at most N starts to numbers of one range per "
                        "WINDOW (20/10m); off turns it off")  # fmt: skip
    parser.add_argument("--verify-prefix-digits", type=int, metavar="N",
                        help="one-time codes: a range is +90 and N digits (6)")  # fmt: skip
    parser.add_argument("--verify-address-limit", metavar="N/WINDOW",
                        help="one-time codes: at most N starts per client_ip per WINDOW "
                        "(10/10m); off turns it off")  # fmt: skip


_WORKSPACE_LABELS = {"id": "id", "name": "name", "monthly_quota": "monthly quota",
                     "retry_unavailable": "retry unavailable", "queue_ttl": "queue TTL (s)",
                     "recipient_limit": "recipient limit", "quiet_hours": "quiet hours",
                     "consent_policy": "consent policy", "mask_live_text": "mask live text",
                     "created_at": "created", "verify_max_checks": "verify: wrong codes",
                     "verify_max_sends": "verify: sends", "verify_cooldown": "verify: cooldown (s)",
                     "verify_hourly_limit": "verify: per recipient an hour",
                     "verify_whatsapp_template": "verify: WhatsApp template",
                     "verify_escalate_after": "verify: escalate after (s)",
                     "verify_prefix_limit": "verify: per number range",
                     "verify_prefix_digits": "verify: range digits",
                     "verify_address_limit": "verify: per client address"}  # fmt: skip


async def _create_workspace(m: Messenger, args: argparse.Namespace) -> Report:
    from .._access.flood_guard import DEFAULT_RECIPIENT_LIMIT, parse_recipient_limit
    from .._domain import DEFAULT_QUEUE_TTL

    limit: RecipientLimit | None = DEFAULT_RECIPIENT_LIMIT
    if args.recipient_limit is not None:
        limit = parse_recipient_limit(args.recipient_limit)
    workspace = await m.workspaces.create(
        args.name,
        monthly_quota=args.monthly_quota,
        queue_ttl=args.queue_ttl or DEFAULT_QUEUE_TTL,
        recipient_limit=limit,
    )
    if args.retry_unavailable:
        workspace = await m.workspaces.set_retry_unavailable(workspace.id, True)
    return fields_report(workspace_json(workspace), labels=_WORKSPACE_LABELS)


async def _update(m: Messenger, args: argparse.Namespace) -> Report:
    from .._access.flood_guard import parse_recipient_limit

    workspace = await m.workspaces.get(args.workspace_id)
    # Every value is read before anything changes: a refused one changes nothing.
    new_limit = args.recipient_limit
    limit = parse_recipient_limit(new_limit) if new_limit is not None else None
    quiet = _quiet_setting(args)
    verify = await _verify_settings(m, workspace.id, args)
    content = await content_settings(m, workspace.id, args)
    guard = await _guard_settings(m, workspace.id, args)
    if args.queue_ttl is not None:
        workspace = await m.workspaces.set_queue_ttl(workspace.id, args.queue_ttl)
    if new_limit is not None:
        workspace = await m.workspaces.set_recipient_limit(workspace.id, limit)
    if args.retry_unavailable is not None:
        workspace = await m.workspaces.set_retry_unavailable(workspace.id, args.retry_unavailable)
    if args.quiet_hours is not None:
        workspace = await m.workspaces.set_quiet_hours(workspace.id, quiet)
    if args.consent_policy is not None:
        workspace = await m.consents.set_policy(workspace.id, args.consent_policy)
    if args.mask_live_text is not None:
        workspace = await m.workspaces.set_text_masking(workspace.id, args.mask_live_text)
    if verify is not None:
        await m.verifications.set_settings(workspace.id, verify)
    if content is not None:
        workspace = await m.content.set_rules(workspace.id, content)
    if guard is not None:
        await m.verifications.guard.set_settings(workspace.id, guard)
    changed = verify is not None or content is not None or guard is not None or any(
        value is not None
        for value in (
            args.queue_ttl, new_limit, args.retry_unavailable, args.quiet_hours,
            args.consent_policy, args.mask_live_text,
        )
    )  # fmt: skip
    note = _APPLIES_WITHIN if changed else ""
    report = {
        **workspace_json(workspace),
        **_verify_json(await m.verifications.settings(workspace.id)),
        **content_json(workspace.content_rules),
        **_guard_json(await m.verifications.guard.settings(workspace.id)),
    }
    labels = {**_WORKSPACE_LABELS, **CONTENT_LABELS}
    return fields_report(report, labels=labels, note=note)


async def _verify_settings(
    m: Messenger, workspace_id: str, args: argparse.Namespace
) -> VerificationSettings | None:
    """The workspace's Verify limits with the options given, checked (a 400 naming the
    setting) before anything changes; ``None`` when no option was given."""
    from dataclasses import replace

    changes = {
        "max_checks": args.verify_max_checks,
        "max_sends": args.verify_max_sends,
        "resend_cooldown": None if args.verify_cooldown is None
        else timedelta(seconds=args.verify_cooldown),
        "hourly_limit": args.verify_hourly_limit,
        "whatsapp_template": args.verify_whatsapp_template,
        "escalate_after": None if args.verify_escalate_after is None
        else timedelta(seconds=args.verify_escalate_after),
    }  # fmt: skip
    given = {name: value for name, value in changes.items() if value is not None}
    if not given:
        return None
    return replace(await m.verifications.settings(workspace_id), **given)


async def _guard_settings(
    m: Messenger, workspace_id: str, args: argparse.Namespace
) -> GuardSettings | None:
    """The workspace's SMS-pumping guard with the options given, checked (a 400 naming the
    setting) before anything changes; ``None`` when no option was given."""
    from dataclasses import replace

    from ..verifications._guard_rules import parse_velocity

    given: dict[str, object] = {}
    if args.verify_prefix_limit is not None:
        given["prefix_limit"] = parse_velocity(args.verify_prefix_limit, "prefix_limit")
    if args.verify_prefix_digits is not None:
        given["prefix_digits"] = args.verify_prefix_digits
    if args.verify_address_limit is not None:
        given["address_limit"] = parse_velocity(args.verify_address_limit, "address_limit")
    if not given:
        return None
    return replace(await m.verifications.guard.settings(workspace_id), **given)  # type: ignore[arg-type]


def _guard_json(settings: GuardSettings) -> JsonObject:
    def text(velocity: object) -> str:
        return "off" if velocity is None else str(velocity)

    return {
        "verify_prefix_limit": text(settings.prefix_limit),
        "verify_prefix_digits": settings.prefix_digits,
        "verify_address_limit": text(settings.address_limit),
    }


def _verify_json(settings: VerificationSettings) -> JsonObject:
    return {
        "verify_max_checks": settings.max_checks,
        "verify_max_sends": settings.max_sends,
        "verify_cooldown": settings.resend_cooldown.total_seconds(),
        "verify_hourly_limit": settings.hourly_limit,
        "verify_whatsapp_template": settings.whatsapp_template,
        "verify_escalate_after": settings.escalate_after.total_seconds(),
    }


def _quiet_setting(args: argparse.Namespace) -> QuietHours | None:
    from .._schedule import parse_quiet_hours

    if args.quiet_hours is None or args.quiet_hours.strip().lower() == "off":
        return None
    return parse_quiet_hours(args.quiet_hours, zone=args.quiet_zone, scope=args.quiet_scope)


async def _list_workspaces(m: Messenger, args: argparse.Namespace) -> Report:
    rows = [workspace_json(w) for w in await m.workspaces.list()]
    return table_report(rows, WORKSPACE_COLUMNS, empty="No workspaces.")


# -------------------------------------------------------------------------------- API keys


def add_keys(commands: Subparsers) -> None:
    group = add_group(commands, "keys", help="create, list and revoke API keys")
    create = add_command(
        group,
        "create",
        help="create an API key (its secret is printed this once)",
        run=admin_command(_create_key),
    )
    _workspace(create)
    create.add_argument(
        "--test", action="store_true", help="a test key (um_test_…): sends are simulated"
    )
    create.add_argument("--name", help="a label to recognise the key by")
    create.add_argument(
        "--expires-at", type=aware_datetime, metavar="ISO", help="e.g. 2027-01-31T00:00:00Z"
    )
    create.add_argument(
        "--rate-limit", type=finite_number, metavar="R", help="requests per second (default 50)"
    )
    create.add_argument("--rate-burst", type=int, metavar="B", help="burst size (default 100)")
    listing = add_command(
        group, "list", help="list a workspace's keys (prefixes only)", run=admin_command(_list_keys)
    )
    _workspace(listing)
    revoke = add_command(group, "revoke", help="revoke a key", run=admin_command(_revoke_key))
    revoke.add_argument("key_id", metavar="KEY_ID")


_KEY_LABELS = {"id": "id", "workspace_id": "workspace", "display_prefix": "prefix",
               "name": "name", "status": "status", "expires_at": "expires",
               "revoked_at": "revoked"}  # fmt: skip


async def _create_key(m: Messenger, args: argparse.Namespace) -> Report:
    created = await m.keys.create(
        args.workspace,
        livemode=not args.test,
        name=args.name,
        expires_at=args.expires_at,
        rate_limit=args.rate_limit,
        rate_burst=args.rate_burst,
    )
    data = {**api_key_json(created.record, m.clock.now()), "api_key": created.secret}
    labels = {**_KEY_LABELS, "api_key": "api key"}
    note = "Store the key now: only its hash is kept, it cannot be shown again."
    return fields_report(data, labels=labels, note=note)


async def _list_keys(m: Messenger, args: argparse.Namespace) -> Report:
    await m.workspaces.get(args.workspace)  # an unknown workspace is an error, not "no keys"
    now = m.clock.now()
    rows = [api_key_json(k, now) for k in await m.keys.list(args.workspace)]
    return table_report(rows, API_KEY_COLUMNS, empty="No API keys.")


async def _revoke_key(m: Messenger, args: argparse.Namespace) -> Report:
    key = await m.keys.revoke(args.key_id)
    return fields_report(api_key_json(key, m.clock.now()), labels=_KEY_LABELS)


# ------------------------------------------------------------------------------- templates


def add_templates(commands: Subparsers) -> None:
    group = add_group(commands, "templates", help="set, list and delete message templates")
    put = add_command(
        group, "set", help="create or replace a template", run=admin_command(_set_template)
    )
    _workspace(put)
    put.add_argument("key", metavar="KEY", help=TEMPLATE_KEY_PATTERN)
    put.add_argument("body", metavar="BODY", help="the text, with {{ name }} placeholders")
    put.add_argument("--description")
    put.add_argument(
        "--provider-template", metavar="NAME", help="bizchat: the WhatsApp template it maps to"
    )
    put.add_argument(
        "--provider-language", metavar="CODE", help="bizchat: that template's language, e.g. tr"
    )
    listing = add_command(
        group, "list", help="list a workspace's templates", run=admin_command(_list_templates)
    )
    _workspace(listing)
    delete = add_command(
        group, "delete", help="delete a template", run=admin_command(_delete_template)
    )
    _workspace(delete)
    delete.add_argument("key", metavar="KEY")


_TEMPLATE_LABELS = {"key": "key", "body": "body", "description": "description",
                    "provider_template": "provider template",
                    "provider_language": "provider language", "updated_at": "updated"}  # fmt: skip


async def _set_template(m: Messenger, args: argparse.Namespace) -> Report:
    template = await m.templates.set(
        args.workspace,
        args.key,
        args.body,
        description=args.description,
        provider_template=args.provider_template,
        provider_language=args.provider_language,
    )
    hints, note = await template_hints(m, args.workspace, template.body)
    data = {**template_json(template), **hints}
    return fields_report(data, labels=_TEMPLATE_LABELS, note=note)


async def _list_templates(m: Messenger, args: argparse.Namespace) -> Report:
    await m.workspaces.get(args.workspace)
    rows = [template_json(t) for t in await m.templates.list(args.workspace)]
    return table_report(rows, TEMPLATE_COLUMNS, empty="No templates.")


async def _delete_template(m: Messenger, args: argparse.Namespace) -> Report:
    await m.workspaces.get(args.workspace)
    await m.templates.delete(args.workspace, args.key)
    data: JsonObject = {"workspace_id": args.workspace, "key": args.key, "deleted": True}
    return Report(data, f"Deleted template {args.key}.")


# ------------------------------------------------------------------------------- allowlist


def add_allowlist(commands: Subparsers) -> None:
    group = add_group(
        commands, "allowlist", help="the IP addresses and networks that may call a workspace"
    )
    add = add_command(
        group, "add", help="admit an address or CIDR", run=admin_command(_allowlist_add)
    )
    _workspace(add)
    add.add_argument("cidr", metavar="CIDR", help="e.g. 203.0.113.7, 10.0.0.0/8, 2001:db8::/32")
    remove = add_command(
        group, "remove", help="remove an entry", run=admin_command(_allowlist_remove)
    )
    _workspace(remove)
    remove.add_argument("cidr", metavar="CIDR")
    listing = add_command(
        group, "list", help="list the entries (none: every address may call)",
        run=admin_command(_allowlist_list),
    )  # fmt: skip
    _workspace(listing)


async def _allowlist_add(m: Messenger, args: argparse.Namespace) -> Report:
    entry = await m.allowlist.add(args.workspace, args.cidr)
    data: JsonObject = {"workspace_id": args.workspace, "entry": entry}
    return Report(data, f"Added {entry}; only listed addresses may call this workspace now.")


async def _allowlist_remove(m: Messenger, args: argparse.Namespace) -> Report:
    from .._access.authorize import normalize_allowlist_entry

    await m.allowlist.remove(args.workspace, args.cidr)
    entry = normalize_allowlist_entry(args.cidr)  # as stored, e.g. 10.0.0.1/32 -> 10.0.0.1
    left = await m.allowlist.list(args.workspace)
    data: JsonObject = {"workspace_id": args.workspace, "removed": entry, "remaining": len(left)}
    note = "" if left else " The allowlist is empty: every address may call."
    return Report(data, f"Removed {entry}.{note}")


async def _allowlist_list(m: Messenger, args: argparse.Namespace) -> Report:
    entries = await m.allowlist.list(args.workspace)
    empty = "The allowlist is empty: every address may call this workspace."
    data: list[JsonValue] = [*entries]
    return Report(data, "\n".join(entries) if entries else empty)
