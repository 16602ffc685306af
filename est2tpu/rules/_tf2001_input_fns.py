"""TF2001's input functions that hand out an iterator's tensors.

TF1's Estimator called the input function once, in a graph: `ds.make_one_shot_iterator()
.get_next()` (or `tf.compat.v1.data.make_one_shot_iterator(ds).get_next()`) was a tensor that
gave the next batch at every step, and ended evaluation when the data ran out. Under the tf2
facade the input function runs eagerly: the same call is the first batch, once, so training
would see one batch for ever and evaluation would never end. Such an input function returns
its dataset instead (mapped by what it does to the tensors), which the facade iterates the
way the Estimator's iterator did: the same batches, in the same order. Any other use of an
iterator in an input function (an initializable iterator, `iter()`, tensors the function
computes with beyond restructuring) is refused: TF2001 then leaves the module's Estimator
names as they are, so that TF2004 keeps the whole file as it is.
"""

from __future__ import annotations

import libcst as cst

from est2tpu.batching import get_next_of_one_shot
from est2tpu.cstutil import iter_calls
from est2tpu.rule import Rule
from est2tpu.rules._one_shot_tails import (
    iterator_method,
    iterator_tail,
    map_tail,
    one_shot_return,
)

ITERATOR_REFUSAL = (
    "the input function returns tensors from an iterator (`{made}(...)`), not a one-shot "
    "iterator's `get_next()` whose value it only restructures with TensorFlow ops: the tf2 "
    "facade calls the input function once, eagerly, where these tensors are one batch for "
    "every step; return the tf.data.Dataset (mapped as needed) by hand"
)


def refusals(rule: Rule, module: cst.Module) -> list[tuple[cst.Call, str]]:
    """The iterator-making call and its message for each input function of `module` (as the
    project uses it) that hands out an iterator's tensors in a way no rewrite proves."""
    found: list[tuple[cst.Call, str]] = []
    inputs = rule.state.index.input_fns
    path = rule.state.path

    class Defs(cst.CSTVisitor):
        def __init__(self) -> None:
            self.scope: list[str] = []

        def visit_ClassDef(self, node: cst.ClassDef) -> None:
            self.scope.append(node.name.value)

        def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
            self.scope.pop()

        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            self.scope.append(node.name.value)
            if (path, ".".join(self.scope)) in inputs:
                refused = _refusal(rule, node)
                if refused is not None:
                    found.append(refused)

        def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
            self.scope.pop()

    module.visit(Defs())
    return found


def _refusal(rule: Rule, fn: cst.FunctionDef) -> tuple[cst.Call, str] | None:
    made = [c for c in iter_calls(fn) if iterator_method(rule, c) is not None]
    if not made or one_shot_return(rule, fn) is not None or iterator_tail(rule, fn) is not None:
        return None
    made.sort(key=lambda c: not (iterator_method(rule, c) or "").startswith("make_"))
    return made[0], ITERATOR_REFUSAL.format(made=iterator_method(rule, made[0]))


def returns_dataset(
    rule: Rule, original: cst.FunctionDef, updated: cst.FunctionDef
) -> cst.FunctionDef:
    """`updated` returning the dataset its one-shot iterator went over, or `updated` as it is
    when it makes no iterator, or one `refusals` names."""
    found = one_shot_return(rule, original)
    if found is not None:
        rule.record(original, "input function returns its dataset, not iterator tensors")
        return _return_dataset(updated, *found)
    tail = iterator_tail(rule, original)
    if tail is not None and len(updated.body.body) == len(original.body.body):
        rule.record(original, "input function returns its dataset, not iterator tensors")
        return map_tail(rule, updated, tail)
    return updated


def _return_dataset(
    fn: cst.FunctionDef,
    ret: cst.Return,
    dataset: cst.BaseExpression,
    assign: cst.SimpleStatementLine | None,
) -> cst.FunctionDef:
    """`return it.get_next()` -> `return <dataset>`; the statement that made `it` goes, its
    leading blank lines and comments stay above the return."""
    body = list(fn.body.body)
    last = body[-1]
    assert isinstance(last, cst.SimpleStatementLine)
    leading = list(last.leading_lines)
    if assign is not None:
        made = body[-2]
        assert isinstance(made, cst.SimpleStatementLine)
        leading = [*made.leading_lines, *leading]
        body = body[:-2]
    else:
        body = body[:-1]
    new_return = ret.with_changes(value=dataset)
    body.append(last.with_changes(body=[new_return], leading_lines=leading))
    return fn.with_changes(body=fn.body.with_changes(body=body))


def lambda_dataset(rule: Rule, lam: cst.Lambda) -> cst.Lambda:
    """`lambda: <one-shot iterator over E>.get_next()` -> `lambda: E`: a lambda of no
    parameters that defers exactly that is an input function (nothing else needs a one-shot
    iterator's tensors made later, in the Estimator's graph)."""
    params = lam.params
    if params.params or params.kwonly_params or isinstance(params.star_arg, cst.Param):
        return lam
    dataset = get_next_of_one_shot(lam.body, rule.tf_name)
    if dataset is None:
        return lam
    rule.record(lam, "input_fn lambda returns its dataset, not iterator tensors")
    return lam.with_changes(body=dataset)
