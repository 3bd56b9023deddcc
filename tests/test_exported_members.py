"""The public surface is exactly ``unified_messaging.__all__`` (httpx's test_exported_members)."""

from __future__ import annotations

import types

import unified_messaging

# Dunder names that are public on purpose.
INCLUDED_PRIVATE_MEMBERS = {"__version__"}
# Subpackages meant to be imported by users; they are reached as ``unified_messaging.x``.
#: Public subpackages and modules: edges, seams, and the receivers' ``webhooks`` helpers.
PUBLIC_SUBPACKAGES = {
    "asgi", "cli", "consents", "content", "contrib", "dashboard", "iys", "providers", "stats",
    "store", "testing", "verifications", "webhooks",
    # The rooms by concern: subpackages whose modules are private, reached as attributes once
    # something imported them.
    "accounts", "allowlist", "audit", "campaigns", "connections", "keys", "suppressions",
    "templates", "users", "vault", "workspaces",
}  # fmt: skip


def namespace() -> dict[str, object]:
    """The package's attributes, without the ``@py_…`` names pytest's assertion rewriting adds
    (it rewrites us: the pytest plugin lives in this package). The public names are imported
    on first use (PEP 562), so each is looked up first: the namespace a user ends up with."""
    for name in unified_messaging.__all__:
        getattr(unified_messaging, name)
    return {k: v for k, v in vars(unified_messaging).items() if k.isidentifier()}


def isort_style(name: str) -> tuple[int, str]:
    """ruff's RUF022 order: CONSTANTS, then Classes, then everything else."""
    if name.isupper() and len(name) > 1:
        return (0, name)
    if name[:1].isupper():
        return (1, name)
    return (2, name)


def test_all_is_sorted_and_unique() -> None:
    names = unified_messaging.__all__
    assert len(names) == len(set(names))
    assert names == sorted(names, key=isort_style)


def test_all_is_exactly_the_public_names_of_the_package() -> None:
    public = {
        name
        for name, value in namespace().items()
        if (not name.startswith("_") or name in INCLUDED_PRIVATE_MEMBERS)
        and not isinstance(value, types.ModuleType)
    }
    assert set(unified_messaging.__all__) == public


def test_every_name_in_all_resolves() -> None:
    for name in unified_messaging.__all__:
        assert getattr(unified_messaging, name) is not None, name


def test_star_import_gives_exactly_all() -> None:
    namespace: dict[str, object] = {}
    exec("from unified_messaging import *", namespace)  # noqa: S102
    namespace.pop("__builtins__")
    assert set(namespace) == set(unified_messaging.__all__)


def test_no_stray_module_is_a_public_attribute() -> None:
    # An ``import re`` in __init__ would leak ``re`` as a public name.
    modules = {
        name
        for name, value in namespace().items()
        if isinstance(value, types.ModuleType) and not name.startswith("_")
    }
    assert modules <= PUBLIC_SUBPACKAGES


def test_exported_classes_and_functions_belong_to_the_package() -> None:
    for name in unified_messaging.__all__:
        value = getattr(unified_messaging, name)
        module = getattr(value, "__module__", None)
        if isinstance(value, type | types.FunctionType):
            assert module is not None
            assert module.startswith("unified_messaging"), (name, module)


def test_render_template_is_the_template_renderer() -> None:
    assert unified_messaging.render_template("Hi {{ name }}", {"name": "A"}) == "Hi A"


def test_version_is_a_string() -> None:
    assert isinstance(unified_messaging.__version__, str)
    assert unified_messaging.__version__


def test_every_public_name_is_seen_by_type_checkers() -> None:
    """The package root loads its names lazily; ``if TYPE_CHECKING:`` imports them for mypy
    and editors. A name in ``__all__`` missing there is typed ``object`` for every user."""
    import ast
    from pathlib import Path

    import unified_messaging

    tree = ast.parse(Path(unified_messaging.__file__).read_text(encoding="utf-8"))
    seen: set[str] = set()
    for node in tree.body:
        block = (
            node.body
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            else [node]
        )
        for inner in block:
            if isinstance(inner, ast.ImportFrom):
                seen.update(alias.asname or alias.name for alias in inner.names)

    assert sorted(set(unified_messaging.__all__) - seen) == []
