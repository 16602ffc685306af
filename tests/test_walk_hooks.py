"""`cstutil.walk` with a visitor that only defines `visit_<Type>`/`leave_<Type>` hooks: the
walk calls them directly and passes by the trivia none of them names. The hooks are called
with the same nodes, in the same order, as under LibCST's own `visit`; a visitor that hooks
trivia, overrides `on_visit`, or carries a hook on the instance is walked node by node."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import libcst as cst
import pytest

from est2tpu import cstutil

REPO = Path(__file__).resolve().parent.parent
HOOKED = [
    "Module",
    "FunctionDef",
    "ClassDef",
    "Call",
    "Name",
    "Attribute",
    "Assign",
    "If",
    "Else",
    "Lambda",
    "SimpleStatementLine",
    "IndentedBlock",
    "Arg",
    "Param",
    "Parameters",
    "Return",
    "Expr",
    "Dict",
    "DictElement",
    "SimpleString",
    "Integer",
    "Subscript",
    "ImportFrom",
    "ImportAlias",
    "Decorator",
    "For",
    "With",
    "Try",
    "ExceptHandler",
    "Comparison",
]


def _recorder(extra: dict[str, object] | None = None) -> type[cst.CSTVisitor]:
    def visit(name: str) -> object:
        def hook(self: cst.CSTVisitor, node: cst.CSTNode) -> bool:
            self.calls.append(("visit", name, id(node)))  # type: ignore[attr-defined]
            # prunes the bodies of functions named `_*`
            return not (isinstance(node, cst.FunctionDef) and node.name.value.startswith("_"))

        return hook

    def leave(name: str) -> object:
        def hook(self: cst.CSTVisitor, node: cst.CSTNode) -> None:
            self.calls.append(("leave", name, id(node)))  # type: ignore[attr-defined]

        return hook

    body: dict[str, object] = {f"visit_{n}": visit(n) for n in HOOKED}
    body.update({f"leave_{n}": leave(n) for n in HOOKED[::2]})
    body.update(extra or {})
    return type("Recorder", (cst.CSTVisitor,), body)


def _texts() -> list[Path]:
    return sorted(REPO.glob("fixtures/*/*.py")) + sorted(REPO.glob("est2tpu/rules/tpu00*.py"))


def _same(module: cst.Module, recorder: type[cst.CSTVisitor]) -> list[object]:
    theirs, ours = recorder(), recorder()
    theirs.calls = []  # type: ignore[attr-defined]
    ours.calls = []  # type: ignore[attr-defined]
    module.visit(theirs)
    cstutil.walk(module, ours)
    assert ours.calls == theirs.calls  # type: ignore[attr-defined]
    return ours.calls  # type: ignore[attr-defined,no-any-return]


@pytest.mark.parametrize("path", _texts(), ids=lambda p: p.name)
def test_hooks_called_as_libcst_calls_them(path: Path) -> None:
    module = cst.parse_module(path.read_text(encoding="utf-8"))
    recorder = _recorder()
    assert cstutil._hooks(recorder()) is not None  # the direct walk
    assert _same(module, recorder)


def test_a_visitor_hooking_trivia_is_walked_through_it() -> None:
    module = cst.parse_module((REPO / "est2tpu/engine.py").read_text(encoding="utf-8"))

    def comma(self: cst.CSTVisitor, node: cst.CSTNode) -> None:
        self.calls.append(("visit", "Comma", id(node)))  # type: ignore[attr-defined]

    recorder = _recorder({"visit_Comma": comma})
    assert cstutil._hooks(recorder()) is None
    assert any(name == "Comma" for _, name, _ in _same(module, recorder))


def test_a_hook_on_the_instance_is_called() -> None:
    module = cst.parse_module("f(a, b)\ng(c)\n")
    recorder = _recorder()
    theirs, ours = recorder(), recorder()
    for visitor in (theirs, ours):
        visitor.calls = []  # type: ignore[attr-defined]
        visitor.visit_Call = lambda node, v=visitor: v.calls.append(("own", id(node)))  # type: ignore[attr-defined]
    module.visit(theirs)
    cstutil.walk(module, ours)
    assert ours.calls == theirs.calls  # type: ignore[attr-defined]
    assert sum(1 for call in ours.calls if call[0] == "own") == 2  # type: ignore[attr-defined]


def test_a_subclass_hooking_trivia_does_not_take_its_bases_walk() -> None:
    module = cst.parse_module("f(a, b)\n")
    base = _recorder()
    assert cstutil._hooks(base()) is not None  # the base's answer is kept, on the base

    def comma(self: cst.CSTVisitor, node: cst.CSTNode) -> None:
        self.calls.append(("visit", "Comma", id(node)))  # type: ignore[attr-defined]

    sub = type("WithComma", (base,), {"visit_Comma": comma})
    assert cstutil._hooks(sub()) is None
    assert any(name == "Comma" for _, name, _ in _same(module, sub))


def test_a_visitor_class_made_at_each_call_is_freed() -> None:
    """The helpers define their visitor class at each call, and its hooks name the class
    (`V.found = True`). Once a call is over, nothing of the walk keeps the class alive: each
    class kept is one more subclass of `cst.CSTVisitor`, which `isinstance(visitor,
    cst.CSTVisitor)` (LibCST asks it at each node) goes through for every new visitor class:
    a long run would slow down as it goes."""
    module = cst.parse_module("def f(params):\n    return params['batch_size']\n")

    def found_in(tree: cst.Module) -> tuple[bool, weakref.ref[type]]:
        class V(cst.CSTVisitor):
            found = False

            def visit_Subscript(self, node: cst.Subscript) -> None:
                V.found = True

        cstutil.walk(tree, V())
        return V.found, weakref.ref(V)

    runs = [found_in(module) for _ in range(3)]
    assert [found for found, _ in runs] == [True] * 3
    gc.collect()
    assert [ref() for _, ref in runs] == [None] * 3
