"""The import graph of the app's own modules: ``annotation`` never imports ``evaluation`` (the
blindness rule made structural), the clients of external services (``integrations``) import
neither app nor Django, and no two modules import each other, not even from inside a function.
Read from the source with ``ast``, so an import hidden in a function counts too."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("annotation", "evaluation", "inference", "api", "integrations", "config", "demo")


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            found[name.removesuffix(".__init__")] = path
    return found


def _imports(path: Path) -> set[str]:
    """Every module named by an import in ``path`` (``from a import b`` counts both ``a`` and
    ``a.b``), ours or not."""
    imported: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            imported.update([node.module, *(f"{node.module}.{alias.name}" for alias in node.names)])
        elif isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
    return imported


def _graph() -> dict[str, set[str]]:
    """Each module of ours and the modules of ours it imports (``from a import b`` counts both
    ``a`` and ``a.b``, whichever is a module)."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        graph[name] = {target for target in _imports(path) if target in modules and target != name}
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


def test_the_api_sits_on_top_nothing_below_imports_it():
    """``api`` calls both apps; neither app nor the service clients may import it back."""
    graph = _graph()
    offending = {
        module: sorted(t for t in targets if t.split(".")[0] == "api")
        for module, targets in graph.items()
        if module.split(".")[0] in {"annotation", "evaluation", "integrations"}
        and any(t.split(".")[0] == "api" for t in targets)
    }
    assert offending == {}
    assert "api.routes.answers" in graph and "evaluation.imports.campaign_file" in graph["api.batches"]


def test_the_service_clients_import_neither_app_nor_django():
    """``integrations`` sits below both apps (the judge and the sample's embeddings use the same
    OpenAI-compatible client), so it can import neither, nor the settings: its callers pass
    what it needs."""
    offending = {
        path.relative_to(ROOT).as_posix(): sorted(
            target
            for target in _imports(path)
            if target.split(".")[0] in {"annotation", "evaluation", "config", "django"}
        )
        for path in (ROOT / "integrations").rglob("*.py")
    }
    assert "integrations/openai_compatible.py" in offending
    assert {path: targets for path, targets in offending.items() if targets} == {}


def test_the_statistics_import_neither_app_nor_django():
    """``inference`` is the statistics on arrays (estimators, intervals, designs' maths): both
    apps call it, and it reads no model, no setting and no translation, so that it can be
    checked against ppi_py and simulated in ``bench/`` without a database."""
    offending = {
        path.relative_to(ROOT).as_posix(): sorted(
            target
            for target in _imports(path)
            if target.split(".")[0] in {"annotation", "evaluation", "api", "config", "django"}
        )
        for path in (ROOT / "inference").rglob("*.py")
    }
    read = {"inference/estimators/ppi.py", "inference/intervals.py", "inference/estimators/means.py"}
    assert read <= set(offending)
    assert {path: targets for path, targets in offending.items() if targets} == {}


def test_only_the_service_clients_import_the_openai_sdk():
    importers = sorted(
        name
        for name, path in _modules().items()
        if any(target.split(".")[0] == "openai" for target in _imports(path))
    )
    assert importers == ["integrations.openai_compatible"]


def test_no_two_modules_import_each_other():
    assert _cycles(_graph()) == []


def test_the_cycle_finder_finds_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert len(_graph()) > 40 and "annotation.jobs" in _graph()["annotation.views.sampling"]


def test_the_shared_conventions_need_no_django():
    """Citation and abstention patterns and the built-in criteria: one module, importable by
    anything (the judge's prompts, the splitter, the demo builder) without Django."""
    tree = ast.parse((ROOT / "annotation" / "corpus" / "conventions.py").read_text(encoding="utf-8"))
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
    demo = {name for name in graph if name.startswith("demo.")}
    assert {"demo.build", "demo.checks", "demo.material"} <= demo
    assert set().union(*(graph[name] for name in demo)) - demo == {"annotation.corpus.conventions"}
    assert not any(name.startswith("annotation.demo") for name in graph)


def test_jobs_call_tasks_and_tasks_call_the_domain_never_the_reverse():
    """In both apps, starting background work goes jobs -> tasks -> domain: a domain module that
    enqueued work itself would run it again from every road that calls it (a command, a test, a
    worker); it says what changed instead (a signal), and the app schedules the work."""
    graph = _graph()
    offending = {
        module: sorted(t for t in targets if t.rsplit(".", 1)[-1] in {"jobs", "tasks"})
        for module, targets in graph.items()
        if module.split(".")[0] in {"annotation", "evaluation"}
        and module.rsplit(".", 1)[-1] not in {"jobs", "apps", "urls"}
        and ".views" not in module
        and ".management" not in module
        and any(t.rsplit(".", 1)[-1] in {"jobs", "tasks"} for t in targets)
    }
    # Tasks may call no job; views, commands and the app's signal handlers start jobs.
    assert offending == {}
