"""The house stays in order: no import cycle among the gateway's modules (docs/architecture.md, "Layers").

Every ``import`` of a gateway module counts: at module level, under ``TYPE_CHECKING`` (an annotation
may only point down) and inside a function (a lazy import is still a dependency). Importing
``gateway.a.b`` also runs ``gateway/a/__init__.py``, so that counts as an import of ``gateway.a``
too (unless the importer lives inside ``gateway.a``). The root package (``__version__``, the lazy
Python API) runs before any of its modules anyway and is left out.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def gateway_modules() -> dict[str, Path]:
    found = {}
    for path in sorted((ROOT / "gateway").rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The gateway modules ``name`` imports, anywhere in its file."""

    def resolve(dotted: str) -> str | None:
        parts = dotted.split(".")
        while parts and ".".join(parts) not in modules:
            parts.pop()
        return ".".join(parts) or None

    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets.update(filter(None, (resolve(alias.name) for alias in node.names)))
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                target = full if full in modules else resolve(node.module)
                if target:
                    targets.add(target)
    out = set()
    for target in targets:
        parts = target.split(".")
        for end in range(2, len(parts) + 1):  # the packages whose __init__ runs first
            ancestor = ".".join(parts[:end])
            if ancestor in modules and not (name == ancestor or name.startswith(ancestor + ".")):
                out.add(ancestor)
    out.discard(name)
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
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
    return found


def test_no_import_cycle_among_gateway_modules():
    modules = gateway_modules()
    graph = {name: imports_of(name, path, modules) - {"gateway"} for name, path in modules.items() if name != "gateway"}
    found = cycles(graph)
    assert not found, "import cycles among gateway modules (break them at their cause: docs/architecture.md, " \
                      "Layers):\n" + "\n".join(" <-> ".join(c) for c in found)


def test_the_check_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
