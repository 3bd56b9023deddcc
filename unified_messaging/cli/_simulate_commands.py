"""``simulate inbound``: a reply in test mode, as if a recipient sent it.

The reply takes the path a provider's push takes (``Messenger.simulate_inbound``): a stop word
suppresses the sender in the workspace's test mode, and its webhook endpoints get
``message.inbound`` (delivered by the running ``serve`` or ``worker``). Test mode only: the
command has no ``--live``.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, get_args

from .._types import Channel, ProviderCode
from ._args import Subparsers, add_command, add_group
from ._args import workspace_option as _workspace
from ._context import admin_command
from ._output import Report, fields_report

if TYPE_CHECKING:
    from .._messenger import Messenger

__all__ = ["add_simulate"]

_LABELS = {"id": "id", "channel": "channel", "provider": "provider", "sender": "from",
           "text": "text", "opt_out": "opt-out", "stop_word": "stop word",
           "received_at": "received"}  # fmt: skip


def add_simulate(commands: Subparsers) -> None:
    group = add_group(commands, "simulate", help="simulate what recipients do, in test mode")
    inbound = add_command(
        group,
        "inbound",
        help="a reply from a recipient (STOP suppresses them), in test mode",
        description="A reply from --from, as if the provider of the channel pushed it: a stop "
        "word (STOP, DUR, İPTAL, RET, UM_STOP_WORDS; /stop on chatbot) suppresses the sender "
        "in the workspace's test mode, and its webhook endpoints get message.inbound.",
        run=admin_command(_inbound),
    )
    _workspace(inbound)
    inbound.add_argument("--from", dest="sender", required=True, metavar="NUMBER",
                         help="who wrote (a chat id for chatbot)")  # fmt: skip
    inbound.add_argument("--text", required=True, metavar="TEXT", help="what they wrote")
    inbound.add_argument("--channel", choices=get_args(Channel), default="sms",
                         help="the channel it arrives on (default: sms)")  # fmt: skip
    inbound.add_argument("--provider", choices=get_args(ProviderCode),
                         help="its connection (default: the channel's default)")  # fmt: skip


async def _inbound(m: Messenger, args: argparse.Namespace) -> Report:
    principal = await m.principal(args.workspace, livemode=False)
    request: dict[str, object] = {"from": args.sender, "text": args.text, "channel": args.channel}
    if args.provider is not None:
        request["provider"] = args.provider
    record = await m.test_helpers.inbound(principal, request)
    shown = {k: v for k, v in record.to_dict().items() if k in _LABELS}
    note = "The sender is now suppressed (test mode)." if record.opt_out else ""
    return fields_report(shown, labels=_LABELS, note=note)
