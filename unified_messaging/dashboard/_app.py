"""The dashboard's Starlette app: its routes, the one guard every page passes, the headers.

The guard (:meth:`Dashboard.guarded`) is the one place of D31's request rules: a live
session or the sign-in page; for a state change the ``Origin`` check and the CSRF token,
then the change made under the signed-in user's name (``acting_as``, for the audit log,
D32); for a full page view, the session's one-time notices (``_notices``). Page handlers
run after it and never repeat it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import Final
from urllib.parse import quote

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .._errors import MessagingError
from .._messenger import Messenger
from ..asgi._client_ip import ClientAddress
from ..audit._context import Actor, acting_as
from ._auth import LoginThrottle, Sessions, SignedIn, visible_workspace
from ._csrf import SAFE_METHODS, origin_allowed, token_matches
from ._forms import Form, FormTooLarge, read_form
from ._notices import Notice, Notices
from ._ui import Page, Templates, Viewer, root_path

__all__ = ["SESSION_COOKIE", "STRICT_TRANSPORT_SECURITY", "Dashboard", "Handler", "SecurityHeaders"]

Handler = Callable[[Page], Awaitable[Response]]

SESSION_COOKIE: Final = "um_session"
_STATIC = Path(__file__).parent / "static"

#: D31: no inline script, no framing; forms post only here and no <base> redirects links.
CONTENT_SECURITY_POLICY: Final = (
    "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)
_HEADERS: Final = (
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"referrer-policy", b"no-referrer"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
)


#: RFC 6797: browsers that saw this over HTTPS use only HTTPS for the host for a year (and
#: ignore it over plain HTTP, where a man in the middle could have added it).
STRICT_TRANSPORT_SECURITY: Final = b"max-age=31536000"


class SecurityHeaders:
    """Adds D31's response headers to every answer of the dashboard, static files and
    errors included; ``Strict-Transport-Security`` too when ``https(scope)`` says the
    request came over HTTPS."""

    def __init__(self, app: ASGIApp, *, https: Callable[[Scope], bool]) -> None:
        self.app = app
        self._https = https

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers: tuple[tuple[bytes, bytes], ...] = _HEADERS
        if self._https(scope):
            headers = (*headers, (b"strict-transport-security", STRICT_TRANSPORT_SECURITY))

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {name.lower() for name, _ in message.get("headers", [])}
                extra = [(n, v) for n, v in headers if n not in names]
                message["headers"] = [*message.get("headers", []), *extra]
            await send(message)

        await self.app(scope, receive, with_headers)


class Dashboard:
    """What every page shares: the messenger, sessions, the throttle, the templates."""

    def __init__(
        self,
        messenger: Messenger,
        *,
        trusted_proxies: Iterable[str] = (),
        secure_cookies: bool | None = None,
        public_url: str | None = None,
        template_dirs: Sequence[Path] = (),
    ) -> None:
        self.messenger = messenger
        self.sessions = Sessions(messenger)
        self.throttle = LoginThrottle(messenger)
        self.notices = Notices(messenger)
        self.templates = Templates(tuple(template_dirs))
        self.client_address = ClientAddress(trusted_proxies)
        self._secure = secure_cookies
        # A proxy may end TLS and not say so: a public https:// address settles it.
        self._always_https = public_url is not None and public_url.lower().startswith("https://")

    # -- HTTPS

    def https(self, scope: Scope) -> bool:
        """D31: is this request HTTPS: the public URL is ``https://``, or TLS reached this
        server, or a trusted proxy says ``X-Forwarded-Proto: https``."""
        return self._always_https or self.client_address.https(scope)

    def secure(self, request: Request) -> bool:
        """``Secure`` cookies over HTTPS (or always/never, as the host said)."""
        return self.https(request.scope) if self._secure is None else self._secure

    def set_session_cookie(self, response: Response, request: Request, session_id: str) -> None:
        from ._auth import ABSOLUTE_LIFETIME

        response.set_cookie(
            SESSION_COOKIE,
            session_id,
            max_age=int(ABSOLUTE_LIFETIME.total_seconds()),
            path=root_path(request) or "/",
            httponly=True,
            samesite="lax",
            secure=self.secure(request),
        )

    def clear_session_cookie(self, response: Response, request: Request) -> None:
        response.delete_cookie(
            SESSION_COOKIE,
            path=root_path(request) or "/",
            httponly=True,
            samesite="lax",
            secure=self.secure(request),
        )

    # -- the guard

    def guarded(self, handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        """``handler`` behind D31's rules (see the module docstring)."""

        async def endpoint(request: Request) -> Response:
            signed_in = await self.sessions.resume(request.cookies.get(SESSION_COOKIE))
            if signed_in is None:
                return _to_sign_in(request)
            form = Form()
            shown: tuple[Notice, ...] = ()
            if request.method not in SAFE_METHODS:
                refusal = await self._refuse_forgery(request, signed_in)
                if isinstance(refusal, Response):
                    return refusal
                form = refusal
            elif request.headers.get("hx-request") != "true":
                # A full page shows what the post before it left; htmx's partial reloads
                # (a timeline asking again) leave notices for the page they belong to.
                shown = await self.notices.take(signed_in)
            page = Page(request, await self._viewer(request, signed_in), self.messenger,
                        self.templates, form, self.notices, shown)  # fmt: skip
            actor = Actor(f"dashboard:{signed_in.user.email}", page.viewer.client_address)
            with acting_as(actor):
                try:
                    return await handler(page)
                except MessagingError as exc:
                    return page.error(exc)

        return endpoint

    async def _refuse_forgery(self, request: Request, signed_in: SignedIn) -> Response | Form:
        """403 for a foreign ``Origin`` or a missing or wrong token; else the form."""
        if not origin_allowed(request):
            return _forbidden("This request came from another site.")
        try:
            form = await read_form(request)
        except FormTooLarge:
            return PlainTextResponse("The form is too large.", status_code=413)
        if not token_matches(signed_in.session.csrf_token, request.headers, form.first_values()):
            return _forbidden("The form has expired. Reload the page and try again.")
        return form

    async def _viewer(self, request: Request, signed_in: SignedIn) -> Viewer:
        workspaces = await self.messenger.workspaces.list()
        user = signed_in.user
        shown = visible_workspace(user, signed_in.session.workspace_id, workspaces)
        listed = tuple(workspaces) if user.is_operator else (() if shown is None else (shown,))
        return Viewer(signed_in, shown, listed, self.client_address(request.scope))

    # -- the app

    def app(self, routes: Sequence[BaseRoute]) -> Starlette:
        static = StaticFiles(directory=_STATIC)
        return Starlette(
            routes=[*routes, Mount("/static", app=static, name="static")],
            middleware=[Middleware(SecurityHeaders, https=self.https)],
        )


def _forbidden(message: str) -> Response:
    return PlainTextResponse(message, status_code=403)


def _to_sign_in(request: Request) -> Response:
    """Not signed in: a page view goes to the sign-in page (and back after it); anything
    else is 401, with htmx told to load the sign-in page."""
    login = f"{root_path(request)}/login"
    if request.method in SAFE_METHODS:
        here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        target = f"{login}?next={quote(here, safe='/')}"
        if request.headers.get("hx-request") == "true":
            return Response(status_code=401, headers={"HX-Redirect": target})
        return RedirectResponse(target, status_code=303)
    return Response(status_code=401, headers={"HX-Redirect": login})


def route(path: str, endpoint: Callable[[Request], Awaitable[Response]], *methods: str) -> Route:
    return Route(path, endpoint, methods=list(methods or ("GET",)))
