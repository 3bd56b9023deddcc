"""The dashboard (D31): a web console at ``/dashboard`` over the same ``Messenger`` admin
methods as the command line.

``create_dashboard(messenger)`` is the app on its own, to mount anywhere;
``create_app(messenger, dashboard=True)`` mounts it at ``/dashboard`` beside the REST API,
and ``unified-messaging serve`` does that. Needs the ``dashboard`` extra (Jinja2, argon2-cffi).

- ``_auth``: sessions, one-time login links, the sign-in throttle, which workspace a user sees
- ``_csrf``: the ``Origin`` check and the CSRF token
- ``_app``: the guard every page passes, the security headers, the Starlette app
- ``_ui``: what a page handler is given and how it answers (templates, redirects, errors)
- ``_pages/``: one module per page, each calling ``Messenger`` methods only
- ``templates/``, ``static/``: Jinja2 templates; vendored htmx and the CSS (no CDN)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.routing import BaseRoute

from .._messenger import Messenger
from ._app import Dashboard
from ._auth import LINK_TOKEN_PARAMETER, Sessions
from ._pages import (
    allowlist,
    audit,
    compose,
    connections,
    consents,
    iys,
    keys,
    messages,
    overview,
    session,
    suppressions,
    templates,
    verifications,
    webhooks,
)

__all__ = ["create_dashboard", "issue_login_link"]


def create_dashboard(
    messenger: Messenger,
    *,
    trusted_proxies: Iterable[str] = (),
    secure_cookies: bool | None = None,
    public_url: str | None = None,
    template_dirs: Sequence[Path] = (),
    open_messenger: bool = True,
) -> Starlette:
    """The dashboard as an ASGI app, to mount under any prefix (``/dashboard``...).

    ``trusted_proxies``: as for ``create_app`` (whose ``X-Forwarded-For`` is believed, for
    the sign-in throttle and the audit log's client address, and whose
    ``X-Forwarded-Proto: https`` makes a request HTTPS). ``public_url``: the address users
    reach the dashboard's server at; an ``https://`` one makes every request HTTPS (a proxy
    that ends TLS may not say so). Over HTTPS, cookies are ``Secure`` and answers carry
    ``Strict-Transport-Security``. ``secure_cookies``: mark cookies ``Secure`` always
    (``True``) or never (``False``); ``None`` (the default) does over HTTPS.
    ``template_dirs``: directories whose templates override the package's by name.
    ``open_messenger``: the app's lifespan opens and closes ``messenger`` (a host that
    mounts it runs the lifespan, or opens the messenger itself).
    """
    dashboard = Dashboard(
        messenger,
        trusted_proxies=trusted_proxies,
        secure_cookies=secure_cookies,
        public_url=public_url,
        template_dirs=template_dirs,
    )
    routes: list[BaseRoute] = []
    pages = (
        session, overview, compose, messages, keys, connections, templates, allowlist,
        suppressions, consents, iys, verifications, webhooks, audit,
    )  # fmt: skip
    for page in pages:
        routes.extend(page.routes(dashboard))
    app = dashboard.app(routes)
    if open_messenger:
        from ..asgi._runtime import messenger_lifespan

        app.router.lifespan_context = messenger_lifespan(messenger)
    return app


async def issue_login_link(messenger: Messenger, email: str) -> str:
    """A one-time login link's path for the user with this e-mail, below the dashboard's
    root (``/login/link?token=<token>``): used once, within 24 hours (``serve --demo``
    prints one). The token is a query parameter the access log masks, never a path
    segment it would write whole."""
    user = await messenger.users.find(email)
    token = await Sessions(messenger).issue_link(user)
    return f"/login/link?{urlencode({LINK_TOKEN_PARAMETER: token})}"
