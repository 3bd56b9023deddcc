"""docs/mcp.md's table of tools against the served ``tools/list``, read by the SDK's client.

Every tool the page names is served and every served tool is named; each tool's arguments
(the backticked names in the table's ``arguments`` column, ``items[].to`` for a field of a
bulk item) are exactly its input schema's properties. The page once listed a ``metadata``
argument that the server refused as an unknown field.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Final

from _mcp_support import Harness

PAGE: Final = Path(__file__).resolve().parents[2] / "docs" / "mcp.md"
_NAME = re.compile(r"`([a-z_]+(?:\[\]\.[a-z_]+)?)`")


def documented_tools() -> dict[str, tuple[set[str], dict[str, set[str]]]]:
    """Per tool: its documented arguments, and the documented fields of array arguments."""
    section = PAGE.read_text(encoding="utf-8").split("## Tools", 1)[1].split("\n## ", 1)[0]
    tools: dict[str, tuple[set[str], dict[str, set[str]]]] = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not cells[0].startswith("`"):
            continue
        arguments: set[str] = set()
        nested: dict[str, set[str]] = {}
        for name in _NAME.findall(cells[2]):
            if "[]." in name:
                parent, _, child = name.partition("[].")
                nested.setdefault(parent, set()).add(child)
            else:
                arguments.add(name)
        tools[cells[0].strip("`")] = (arguments, nested)
    return tools


def item_properties(schema: dict[str, Any], argument: str) -> set[str]:
    """The properties of the items of array ``argument`` (through a ``$ref`` into ``$defs``)."""
    items = schema["properties"][argument]["items"]
    if "$ref" in items:
        items = schema["$defs"][items["$ref"].rsplit("/", 1)[-1]]
    return set(items["properties"])


async def test_the_documented_tools_and_arguments_are_the_served_ones(mcp: Harness) -> None:
    async with mcp.session() as session:
        served = {tool.name: tool.input_schema for tool in (await session.list_tools()).tools}
    documented = documented_tools()

    assert set(documented) == set(served)
    for name, (arguments, nested) in documented.items():
        schema = served[name]
        assert arguments == set(schema.get("properties", {})), name
        for parent, fields in nested.items():
            assert fields == item_properties(schema, parent), f"{name}: {parent}"
