"""The ``unified-messaging demo`` tour: the library's main paths, in test mode, in one run.

It builds a :class:`Messenger` on the in-memory store with a test key and all seven providers
connected, so every send goes to the simulator (D2): nothing leaves the machine and nothing
is charged. Each step calls the façade the way a host application would and reports what came
back to an output callable, as readable lines or as one JSON document per step
(``{"step": …, "result": …}``). The CLI passes ``print``; tests pass a list's ``append``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from types import MappingProxyType
from typing import Final

from ._encoding import analyze_sms
from ._errors import ProviderUnavailable
from ._figures import plural
from ._messenger import Messenger, Principal
from ._models import AttemptOut, ErrorObject, SendResponse
from ._types import ALL_PROVIDERS
from ._version import __version__
from .providers.simulator import SimulatedSubmission, SimulatorSettings
from .vault._core import Vault

__all__ = ["DEMO_SENDER", "DEMO_TEMPLATES", "DemoStep", "add_demo_templates", "run_demo"]

Write = Callable[[str], None]

#: The message header the demo's SMS connections approve and use by default.
DEMO_SENDER = "DEMO"

_TURKISH_SMS = (
    "Merhaba Ayşe Hanım, 1042 numaralı siparişiniz bugün kargoya verildi. Kargo takip kodunuz "
    "TR-55012; tahmini teslimat yarın 18:00. İyi günler dileriz!"
)
_TEMPLATE_BODY = "Merhaba {{ name }}, {{ order }} numaralı siparişiniz kargoda."

#: The templates of a demo workspace (the tour's, and ``serve --demo``'s): docs/rest.md's and
#: docs/cli.md's examples use them by these keys and variables.
DEMO_TEMPLATES: Final[Mapping[str, str]] = MappingProxyType(
    {"order_shipped": _TEMPLATE_BODY, "greet": "Merhaba {{ name }}!"}
)
_BULK_RECIPIENTS = (
    "+90 532 111 22 33",
    "0533 444 55 66",
    "5345556677",
    "0212 555 12 34",  # an Istanbul landline: that item fails, the others go out
    "+90 (542) 888 99 00",
)
_MAGIC = "+90 555 000 00 {:02d}"


async def add_demo_templates(messenger: Messenger, workspace_id: str) -> None:
    """Create :data:`DEMO_TEMPLATES` in the workspace, or put back one whose body was changed.
    One already as it should be is left alone: every ``serve --demo`` restart would otherwise
    save it again, one audit row each time (D32) for no change."""
    stored = {t.key: t.body for t in await messenger.templates.list(workspace_id)}
    for key, body in DEMO_TEMPLATES.items():
        if stored.get(key) != body:
            await messenger.templates.set(workspace_id, key, body)


@dataclass(frozen=True, slots=True)
class DemoStep:
    """One step of the tour: a machine name, what the library answered, a readable summary."""

    step: str
    title: str
    result: dict[str, object]
    lines: tuple[str, ...] = ()

    def to_json(self) -> str:
        return json.dumps({"step": self.step, "result": self.result})

    def to_text(self) -> str:
        return "\n".join((self.title, *(f"  {line}" for line in self.lines), ""))


async def run_demo(write: Write, *, as_json: bool = False) -> list[DemoStep]:
    """Run the tour, handing each step to ``write`` as it completes; return every step."""
    if not as_json:
        write(f"unified-messaging {__version__}: a tour in test mode")
        write("Simulated providers on an in-memory store: nothing leaves this machine.\n")
    # What the simulated providers were handed; the pytest plugin's outbox is this same hook.
    handed: list[SimulatedSubmission] = []
    # A fresh vault, so the demo never depends on (or touches) UM_MASTER_KEYS. Reports due at
    # once: the last step runs the background work and shows one arrive, without waiting.
    messenger = Messenger(
        vault=Vault.generate(),
        on_simulated=handed.append,
        simulator_settings=SimulatorSettings(report_delay=timedelta(0)),
    )
    steps: list[DemoStep] = []
    async with messenger:
        tour = _Tour(messenger, handed)
        for make in tour.steps():
            step = await make()
            steps.append(step)
            write(step.to_json() if as_json else step.to_text())
    if not as_json:
        write("Done. Runnable scripts are in examples/, the API in docs/library.md.")
    return steps


class _Tour:
    """The steps, in order. ``setup`` runs first: it makes the workspace the others send in."""

    def __init__(self, messenger: Messenger, handed: list[SimulatedSubmission]) -> None:
        self._messenger = messenger
        self._handed = handed
        self._auth: Principal | None = None
        self._fallback_job: str | None = None

    def steps(self) -> tuple[Callable[[], Awaitable[DemoStep]], ...]:
        return (
            self.setup,
            self.single_sms,
            self.chatbot,
            self.template,
            self.bulk,
            self.fallback,
            self.iys_refused,
            self.timeout,
            self.get_message,
        )

    @property
    def auth(self) -> Principal:
        assert self._auth is not None, "setup runs first"
        return self._auth

    async def setup(self) -> DemoStep:
        m = self._messenger
        workspace = await m.workspaces.create("Demo workspace")
        for code in ALL_PROVIDERS:
            # Chat channels take no sender; the façade ignores it for them (D3).
            await m.connections.add(
                workspace.id, code, default_sender=DEMO_SENDER, approved_senders=(DEMO_SENDER,)
            )
        key = await m.keys.create(workspace.id, livemode=False, name="demo")
        self._auth = await m.authenticate(key.secret)
        connections = await m.connections.list(workspace.id)
        codes = [c.provider + (" (default)" if c.is_default else "") for c in connections]
        return DemoStep(
            "setup",
            "Setup",
            {
                "workspace_id": workspace.id,
                "livemode": False,
                "api_key_prefix": key.record.display_prefix,
                "connections": [
                    {"provider": c.provider, "channel": c.channel, "is_default": c.is_default}
                    for c in connections
                ],
                "sender": DEMO_SENDER,
            },
            (
                _kv("workspace", f"{workspace.id} ({workspace.name!r})"),
                _kv("API key", f"{key.record.display_prefix}… (a test key: sends are simulated)"),
                _kv("providers", ", ".join(codes)),
                _kv("sender", f"{DEMO_SENDER!r}, approved on every SMS connection"),
            ),
        )

    async def single_sms(self) -> DemoStep:
        to = "0555 123 45 67"
        response = await self._messenger.send(self.auth, {"to": to, "body": _TURKISH_SMS})
        info = analyze_sms(_TURKISH_SMS)
        ucs2 = analyze_sms(_TURKISH_SMS, allow_turkish_shift=False)
        return DemoStep(
            "sms",
            "1. A single SMS, in Turkish",
            response.to_dict(),
            (
                _kv("send", f"to={to!r} body={_short(_TURKISH_SMS)} ({len(_TURKISH_SMS)} chars)"),
                *_answer(response),
                _kv(
                    "encoding",
                    f"{response.encoding}, {plural(response.segments or 0, 'segment')} "
                    f"({info.units}/{info.per_segment} septets); "
                    f"as UCS-2 it would be {plural(ucs2.segments, 'segment')}",
                ),
            ),
        )

    async def chatbot(self) -> DemoStep:
        request = {"to": "@demo_user", "provider": "chatbot", "body": "Siparişiniz yolda!"}
        response = await self._messenger.send(self.auth, request)
        record = await self._messenger.get_message(self.auth, response.job_id)
        return DemoStep(
            "chatbot",
            "2. A chat-bot message",
            response.to_dict(),
            (
                _kv("send", f"to={request['to']!r} provider='chatbot'"),
                *_answer(response),
                _kv("note", f"the bot API has no receipts: its success is final, GET reads "
                            f"{record.status!r}"),
                _kv("", "chat channels take no sender and have no SMS segments"),
            ),
        )  # fmt: skip

    async def template(self) -> DemoStep:
        m = self._messenger
        await add_demo_templates(m, self.auth.workspace_id)
        variables = {"name": "Ayşe", "order": "A-1042"}
        request = {"to": "+90 532 123 45 67", "template": "order_shipped", "variables": variables}
        response = await m.send(self.auth, request)
        handed = [
            s for s in self._handed if s.job_id == response.job_id and s.outcome == "accepted"
        ]
        return DemoStep(
            "template",
            "3. A template send",
            response.to_dict(),
            (
                _kv("template", f"order_shipped = {_TEMPLATE_BODY!r}"),
                _kv("send", f"template='order_shipped' variables={variables}"),
                *_answer(response),
                *(
                    _kv("handed", f"{h.provider} got {h.text!r}, sender {h.sender!r}")
                    for h in handed
                ),
            ),
        )

    async def bulk(self) -> DemoStep:
        items = [{"to": to, "body": "Kampanya: bu hafta kargo bedava!"} for to in _BULK_RECIPIENTS]
        response = await self._messenger.send_bulk(self.auth, {"items": items})
        lines = [
            _kv("send", f"{len(items)} recipients in one request, one of them a landline"),
            _kv("answer", f"total {response.total}, sent {response.sent}, "
                          f"failed {response.failed}"),
        ]  # fmt: skip
        for result in response.results:
            outcome: str = result.status
            if result.error is not None:
                outcome += f" {result.error.code}"
            lines.append(_kv("", f"{result.to:<18} {outcome}"))
        return DemoStep(
            "bulk", "4. A bulk send, one bad recipient", response.to_dict(), tuple(lines)
        )

    async def fallback(self) -> DemoStep:
        to = _MAGIC.format(12)
        request = {"to": to, "body": "Doğrulama kodunuz: 482913", "fallback": ["sms_b", "sms_c"]}
        response = await self._messenger.send(self.auth, request)
        self._fallback_job = response.job_id
        lines = [
            _kv("send", f"to={to!r} (magic: the first 2 providers tried reject it)"),
            _kv("", "primary: sms_a (the workspace default), fallback=['sms_b', 'sms_c']"),
        ]
        lines += [_attempt_line(n, a) for n, a in enumerate(response.attempts or [], 1)]
        lines += _answer(response)
        lines.append(_kv("", "still one message: one job id, one quota unit"))
        return DemoStep("fallback", "5. Fallback across SMS providers", response.to_dict(),
                        tuple(lines))  # fmt: skip

    async def iys_refused(self) -> DemoStep:
        to = _MAGIC.format(2)
        request = {"to": to, "body": "Kampanya: bu hafta kargo bedava!", "fallback": ["sms_b"]}
        response = await self._messenger.send(self.auth, request)
        return DemoStep(
            "iys_refused",
            "6. No IYS consent (commercial SMS in Turkey)",
            response.to_dict(),
            (
                _kv("send", f"to={to!r} (magic: no IYS consent), fallback=['sms_b']"),
                *_answer(response),
                _kv("note", "no exception: a provider's refusal is a 201 with status failed"),
                _kv("", f"recipient-level, so fallback stopped after "
                        f"{plural(len(response.attempts or []), 'attempt')}"),
            ),
        )  # fmt: skip

    async def timeout(self) -> DemoStep:
        to = _MAGIC.format(3)
        try:
            await self._messenger.send(self.auth, {"to": to, "body": "Randevunuz yarın 10:00."})
        except ProviderUnavailable as exc:
            error = exc
        else:  # pragma: no cover - the simulator always times out on ...03
            raise AssertionError("expected ProviderUnavailable")
        assert error.job_id is not None
        record = await self._messenger.get_message(self.auth, error.job_id)
        stored_error = f" {record.error.code}" if record.error else ""
        tries = plural(len(record.attempts), "attempt")
        return DemoStep(
            "timeout",
            "7. The provider times out, no fallback",
            {
                "http_status": error.http_status,
                "error": {"code": error.code, "message": error.message, "job_id": error.job_id},
                "record": record.to_dict(),
            },
            (
                _kv("send", f"to={to!r} (magic: the provider times out)"),
                _kv("raised", f"{type(error).__name__}: {error.http_status} {error.code}, "
                              f"job_id {error.job_id}"),
                _kv("GET", f"the job was kept: {record.status}{stored_error}, {tries}"),
            ),
        )  # fmt: skip

    async def get_message(self) -> DemoStep:
        assert self._fallback_job is not None, "fallback runs first"
        # What a server's background worker does on its own: apply the simulated reports.
        ran = await self._messenger.worker().run_until_idle()
        record = await self._messenger.get_message(self.auth, self._fallback_job)
        tried = " → ".join(f"{a.provider} {a.status}" for a in record.attempts)
        dlr = record.dlr.status if record.dlr is not None else "none"
        return DemoStep(
            "get_message",
            "8. A delivery report, then the status record",
            record.to_dict(),
            (
                _kv("worker", f"ran {plural(ran, 'background item')} (the simulated delivery "
                              f"reports; a server runs them on its own)"),
                _kv("GET", f"{record.job_id} (the fallback message of step 5)"),
                _kv("status", f"{record.status} via {record.provider}, sender {record.sender!r}, "
                              f"{record.encoding}, {plural(record.segments or 0, 'segment')}"),
                _kv("attempts", tried),
                _kv("dlr", f"{dlr}: the report set the final status"),
            ),
        )  # fmt: skip


# ---------------------------------------------------------------------------- formatting


def _kv(label: str, text: str) -> str:
    return f"{label:<9} {text}"


def _short(text: str, limit: int = 40) -> str:
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


def _error_text(error: ErrorObject) -> str:
    return f"{error.code}: {error.message}"


def _answer(response: SendResponse) -> tuple[str, ...]:
    if response.error is not None:
        return (
            _kv("answer", f"{response.status} {response.job_id}"),
            _kv("error", _error_text(response.error)),
        )
    return (_kv("answer", f"{response.status} {response.job_id} to {response.to} "
                          f"via {response.provider}"),)  # fmt: skip


def _attempt_line(number: int, attempt: AttemptOut) -> str:
    why = f" ({attempt.error.code})" if attempt.error is not None else ""
    return _kv(f"try {number}", f"{attempt.provider} {attempt.status}{why}")
