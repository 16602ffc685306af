"""`rulewalk.transform` makes LibCST's transform: the same text, the same calls of the
visitor, removals and flattenings as LibCST's helpers make them, and a node nothing changed
kept as the same object."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
import test_all_rules as all_rules

from est2tpu import engine, rulewalk
from est2tpu.api import migrate_source
from est2tpu.ftypes import Target
from tests.test_walk import EVERYTHING

CASES = all_rules.CASES


class _Recording(cst.CSTTransformer):
    """Records every visit and leave it is called at, among the types it hooks."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, str, str]] = []

    def _code(self, node: cst.CSTNode) -> str:
        return cst.Module([]).code_for_node(node)

    def visit_Name(self, node: cst.Name) -> None:
        self.calls.append(("visit", "Name", node.value))

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        self.calls.append(("leave", "Name", updated_node.value))
        if original_node.value in ("x", "b"):
            return updated_node.with_changes(value=original_node.value + "_renamed")
        return updated_node

    def visit_Call(self, node: cst.Call) -> bool:
        self.calls.append(("visit", "Call", self._code(node)))
        return "skip_me" not in self._code(node)

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        self.calls.append(("leave", "Call", self._code(updated_node)))
        return updated_node

    def leave_Pass(self, original_node: cst.Pass, updated_node: cst.Pass) -> cst.RemovalSentinel:
        self.calls.append(("leave", "Pass", ""))
        return cst.RemoveFromParent()

    def leave_Expr(
        self, original_node: cst.Expr, updated_node: cst.Expr
    ) -> cst.FlattenSentinel[cst.BaseSmallStatement]:
        return cst.FlattenSentinel([updated_node, updated_node])

    def leave_Comma(
        self, original_node: cst.Comma, updated_node: cst.Comma
    ) -> cst.RemovalSentinel | cst.Comma:
        # a sentinel field (`Arg.comma`): removed, it becomes MaybeSentinel.DEFAULT
        return cst.RemoveFromParent()

    def leave_Decorator(
        self, original_node: cst.Decorator, updated_node: cst.Decorator
    ) -> cst.RemovalSentinel:
        return cst.RemoveFromParent()

    def leave_Else(self, original_node: cst.Else, updated_node: cst.Else) -> cst.RemovalSentinel:
        # an optional field (`If.orelse`): removed, it becomes None
        return cst.RemoveFromParent()


class _RecordingNoTrivia(_Recording):
    """The same, hooking no whitespace, comment, operator or bracket: walked past them."""

    leave_Comma = cst.CSTTransformer.leave_Comma  # type: ignore[assignment]


SOURCES = [
    EVERYTHING,
    "def f(a, b):\n    skip_me(x)\n    g(x, b)\n    pass\n",
    "if a:\n    pass\nelse:\n    pass\n",
]


@pytest.mark.parametrize("recorder", [_Recording, _RecordingNoTrivia])
@pytest.mark.parametrize("source", SOURCES)
def test_same_text_and_calls_as_libcst(source: str, recorder: type[_Recording]) -> None:
    tree = cst.parse_module(source)
    theirs, ours = recorder(), recorder()
    expected = tree.visit(theirs)
    got = rulewalk.transform(tree, ours)
    assert got.code == expected.code
    assert ours.calls == theirs.calls


def test_a_node_nothing_changed_is_kept() -> None:
    tree = cst.parse_module("def f():\n    return g(1)\n\n\ny = h(2)\n")

    class Nothing(cst.CSTTransformer):
        def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
            return updated_node

    assert rulewalk.transform(tree, Nothing()) is tree  # type: ignore[arg-type]

    class One(cst.CSTTransformer):
        def leave_Integer(
            self, original_node: cst.Integer, updated_node: cst.Integer
        ) -> cst.Integer:
            return (
                updated_node.with_changes(value="3") if updated_node.value == "2" else updated_node
            )

    new = rulewalk.transform(tree, One())
    assert new.code == "def f():\n    return g(1)\n\n\ny = h(3)\n"
    assert new.body[0] is tree.body[0]  # the def it did not change
    assert new.body[1] is not tree.body[1]


def test_a_removal_a_required_field_cannot_take_fails_as_in_libcst() -> None:
    tree = cst.parse_module("f(x)\n")

    class Drop(cst.CSTTransformer):
        def leave_Name(
            self, original_node: cst.Name, updated_node: cst.Name
        ) -> cst.RemovalSentinel:
            return cst.RemoveFromParent()

    with pytest.raises(TypeError, match="does not allow it to be removed"):
        tree.visit(Drop())
    with pytest.raises(TypeError, match="does not allow it to be removed"):
        rulewalk.transform(tree, Drop())


def _libcst_walk(tree: cst.Module, rule: object) -> cst.Module:
    return tree.visit(rule)  # type: ignore[arg-type]


# In the xdist group of tests/test_all_rules.py's target (`all_rules-<target>`): the runs
# under est2tpu's own walk are that module's, cached per worker (`_run`), so this test adds
# only the runs under LibCST's walk.
@pytest.mark.slow
@pytest.mark.parametrize("target", all_rules.TARGETS)
def test_every_fixture_migrates_as_under_libcsts_walk(
    target: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every fixture with every rule of the target, once with each walk: the same text and
    the same findings."""
    # est2tpu's walk first, every fixture, before LibCST's replaces it for the rest
    ours = {p: all_rules._run(p, target) for p in CASES}
    monkeypatch.setattr(engine.rulewalk, "transform", _libcst_walk)
    for path, result in ours.items():
        theirs = migrate_source(
            path.read_text(encoding="utf-8"), path=all_rules._path(path), target=target
        )
        assert (result.new_text, result.findings, result.error) == (
            theirs.new_text,
            theirs.findings,
            theirs.error,
        ), path


def test_fixtures_exist() -> None:
    assert len(CASES) > 100
    assert all(isinstance(p, Path) for p in CASES)
