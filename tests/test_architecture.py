"""The package's arrows point one way (docs/architecture.md): edges → tools → façade → core.

Every ``import`` in ``unified_messaging`` (module level or inside a function, but not under
``if TYPE_CHECKING:``, which only names types) is read with :mod:`ast`; an import of a module
in a higher layer than the importer's fails this test, as does the REST/MCP edge importing
the command line. Layers:

0. **core**: the rules and the machinery (routing, lifecycle, worker, stores, providers,
   vault, webhooks, limits, metrics, tracing): everything not named below;
1. **façade**: ``Messenger`` and ``SyncMessenger`` (``_messenger``, ``_sync``) and the package
   root that re-exports the public names;
2. **tools on the façade**: the demo and the CSV campaign (``_demo``, ``_campaign``);
3. **edges**: ``asgi`` (REST, MCP), ``cli``, ``testing`` (the pytest plugin), ``__main__``.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "unified_messaging"
ROOT = PACKAGE.parent

EDGES = ("unified_messaging.asgi", "unified_messaging.cli", "unified_messaging.testing",
         "unified_messaging.__main__")  # fmt: skip
TOOLS = ("unified_messaging._demo", "unified_messaging._campaign")
FACADE = ("unified_messaging._messenger", "unified_messaging._sync")


def layer(module: str) -> int:
    if module.startswith(EDGES):
        return 3
    if module in TOOLS:
        return 2
    if module in FACADE or module == "unified_messaging":
        return 1
    return 0


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def exists(module: str) -> bool:
    path = ROOT / module.replace(".", "/")
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def _type_only_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for inner in node.body:
                lines.update(range(inner.lineno, (inner.end_lineno or inner.lineno) + 1))
    return lines


def imports_of(path: Path) -> list[tuple[str, int]]:
    """The package's own modules that ``path`` imports at run time, with the line."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    type_only = _type_only_lines(tree)
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in type_only:
            continue
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            # ``from . import x`` imports the module x when there is one.
            targets = [
                f"{source}.{alias.name}" if exists(f"{source}.{alias.name}") else source
                for alias in node.names
            ]
        else:
            continue
        for target in targets:
            while target and not exists(target):
                target = target.rpartition(".")[0]
            if target.startswith("unified_messaging"):
                found.append((target, node.lineno))
    return found


def test_no_import_points_up_the_layers() -> None:
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        importer = module_name(path)
        for imported, line in imports_of(path):
            if layer(imported) > layer(importer):
                wrong.append(f"{importer}:{line} imports {imported}")
    assert wrong == []


def test_the_rest_edge_and_the_plugin_do_not_import_the_command_line() -> None:
    wrong = []
    for edge in ("asgi", "testing"):
        for path in sorted((PACKAGE / edge).rglob("*.py")):
            for imported, line in imports_of(path):
                if imported.startswith("unified_messaging.cli"):
                    wrong.append(f"{module_name(path)}:{line} imports {imported}")
    assert wrong == []


def test_the_checker_sees_a_wrong_arrow() -> None:
    """The rule above is only worth something if the reader finds imports: a core module
    that imports the façade at run time is reported (``_access`` names ``Principal`` under
    TYPE_CHECKING only, which is allowed, but ``_demo`` really imports the façade)."""
    demo = dict(imports_of(PACKAGE / "_demo.py"))
    assert "unified_messaging._messenger" in demo
    assert layer("unified_messaging._access") < layer("unified_messaging._messenger")
    access = [m for m, _ in imports_of(PACKAGE / "_access.py")]
    assert "unified_messaging._messenger" not in access  # type-only, skipped
    assert "unified_messaging._errors" in access
