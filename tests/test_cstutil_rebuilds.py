"""`cstutil.rewritten` (a sub-transformer's result, or the node itself when the result is
equal to it) and `cstutil.gc_paused` (the cyclic collector off while a tree is built)."""

from __future__ import annotations

import gc

import libcst as cst
import pytest

from est2tpu import engine
from est2tpu.cstutil import gc_paused, rewritten
from est2tpu.ftypes import MigrationError

DEF = '''def input_fn(params):
    """Batches by a constant."""
    dataset = tf.data.Dataset.range(10)  # a comment
    return dataset.batch(  8 ).repeat()
'''


class _Rename(cst.CSTTransformer):
    """Renames one name; leaves every other node as LibCST rebuilds it."""

    def __init__(self, old: str, new: str) -> None:
        super().__init__()
        self.old, self.new = old, new

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        return (
            updated_node.with_changes(value=self.new)
            if updated_node.value == self.old
            else updated_node
        )


class _Replace(cst.CSTTransformer):
    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.RemovalSentinel:
        return cst.RemoveFromParent()


def _def() -> cst.FunctionDef:
    fn = cst.parse_module(DEF).body[0]
    assert isinstance(fn, cst.FunctionDef)
    return fn


def test_rewritten_returns_the_node_itself_when_nothing_changed() -> None:
    fn = _def()
    rebuilt = fn.visit(_Rename("absent", "other"))
    assert rebuilt is not fn  # LibCST's visit builds every node again
    assert rewritten(fn, _Rename("absent", "other")) is fn


def test_rewritten_returns_the_changed_node() -> None:
    fn = _def()
    new = rewritten(fn, _Rename("dataset", "ds"))
    assert new is not fn
    assert cst.Module([new]).code == DEF.replace("dataset", "ds")


def test_rewritten_refuses_a_transformer_that_replaces_the_node() -> None:
    with pytest.raises(TypeError, match="_Replace replaced a FunctionDef"):
        rewritten(_def(), _Replace())


def test_gc_paused_turns_the_collector_off_and_back_on() -> None:
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():  # nested: off until the outermost ends
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_gc_paused_turns_it_back_on_after_an_error() -> None:
    with pytest.raises(ValueError), gc_paused():
        raise ValueError("boom")
    assert gc.isenabled()


def test_gc_paused_leaves_a_collector_that_was_off_off() -> None:
    gc.disable()
    try:
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_parse_split_gives_back_the_collector(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine's parse (the tree the index and the rules get) runs LibCST's parser with
    the collector off and leaves it on, on success and on a parse error."""
    seen: list[bool] = []
    real = cst.parse_module

    def parse_module(text: str) -> cst.Module:
        seen.append(gc.isenabled())
        return real(text)

    monkeypatch.setattr(cst, "parse_module", parse_module)
    module, _ = engine.parse_split(DEF, None)
    with pytest.raises(MigrationError):
        engine.parse_split("def broken(:\n", None)
    assert module.code == DEF
    assert len(seen) == 2 and not any(seen)
    assert gc.isenabled()
