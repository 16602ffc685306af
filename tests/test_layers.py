"""Layers import one way: no import cycle among est2tpu's modules, no rule module
importing another, and the LibCST-free half of a run stays free of LibCST.

Read from the source with `ast`, every import counts: at module level, inside functions
(lazy) and under TYPE_CHECKING alike.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "est2tpu"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.cache
def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _imports(name: str, *, top_level_only: bool = False) -> set[str]:
    """The est2tpu modules (and third-party top-level packages) `name` imports."""
    modules = _modules()
    path = modules[name]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_package = path.name == "__init__.py"
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.add(_owner(alias.name, modules))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = name if is_package else name.rpartition(".")[0]
                for _ in range(node.level - 1):
                    package = package.rpartition(".")[0]
                base = f"{package}.{base}" if base else package
            for alias in node.names:
                full = f"{base}.{alias.name}"
                found.add(full if full in modules else _owner(base, modules))
    found.discard(name)
    return found


def _owner(dotted: str, modules: dict[str, Path]) -> str:
    """The est2tpu module a dotted name lives in, or its top-level package elsewhere."""
    while dotted and dotted not in modules:
        if "." not in dotted:
            return dotted
        dotted = dotted.rpartition(".")[0]
    return dotted


def _graph(*, top_level_only: bool = False) -> dict[str, set[str]]:
    modules = _modules()
    return {
        name: {m for m in _imports(name, top_level_only=top_level_only) if m in modules}
        for name in modules
    }


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _is_rule(name: str) -> bool:
    prefix, _, last = name.rpartition(".")
    return prefix == "est2tpu.rules" and not last.startswith("_")


def test_no_import_cycles() -> None:
    assert _cycles(_graph()) == []


def test_a_cycle_is_found() -> None:
    # The check above can fail: a made-up graph with a loop through three modules.
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_no_rule_imports_another_rule() -> None:
    rules = [name for name in _modules() if _is_rule(name)]
    assert len(rules) > 10
    for name in rules:
        other = sorted(m for m in _imports(name) if _is_rule(m))
        assert not other, f"{name} imports {other}: move what they share to est2tpu/rules/_*.py"


def test_pipeline_never_imports_the_api_and_nothing_imports_the_cli() -> None:
    graph = _graph()
    assert "est2tpu.api" not in graph["est2tpu.pipeline"]
    users = [name for name, deps in graph.items() if "est2tpu.cli" in deps]
    assert users == ["est2tpu.__main__"]
    lower = ["est2tpu.engine", "est2tpu.rule", "est2tpu.registry", "est2tpu.ftypes"]
    for name in lower + [n for n in graph if _is_rule(n)]:
        assert not graph[name] & {"est2tpu.api", "est2tpu.pipeline", "est2tpu.runner"}, name


def test_the_run_half_never_loads_libcst_at_import() -> None:
    """What a cached run imports (api, runner and what they import at module level) must
    not pull in LibCST; the parsing half (`pipeline`) is imported inside functions."""
    graph = _graph(top_level_only=True)
    seen: set[str] = set()
    todo = ["est2tpu.api", "est2tpu.runner", "est2tpu.cli"]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        assert "libcst" not in _imports(name, top_level_only=True), name
        todo += graph[name]
    assert "est2tpu.pipeline" not in seen and "est2tpu.engine" not in seen
