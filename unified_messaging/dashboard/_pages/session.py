"""Signing in and out (D31), the one-time login link, and the view switches (the workspace
picker and the test/live switch).

Sign-in has no session to carry a CSRF token yet, so its form carries a token of its own that
must match a cookie set with the form (a double submit), besides the ``Origin`` check: a
forged sign-in cannot slip a victim into the attacker's account.
"""

from __future__ import annotations

import hmac
from typing import Final

from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from ..._errors import MessagingError
from ..._figures import plural
from ...users._store import User
from .._app import SESSION_COOKIE, Dashboard, Handler, route
from .._auth import LINK_TOKEN_PARAMETER, new_token
from .._csrf import CSRF_FIELD, origin_allowed
from .._forms import Form, FormTooLarge, read_form
from .._ui import Page, root_path

__all__ = ["routes"]

_LOGIN_COOKIE: Final = "um_login"


def routes(dashboard: Dashboard) -> list[Route]:
    views = _SignIn(dashboard)
    return [
        route("/login", views.login, "GET", "POST"),
        route("/login/link", views.link, "GET", "POST"),
        route("/logout", dashboard.guarded(_logout(dashboard)), "POST"),
        route("/view", dashboard.guarded(_switch_view(dashboard)), "POST"),
    ]


class _SignIn:
    def __init__(self, dashboard: Dashboard) -> None:
        self._d = dashboard

    async def login(self, request: Request) -> Response:
        if request.method == "GET":
            return self._form(request)
        form = await self._checked_form(request)
        if isinstance(form, Response):
            return form
        email, client = form.get("email"), self._d.client_address(request.scope)
        # Counted before the password is checked: racing attempts cannot pass the limit,
        # and a refused one costs no password check.
        wait = await self._d.throttle.claim(email, client)
        if wait is not None:
            minutes = max(1, round(wait.total_seconds() / 60))
            message = f"Too many sign-in attempts. Try again in {plural(minutes, 'minute')}."
            response = self._form(request, error=message, email=email, status=429)
            response.headers["Retry-After"] = str(max(1, int(wait.total_seconds())))
            return response
        user = await self._d.messenger.users.check_password(email, form.get("password"))
        if user is None:
            return self._form(request, error="Wrong e-mail or password.", email=email, status=401)
        await self._d.throttle.succeeded(email, client)
        return await self._signed_in(request, user)

    async def link(self, request: Request) -> Response:
        """A one-time login link, ``/login/link?token=…``: the GET (which a link preview
        may make) only shows a button, whose form posts back to the same link."""
        if request.method == "GET":
            # The button posts to the link itself, its token still in the query.
            here = f"{request.url.path}?{request.url.query}"
            return self._form(request, template="link.html", action=here)
        form = await self._checked_form(request)
        if isinstance(form, Response):
            return form
        token = request.query_params.get(LINK_TOKEN_PARAMETER, "")
        user = await self._d.sessions.redeem_link(token)
        if user is None:
            message = "This sign-in link has been used or has expired. Sign in with your password."
            return self._form(request, error=message, status=410)
        return await self._signed_in(request, user)

    async def _signed_in(self, request: Request, user: User) -> Response:
        previous = request.cookies.get(SESSION_COOKIE)
        session_id = await self._d.sessions.start(user, replacing=previous)
        response = RedirectResponse(_next(request), status_code=303)
        self._d.set_session_cookie(response, request, session_id)
        response.delete_cookie(_LOGIN_COOKIE, path=root_path(request) or "/")
        return response

    async def _checked_form(self, request: Request) -> Form | Response:
        """The sign-in form, if it came from our own page (``Origin`` and double submit)."""
        if not origin_allowed(request):
            return PlainTextResponse("This request came from another site.", status_code=403)
        try:
            form = await read_form(request)
        except FormTooLarge:
            return PlainTextResponse("The form is too large.", status_code=413)
        cookie = request.cookies.get(_LOGIN_COOKIE, "")
        given = form.get(CSRF_FIELD)
        if not cookie or not hmac.compare_digest(cookie.encode(), given.encode()):
            return self._form(
                request, error="The sign-in form had expired. Please try again.", status=403
            )
        return form

    def _form(
        self,
        request: Request,
        *,
        template: str = "login.html",
        error: str | None = None,
        email: str = "",
        action: str | None = None,
        status: int = 200,
    ) -> Response:
        token = new_token()
        response = self._d.templates.render(
            template,
            {
                "root": root_path(request),
                "csrf_token": token,
                "error": error,
                "email": email,
                "next": _next(request),
                "action": action or request.url.path,
            },
            status=status,
        )
        response.set_cookie(
            _LOGIN_COOKIE,
            token,
            path=root_path(request) or "/",
            httponly=True,
            samesite="strict",
            secure=self._d.secure(request),
        )
        return response


def _next(request: Request) -> str:
    """Where to go after signing in: a path of this dashboard only (never another site)."""
    root = root_path(request)
    wanted = request.query_params.get("next", "")
    inside = wanted.startswith(root + "/") and not wanted.startswith(("//", "/\\"))
    if inside and "\\" not in wanted and "://" not in wanted:
        return wanted
    return root + "/"


def _logout(dashboard: Dashboard) -> Handler:
    async def logout(page: Page) -> Response:
        await dashboard.sessions.end(page.viewer.signed_in.session_id)
        response = RedirectResponse(page.root + "/login", status_code=303)
        dashboard.clear_session_cookie(response, page.request)
        return response

    return logout


def _switch_view(dashboard: Dashboard) -> Handler:
    async def switch(page: Page) -> Response:
        """The workspace picker (operators) and the test/live switch (everyone)."""
        workspace_id = page.form.get("workspace_id") or None
        if workspace_id is not None and page.viewer.user.is_operator:
            await page.messenger.workspaces.get(workspace_id)  # 404 for an unknown one
        elif workspace_id is not None:
            workspace_id = None  # a member's workspace is theirs; nothing to switch
        mode = page.form.get("livemode")
        livemode = None if mode == "" else mode == "live"
        try:
            await dashboard.sessions.change_view(
                page.viewer.signed_in, workspace_id=workspace_id, livemode=livemode
            )
        except MessagingError as exc:
            return page.error(exc)
        back = page.form.get("back", "/")
        return page.redirect(back if back.startswith("/") and not back.startswith("//") else "/")

    return switch
