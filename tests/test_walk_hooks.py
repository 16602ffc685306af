"""`cstutil.walk` with a visitor that only defines `visit_<Type>`/`leave_<Type>` hooks: the
walk calls them directly and passes by the trivia none of them names. The hooks are called
with the same nodes, in the same order, as under LibCST's own `visit`; a visitor that hooks
trivia, overrides `on_visit`, or carries a hook on the instance is walked node by node."""

from __future__ import annotations

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
