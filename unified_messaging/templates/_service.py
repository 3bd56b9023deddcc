"""``messenger.templates``: a workspace's message templates (D9): set, get, list, delete,
and the editor's preview. The rendering rules are in :mod:`._templates`."""

from __future__ import annotations

import builtins
import re
from collections.abc import Mapping

from .._clock import Clock
from .._domain import Template
from .._errors import RequestInvalid, TemplateNotFound
from .._types import TEMPLATE_KEY_PATTERN
from ..audit._actions import audited, of_argument
from ..store.base import Store
from ..workspaces._service import Workspaces
from ._preview import TemplatePreview, preview_template
from ._render import body_problem

__all__ = ["Templates"]

_TEMPLATE_KEY = re.compile(TEMPLATE_KEY_PATTERN)
#: WhatsApp's template names and language codes (its "Supported languages" list).
_PROVIDER_TEMPLATE = re.compile(r"[a-z0-9_]{1,512}")
_PROVIDER_LANGUAGE = re.compile(r"[a-z]{2,3}(_[A-Z]{2})?")


class Templates:
    """A workspace's templates: ``messenger.templates.set(ws, "otp", "Kod: {{ code }}")``."""

    def __init__(self, store: Store, clock: Clock, workspaces: Workspaces) -> None:
        self._store = store
        self._clock = clock
        self._workspaces = workspaces

    def __repr__(self) -> str:
        return "<messenger.templates>"

    @audited("template.set", lambda template, _: (template.workspace_id, template.key))
    async def set(
        self,
        workspace_id: str,
        key: str,
        body: str,
        *,
        description: str | None = None,
        provider_template: str | None = None,
        provider_language: str | None = None,
    ) -> Template:
        """Create or replace a template (D9). ``provider_template`` and
        ``provider_language``: for ``bizchat``, the approved WhatsApp template a send through
        it uses (its name, lower-case letters, digits and ``_``) and that template's language
        (``tr``, ``en_US``; default ``tr``); the template's variables fill its parameters in
        the order they first appear in ``body``."""
        await self._workspaces.get(workspace_id)
        if not _TEMPLATE_KEY.fullmatch(key):
            raise RequestInvalid.for_field("key", f"must match {TEMPLATE_KEY_PATTERN}")
        problem = body_problem(body)
        if problem is not None:
            raise RequestInvalid.for_field("body", problem)
        provider_template, provider_language = _provider_template(
            provider_template, provider_language
        )
        now = self._clock.now()
        existing = await self._store.get_template(workspace_id, key)
        template = Template(
            workspace_id=workspace_id,
            key=key,
            body=body,
            created_at=existing.created_at if existing else now,
            updated_at=now,
            description=description,
            provider_template=provider_template,
            provider_language=provider_language,
        )
        await self._store.put_template(template)
        return template

    async def get(self, workspace_id: str, key: str) -> Template:
        template = await self._store.get_template(workspace_id, key)
        if template is None:
            raise TemplateNotFound(f"No template with the key {key!r}.")
        return template

    async def list(self, workspace_id: str) -> builtins.list[Template]:
        return await self._store.list_templates(workspace_id)

    @audited("template.delete", of_argument("key"))
    async def delete(self, workspace_id: str, key: str) -> None:
        if not await self._store.delete_template(workspace_id, key):
            raise TemplateNotFound(f"No template with the key {key!r}.")

    def preview(
        self,
        body: str,
        variables: Mapping[str, object] | None = None,
        *,
        turkish_shift: bool = True,
    ) -> TemplatePreview:
        """A template body rendered with ``variables`` (those missing stay as written), the
        variables it needs, why :meth:`set` would refuse it, and its SMS encoding and
        segments (D9, D24): what the dashboard's template editor shows as you type."""
        return preview_template(body, variables, turkish_shift=turkish_shift)


def _provider_template(name: str | None, language: str | None) -> tuple[str | None, str | None]:
    """D9's WhatsApp template of a template (``bizchat``): a name as WhatsApp allows one,
    and a language code of the form it lists (``tr``, ``en_US``), only with a name; an
    empty one is none. Checked here so a typo is named now, not by every send's 132001."""
    name, language = name or None, language or None
    if name is not None and not _PROVIDER_TEMPLATE.fullmatch(name):
        raise RequestInvalid.for_field(
            "provider_template",
            "must be 1-512 lower-case letters, digits and _ (as the WhatsApp template is named)",
        )
    if language is not None and name is None:
        raise RequestInvalid.for_field(
            "provider_language", "needs provider_template: the language of which template?"
        )
    if language is not None and not _PROVIDER_LANGUAGE.fullmatch(language):
        raise RequestInvalid.for_field(
            "provider_language", "must be a WhatsApp language code such as tr, en or en_US"
        )
    return name, language
