"""What every dashboard page handler is given (:class:`Page`) and how it answers: the
rendering of templates, redirects and errors, in one place.

Templates autoescape everything (Jinja2 ``autoescape=True``): a workspace name, a template
body or a recipient with markup in it is shown as text. Nothing is marked safe.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Final
from zoneinfo import ZoneInfo

import jinja2
import jinja2.runtime
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from .._access.principal import Principal
from .._domain import Workspace
from .._errors import MessagingError, ResourceNotFound
from .._figures import percent, plural
from .._messenger import Messenger
from .._schedule import DEFAULT_QUIET_ZONE
from .._version import __version__
from ..users._store import User
from ._auth import SignedIn
from ._forms import Form
from ._notices import Notice, Notices

__all__ = ["NAV", "Page", "Templates", "Viewer", "display_zone", "field_errors", "provider_label"]

#: The navigation, in order: (text, path). The text is what a support person clicks.
NAV: Final = (
    ("Overview", "/"),
    ("Send a message", "/compose"),
    ("Messages", "/messages"),
    ("API keys", "/keys"),
    ("Connections", "/connections"),
    ("Templates", "/templates"),
    ("Allowlist", "/allowlist"),
    ("Suppressions", "/suppressions"),
    ("Consents", "/consents"),
    ("İYS", "/iys"),
    ("Verifications", "/verifications"),
    ("Webhooks", "/webhooks"),
    ("Audit log", "/audit"),
)


class Templates:
    """The package's Jinja2 templates, overridable by name from ``extra_dirs`` first."""

    def __init__(self, extra_dirs: tuple[Path, ...] = ()) -> None:
        loaders: list[jinja2.BaseLoader] = [jinja2.FileSystemLoader(d) for d in extra_dirs]
        loaders.append(jinja2.PackageLoader("unified_messaging.dashboard", "templates"))
        self._env = jinja2.Environment(
            loader=jinja2.ChoiceLoader(loaders),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self._env.globals["version"] = __version__
        # A rate reads as the command line prints it (never 100.0 % short of it).
        self._env.filters["percent"] = percent
        self._env.filters["plural"] = plural
        # A provider code as a person reads it: ``sms_c · Verimor``.
        self._env.filters["provider"] = provider_label
        # A time as the workspace's people read it: in its zone (the page names the zone).
        self._env.filters["local"] = _local_time
        # A webhook's body as its receiver got it, indented to be read.
        self._env.filters["payload"] = payload_text

    def render(self, name: str, context: dict[str, object], *, status: int = 200) -> Response:
        html = self._env.get_template(name).render(context)
        return HTMLResponse(html, status_code=status, headers={"Cache-Control": "no-store"})


@jinja2.pass_context
def _local_time(context: jinja2.runtime.Context, moment: datetime, seconds: bool = True) -> str:
    zone = ZoneInfo(str(context.get("zone", "UTC")))
    return moment.astimezone(zone).strftime("%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M")


#: The most of a webhook body a page shows; the rest is cut with a note.
PAYLOAD_SHOWN: Final = 8192


def payload_text(body: bytes) -> str:
    """A delivery's JSON body, indented (the bytes as UTF-8 text if it is not JSON), at
    most :data:`PAYLOAD_SHOWN` characters. Autoescaping makes it text on the page."""
    text = body.decode("utf-8", errors="replace")
    with contextlib.suppress(ValueError):
        text = json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    if len(text) > PAYLOAD_SHOWN:
        return text[:PAYLOAD_SHOWN] + f"\n… ({len(text) - PAYLOAD_SHOWN:,} more characters)"
    return text


def display_zone(workspace: Workspace | None) -> str:
    """The zone the dashboard shows a workspace's times in: its quiet hours' zone when it
    has quiet hours, else ``Europe/Istanbul`` (the quiet hours' default). The API answers
    in UTC whatever this says."""
    if workspace is not None and workspace.quiet_hours is not None:
        return workspace.quiet_hours.zone
    return DEFAULT_QUIET_ZONE


def provider_label(code: object) -> str:
    """``sms_c · Verimor``: the code a request names, and the provider a person knows
    (the code alone for a value that is none of ours)."""
    from ..providers.base import PROFILES

    profile = PROFILES.get(str(code))  # type: ignore[call-overload]
    return str(code) if profile is None else f"{code} · {profile.name}"


def root_path(request: Request) -> str:
    """Where the dashboard is mounted (``/dashboard`` under ``create_app``)."""
    return str(request.scope.get("root_path", "")).rstrip("/")


@dataclass(frozen=True, slots=True)
class Viewer:
    """The signed-in user, and what they look at: one workspace, test or live data."""

    signed_in: SignedIn
    workspace: Workspace | None
    workspaces: tuple[Workspace, ...]
    client_address: str | None

    @property
    def user(self) -> User:
        return self.signed_in.user

    @property
    def livemode(self) -> bool:
        return self.signed_in.session.livemode

    @property
    def csrf_token(self) -> str:
        return self.signed_in.session.csrf_token


@dataclass
class Page:
    """One request to a page handler: the request, its form, the viewer and the means to
    answer. Handlers call ``messenger``'s methods only; the rules are there."""

    request: Request
    viewer: Viewer
    messenger: Messenger
    templates: Templates
    form: Form = field(default_factory=Form)
    notices: Notices | None = None
    #: The one-time notices this page shows (taken from the session as the page loaded).
    shown: tuple[Notice, ...] = ()

    @property
    def root(self) -> str:
        return root_path(self.request)

    @property
    def is_htmx(self) -> bool:
        return self.request.headers.get("hx-request") == "true"

    async def principal(self) -> Principal:
        """The viewer's workspace and mode as a principal: reads through it are isolated
        exactly as an API key's are (D2)."""
        workspace = self.require_workspace()
        return await self.messenger.principal(workspace.id, livemode=self.viewer.livemode)

    def require_workspace(self) -> Workspace:
        if self.viewer.workspace is None:
            raise NoWorkspace
        return self.viewer.workspace

    def render(self, name: str, *, status: int = 200, **context: object) -> Response:
        return self.render_context(name, context, status=status)

    def render_context(
        self, name: str, context: dict[str, object], *, status: int = 200
    ) -> Response:
        """The template ``name`` with ``context`` and what every page shows (nav, viewer)."""
        nav = [(text, self.root + path) for text, path in NAV]
        base = {
            "root": self.root,
            "viewer": self.viewer,
            "nav": nav,
            "path": self.request.url.path,
            "here": self.request.url.path.removeprefix(self.root) or "/",
            "csrf_token": self.viewer.csrf_token,
            "notices": self.shown,
            "errors": {},
            "zone": display_zone(self.viewer.workspace),
        }
        return self.templates.render(name, {**base, **context}, status=status)

    def redirect(self, path: str) -> Response:
        """303 to a dashboard path (an htmx request follows it with ``HX-Redirect``)."""
        url = self.root + path
        if self.is_htmx:
            return Response(status_code=204, headers={"HX-Redirect": url})
        return RedirectResponse(url, status_code=303)

    async def done(self, path: str, notice: Notice | None = None) -> Response:
        """A change was made: 303 to ``path`` (post/redirect/get), where ``notice`` is shown
        once. Never a page of its own, so a refresh cannot make the change twice."""
        if notice is not None and self.notices is not None:
            await self.notices.leave(self.viewer.signed_in, notice)
        return self.redirect(path)

    def error(self, exc: MessagingError) -> Response:
        return self.render("error.html", status=exc.http_status, code=exc.code, message=exc.message)


def field_errors(exc: MessagingError | None) -> dict[str, str]:
    """A refused form's errors by field name, to be shown beside each field (the admin
    rules name the field in ``details``); an error naming none is shown above the form."""
    details = getattr(exc, "details", ())
    return {detail.field: detail.message for detail in details if detail.field}


class NoWorkspace(ResourceNotFound):
    """There is no workspace to show yet (an operator before the first one is created): a
    ``NOT_FOUND`` of the one error tree, with the way to make one."""

    default_message = (
        "There is no workspace yet. Create one with: unified-messaging workspaces create NAME"
    )
