"""Templates: the workspace's templates; create and edit one with a live preview (the rendered
text, its SMS encoding and segments, the variables it needs), delete one.

The preview is one endpoint, ``POST /templates/preview``, that htmx calls as the body or a
sample value changes; it calls ``Messenger.preview_template``, the library's own renderer
and encoder, and says what ``set_template`` would refuse before it is saved.
"""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import Route

from ..._errors import RequestInvalid
from .._app import Dashboard, route
from .._ui import Page

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
    listed = await page.messenger.list_templates(workspace.id)
    return page.render("templates.html", templates=listed)


async def new_template(page: Page) -> Response:
    return _editor(page, key="", body="", description="", editing=False)


async def edit_template(page: Page) -> Response:
    workspace = page.require_workspace()
    template = await page.messenger.get_template(workspace.id, page.request.path_params["key"])
    return _editor(page, key=template.key, body=template.body,
                   description=template.description or "", editing=True)  # fmt: skip


async def _save(page: Page) -> Response:
    workspace = page.require_workspace()
    form = page.form
    try:
        await page.messenger.set_template(
            workspace.id,
            form.get("key").strip(),
            form.get("body"),
            description=form.get("description").strip() or None,
        )
    except RequestInvalid as exc:
        return _editor(page, key=form.get("key").strip(), body=form.get("body"),
                       description=form.get("description"), editing=form.get("editing") == "1",
                       error=exc.message, status=400)  # fmt: skip
    return page.redirect("/templates")


async def delete_template(page: Page) -> Response:
    workspace = page.require_workspace()
    await page.messenger.delete_template(workspace.id, page.request.path_params["key"])
    return page.redirect("/templates")


async def preview(page: Page) -> Response:
    """The preview part of the editor, for what is in the form now."""
    context = _preview_context(page, page.form.get("body"))
    return page.render_context("_template_preview.html", context)


def _samples(page: Page) -> dict[str, str]:
    return {name.removeprefix(_SAMPLE): value for name, value in page.form.first_values().items()
            if name.startswith(_SAMPLE)}  # fmt: skip


def _preview_context(page: Page, body: str) -> dict[str, object]:
    samples = _samples(page)
    shown = page.messenger.preview_template(body, samples)
    # The sample-value fields are replaced only when the set of variables changed, so the
    # field being typed into keeps its focus.
    changed = set(shown.variables) != set(samples) or page.request.method == "GET"
    return {"preview": shown, "samples": samples, "variables_changed": changed,
            "request_is_htmx": page.is_htmx}  # fmt: skip


def _editor(
    page: Page,
    *,
    key: str,
    body: str,
    description: str,
    editing: bool,
    error: str | None = None,
    status: int = 200,
) -> Response:
    context: dict[str, object] = {"key": key, "body": body, "description": description,
                                  "editing": editing, "error": error}  # fmt: skip
    context.update(_preview_context(page, body))
    return page.render_context("template_edit.html", context, status=status)
