"""The package's arrows point one way (docs/architecture.md): edges → tools → façade → core.

Every ``import`` in ``unified_messaging`` (module level or inside a function, but not under
``if TYPE_CHECKING:``, which only names types) is read with :mod:`ast`; an import of a module
in a higher layer than the importer's fails this test, as does the REST/MCP edge importing
the command line. Layers:

0. **core**: the rules and the machinery (routing, lifecycle, worker, stores, providers,
   vault, webhooks, limits, metrics, tracing): everything not named below;
1. **façade**: ``Messenger`` and ``SyncMessenger`` (``_messenger``, ``_sync``) and the package
   root that re-exports the public names;
2. **tools on the façade**: the demo and the CSV campaign (``_demo``, ``campaigns._runner``);
3. **edges**: ``asgi`` (REST, MCP), ``cli``, ``testing`` (the pytest plugin), ``dashboard``
   (the web console), ``contrib`` (framework integrations), ``__main__``.

Within the layers, no module imports itself through others: the import graph has no circle.
For circles every import counts: at module level, inside a function
(a lazy import is still an arrow; it only moves the failure to the first call) and under
``if TYPE_CHECKING:`` (a circle of types is a circle of concepts, and it becomes an import
crash the day one of its names is needed at run time: a default value, an ``isinstance``).
The core's records (``_domain``, ``_errors``, ``_types``, ``_policies``) import nothing but
root modules of the core, not even for a type.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "unified_messaging"
ROOT = PACKAGE.parent

EDGES = ("unified_messaging.asgi", "unified_messaging.cli", "unified_messaging.testing",
         "unified_messaging.contrib", "unified_messaging.dashboard",
         "unified_messaging.__main__")  # fmt: skip
TOOLS = ("unified_messaging._demo", "unified_messaging.campaigns._runner")
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


def imports_of(
    path: Path, *, name: str | None = None, type_only_too: bool = False
) -> list[tuple[str, int]]:
    """The package's own modules that ``path`` imports at run time (``type_only_too``: and
    under ``TYPE_CHECKING``), with the line. ``name`` is the module's dotted name (default:
    from where the file is)."""
    name = name or module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    type_only = set() if type_only_too else _type_only_lines(tree)
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
    for edge in ("asgi", "testing", "dashboard"):
        for path in sorted((PACKAGE / edge).rglob("*.py")):
            for imported, line in imports_of(path):
                if imported.startswith("unified_messaging.cli"):
                    wrong.append(f"{module_name(path)}:{line} imports {imported}")
    assert wrong == []


def test_no_core_module_names_the_facade_even_for_types() -> None:
    """``Principal`` lives in ``access`` so that the access rules, idempotency and the campaign
    need not reach up to ``_messenger`` for it: the core does not know the façade exists."""
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        importer = module_name(path)
        if layer(importer) > 0:
            continue
        for imported, line in imports_of(path, type_only_too=True):
            if layer(imported) > 0:
                wrong.append(f"{importer}:{line} imports {imported}")
    assert wrong == []


def test_the_checker_sees_a_wrong_arrow(tmp_path: Path) -> None:
    """The rules above are only worth something if the reader finds imports: relative and
    absolute, inside functions too, and tells a type-only one apart."""
    source = tmp_path / "_fake.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "from .._errors import MessagingError\n"
        "if TYPE_CHECKING:\n"
        "    from .._messenger import Messenger\n"
        "def late():\n"
        "    import unified_messaging.asgi._app\n"
        "    from ..webhooks import _outbox\n",
        encoding="utf-8",
    )
    name = "unified_messaging._routing._fake"
    run_time = imports_of(source, name=name)
    assert run_time == [
        ("unified_messaging._errors", 2),
        ("unified_messaging.asgi._app", 6),
        ("unified_messaging.webhooks._outbox", 7),
    ]
    every = dict(imports_of(source, name=name, type_only_too=True))
    assert every["unified_messaging._messenger"] == 4
    assert layer("unified_messaging.asgi._app") > layer(name)
    demo = dict(imports_of(PACKAGE / "_demo.py"))
    assert "unified_messaging._messenger" in demo


def import_graph(*, type_only_too: bool = True) -> dict[str, set[str]]:
    """Every module of the package and the package modules it imports (itself left out)."""
    graph: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        importer = module_name(path)
        found = imports_of(path, type_only_too=type_only_too)
        graph[importer] = {imported for imported, _ in found if imported != importer}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted: the
    modules that import each other, directly or through the others."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_no_import_circle_among_the_package_modules() -> None:
    graph = import_graph()
    report = [
        " <-> ".join(circle)
        + ": "
        + "; ".join(f"{a} imports {', '.join(sorted(graph[a] & set(circle)))}" for a in circle)
        for circle in circles(graph)
    ]
    assert report == []


def test_the_circle_finder_finds_lazy_and_type_only_circles(tmp_path: Path) -> None:
    """A two-module circle closed by an import inside a function, and a longer one closed by
    a type-only import, are both found; a one-way chain is not a circle."""
    graph = {
        "a": {"b"},
        "b": {"c"},
        "c": {"a"},  # say, under TYPE_CHECKING
        "d": {"e"},
        "e": {"d"},  # say, inside a function
        "f": {"a", "d"},
    }
    assert circles(graph) == [["a", "b", "c"], ["d", "e"]]
    source = tmp_path / "_fake.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from ._domain import MessageRecord\n"
        "def late():\n"
        "    from .webhooks import _outbox\n",
        encoding="utf-8",
    )
    every = {name for name, _ in imports_of(source, name="unified_messaging._fake",
                                            type_only_too=True)}  # fmt: skip
    assert every == {"unified_messaging._domain", "unified_messaging.webhooks._outbox"}


CORE_RECORDS = ("unified_messaging._domain", "unified_messaging._errors",
                "unified_messaging._types", "unified_messaging._policies")  # fmt: skip


def test_the_cores_records_import_no_feature_module() -> None:
    """Records are what every feature module reads; a record importing a feature module (for
    a default, or a type) made ``_domain`` → ``_access.flood_guard`` → ``_errors`` a circle."""
    wrong = []
    for record in CORE_RECORDS:
        path = ROOT / (record.replace(".", "/") + ".py")
        for imported, line in imports_of(path, type_only_too=True):
            if imported.count(".") > 1 or layer(imported) > 0:
                wrong.append(f"{record}:{line} imports {imported}")
    assert wrong == []


def test_logger_names_name_a_concern_not_a_private_module() -> None:
    """Operators filter logs by logger name, so the names must outlive module moves: each is
    ``unified_messaging.<concern>`` spelled out, never ``__name__`` or a private path."""
    import re

    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        names += re.findall(r"getLogger\(([^)]*)\)", path.read_text(encoding="utf-8"))
    package_loggers = [n for n in names if "unified_messaging" in n or "__name__" in n]
    assert package_loggers  # the reader finds them
    wrong = [n for n in package_loggers if not re.fullmatch(r'"unified_messaging(\.[a-z]+)*"', n)]
    assert wrong == []


# --------------------------------------------------------------------------- rooms by concern


def root_modules() -> list[str]:
    """The package root's own modules (files, not subpackages), the package itself left out."""
    return sorted(
        module_name(path)
        for path in PACKAGE.glob("*.py")
        if path.name not in ("__init__.py", "__main__.py")
    )


def lonely_root_modules(graph: dict[str, set[str]], modules: list[str]) -> dict[str, str]:
    """Root modules whose every importer lives in one and the same subpackage: such a module
    is that subpackage's business and belongs inside it. The root keeps the façade and what
    is shared (imported by the root, or by two subpackages or more)."""
    lonely: dict[str, str] = {}
    for module in modules:
        importers = {name for name, imported in graph.items() if module in imported}
        rooms = {name.split(".")[1] for name in importers if name.count(".") >= 2}
        at_root = {name for name in importers if name.count(".") <= 1}
        if not at_root and len(rooms) == 1:
            lonely[module] = rooms.pop()
    return lonely


def test_no_root_module_serves_only_one_subpackage() -> None:
    # The package's own re-exports (``__init__``'s lazy table) count as an importer at the
    # root: a public name's home may stay at the root.
    graph = import_graph()
    assert lonely_root_modules(graph, root_modules()) == {}


def test_the_lonely_module_finder_finds_one() -> None:
    graph = {
        "unified_messaging._shared": set(),
        "unified_messaging._only_audit": set(),
        "unified_messaging.audit._service": {
            "unified_messaging._only_audit", "unified_messaging._shared"
        },
        "unified_messaging.vault._core": {"unified_messaging._shared"},
    }  # fmt: skip
    found = lonely_root_modules(
        graph, ["unified_messaging._shared", "unified_messaging._only_audit"]
    )
    assert found == {"unified_messaging._only_audit": "audit"}


def test_each_resource_keeps_its_part_of_the_store_in_its_own_room() -> None:
    """``Store`` is the sum of the rooms' slices plus the messages' own lifecycle: a resource's
    store methods sit beside its service (``keys/_store.py`` beside ``keys/_service.py``), and
    each slice's room is a namespace of ``Messenger``, so adding a resource is a new folder."""
    from unified_messaging import Messenger
    from unified_messaging.store.base import Store

    slices = [base for base in Store.__bases__ if base.__name__ != "Protocol"]
    rooms = {base.__module__.split(".")[1] for base in slices}
    namespaces = {name for name in dir(Messenger()) if not name.startswith("_")}

    assert len(slices) >= 14
    assert "store" not in rooms
    assert rooms - namespaces == set()
    # What stays in store/base.py is the lifecycle every room leans on, not a resource.
    crud = re.compile(
        r"^(add|get|find|list|put|update|remove|delete|swap|set_default|append)_"
        r"(workspace|api_key|connection|template|allowlist|webhook|audit|suppression|user)"
    )
    assert [name for name in vars(Store) if crud.match(name)] == []
