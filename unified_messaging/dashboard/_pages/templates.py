"""Templates: the workspace's templates; create and edit one with a live preview (the rendered
text, its SMS encoding and segments with and without the operator's code, the variables it
needs, and what it misses as a commercial SMS, D33), and for WhatsApp (``bizchat``) the
approved provider template and language it maps to; delete one.

The preview is one endpoint, ``POST /templates/preview``, that htmx calls as the body or a
sample value changes; it calls ``Messenger.preview_template``, the library's own renderer
and encoder, and says what ``set_template`` would refuse before it is saved.
"""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import Route

from ..._domain import Template
from ..._errors import RequestInvalid
from .._app import Dashboard, route
from .._notices import Notice
from .._ui import Page, field_errors

__all__ = ["routes"]

_SAMPLE = "var_"  # the prefix of a sample value's field: var_name


def routes(dashboard: Dashboard) -> list[Route]:
    return [
        route("/templates", dashboard.guarded(templates_page), "GET", "POST"),
        route("/templates/new", dashboard.guarded(new_template)),
        route("/templates/preview", dashboard.guarded(preview), "POST"),
        route("/templates/{key}", dashboard.guarded(edit_template)),
        route("/templates/{key}/delete", dashboard.guarded(delete_template), "POST"),
    ]


async def templates_page(page: Page) -> Response:
    if page.request.method == "POST":
        return await _save(page)
    workspace = page.require_workspace()
    listed = await page.messenger.templates.list(workspace.id)
    return page.render("templates.html", templates=listed)


async def new_template(page: Page) -> Response:
    return await _editor(page, _typed(page), editing=False)


async def edit_template(page: Page) -> Response:
    workspace = page.require_workspace()
    template = await page.messenger.templates.get(workspace.id, page.request.path_params["key"])
    return await _editor(page, _stored(template), editing=True)


async def _save(page: Page) -> Response:
    workspace = page.require_workspace()
    typed = _typed(page)
    try:
        template = await page.messenger.templates.set(
            workspace.id,
            typed["key"],
            typed["body"],
            description=typed["description"] or None,
            provider_template=typed["provider_template"] or None,
            provider_language=typed["provider_language"] or None,
        )
    except RequestInvalid as exc:
        editing = page.form.get("editing") == "1"
        return await _editor(page, typed, editing=editing, error=exc)
    return await page.done("/templates", Notice(f"Saved the template {template.key}."))


async def delete_template(page: Page) -> Response:
    workspace = page.require_workspace()
    key = page.request.path_params["key"]
    await page.messenger.templates.delete(workspace.id, key)
    return await page.done("/templates", Notice(f"Deleted the template {key}."))


async def preview(page: Page) -> Response:
    """The preview part of the editor, for what is in the form now."""
    context = await _preview_context(page, page.form.get("body"))
    return page.render_context("_template_preview.html", context)


def _samples(page: Page) -> dict[str, str]:
    return {name.removeprefix(_SAMPLE): value for name, value in page.form.first_values().items()
            if name.startswith(_SAMPLE)}  # fmt: skip


async def _preview_context(page: Page, body: str) -> dict[str, object]:
    samples = _samples(page)
    shown = page.messenger.templates.preview(body, samples)
    # D33: what the text as shown would miss as a commercial SMS of this workspace, and its
    # parts once the operator's code is on it. Warnings here; a send may be refused for them.
    lint = await page.messenger.content.lint(await page.principal(), shown.text)
    rules = page.require_workspace().content_rules
    # The sample-value fields are replaced only when the set of variables changed, so the
    # field being typed into keeps its focus.
    changed = set(shown.variables) != set(samples) or page.request.method == "GET"
    return {"preview": shown, "samples": samples, "variables_changed": changed,
            "request_is_htmx": page.is_htmx, "lint": lint,
            "hints_refuse": rules.refuse}  # fmt: skip


_FIELDS = ("key", "body", "description", "provider_template", "provider_language")


def _typed(page: Page) -> dict[str, str]:
    """The editor's fields as posted; the text as typed, the others without stray spaces."""
    form = page.form
    return {name: form.get(name) if name == "body" else form.get(name).strip() for name in _FIELDS}


def _stored(template: Template) -> dict[str, str]:
    return {name: getattr(template, name) or "" for name in _FIELDS}


async def _editor(
    page: Page,
    fields: dict[str, str],
    *,
    editing: bool,
    error: RequestInvalid | None = None,
) -> Response:
    workspace = page.require_workspace()
    connections = await page.messenger.connections.list(workspace.id)
    context: dict[str, object] = {
        **fields,
        "editing": editing,
        "error": error and error.message,
        "errors": field_errors(error),
        # The WhatsApp fields are open when they matter: a bizchat connection, or values.
        "bizchat": any(c.provider == "bizchat" for c in connections),
    }
    context.update(await _preview_context(page, fields["body"]))
    return page.render_context("template_edit.html", context, status=400 if error else 200)
