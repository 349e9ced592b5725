"""The import graph of the app's own modules: ``annotation`` never imports ``evaluation`` (the
blindness rule made structural), and no two modules import each other, not even from inside a
function. Read from the source with ``ast``, so an import hidden in a function counts too."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("annotation", "evaluation", "config", "demo")


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            found[name.removesuffix(".__init__")] = path
    return found


def _graph() -> dict[str, set[str]]:
    """Each module of ours and the modules of ours it imports (``from a import b`` counts both
    ``a`` and ``a.b``, whichever is a module)."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        imported: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                imported.update([node.module, *(f"{node.module}.{alias.name}" for alias in node.names)])
            elif isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
        graph[name] = {target for target in imported if target in modules and target != name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
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
    return found


def test_annotation_never_imports_evaluation():
    graph = _graph()
    offending = {
        module: sorted(t for t in targets if t.startswith("evaluation"))
        for module, targets in graph.items()
        if module.startswith("annotation") and any(t.startswith("evaluation") for t in targets)
    }
    assert offending == {}


def test_no_two_modules_import_each_other():
    assert _cycles(_graph()) == []


def test_the_cycle_finder_finds_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert len(_graph()) > 40 and "annotation.jobs" in _graph()["annotation.views.sampling"]


def test_the_shared_conventions_need_no_django():
    """Citation and abstention patterns and the built-in criteria: one module, importable by
    anything (the judge's prompts, the splitter, the demo builder) without Django."""
    tree = ast.parse((ROOT / "annotation" / "conventions.py").read_text(encoding="utf-8"))
    imported = {
        alias.name if isinstance(node, ast.Import) else node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    assert imported == {"__future__"}


def test_the_demo_builder_takes_only_the_shared_conventions_from_the_app():
    """The demo's builder runs without Django: of the app, it reads the conventions alone."""
    graph = _graph()
    assert graph["demo.build"] == {"annotation.conventions"}
    assert not any(name.startswith("annotation.demo") for name in graph)
