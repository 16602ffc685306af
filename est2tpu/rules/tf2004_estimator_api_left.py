"""TF2004: every Estimator API left after the tf2 rules gets a finding: current TensorFlow has none.

TF2001 moves what the facade provides exactly; TF2002/TF2003 handle TF1 code in model_fns.
What is left still names `tf.estimator`, `tensorflow_estimator` or `tf.contrib`, which current
TensorFlow (2.16+) does not have: an import of such a module fails, an attribute use raises.
This rule runs once, after the others, over the final code, and reports each import of such a
module and each `tf.estimator...` use, unless another rule already explained that line. Any
such use left means the migrated file would not run: the file is then left as it is, the
findings saying what to port by hand (a tf2 output never references `tf.estimator`).
"""

from __future__ import annotations

import ast
from typing import cast

import libcst as cst

from est2tpu.names import (
    ESTIMATOR_ONLY_MODULES,
    ast_dotted,
    dotted,
    in_estimator_only_module,
)
from est2tpu.pytree import PyTree
from est2tpu.rule import FileState, Rule

_FACADE = (
    "est2tpu.runtime.tf2 provides Estimator, EstimatorSpec, ModeKeys, RunConfig, TrainSpec, "
    "EvalSpec, train_and_evaluate, add_metrics, exporters and serving input receivers, "
    "inputs.numpy_input_fn/pandas_input_fn, model_to_estimator, the DNN/Linear classifiers "
    "and regressors, the common hooks and contrib.learn's CSV loaders; heads, other hooks, "
    "feature-column premades, contrib.learn's Experiment, TPU and Estimator internals have no "
    "equivalent there"
)


# The Estimator-only modules under `tensorflow`, as `ImportTable.uses` names them.
_TF_RELATIVE = tuple(
    m.removeprefix("tensorflow.") for m in ESTIMATOR_ONLY_MODULES if m.startswith("tensorflow.")
)


def _module_hint(module: str) -> str:
    if module.startswith("tensorflow.contrib"):
        return "tf.contrib was removed in TensorFlow 2"
    return "tf.estimator was removed in TensorFlow 2.16"


class EstimatorApiLeft(Rule):
    FINAL = True

    @classmethod
    def applies(cls, state: FileState) -> bool:
        imports = state.imports
        if any(in_estimator_only_module(t) for t in imports.bindings.values()):
            return True
        return imports.uses(state.original, *_TF_RELATIVE)

    def visit_Import(self, node: cst.Import) -> bool:
        for alias in node.names:
            module = dotted(alias.name) or ""
            if in_estimator_only_module(module):
                self._import(node, module, bound=alias.evaluated_alias or module)
        return False  # the names in an import statement are not uses

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        if node.relative or node.module is None:
            return False
        base = dotted(node.module) or ""
        if isinstance(node.names, cst.ImportStar):
            if in_estimator_only_module(base):
                self._import(node, base, bound="*")
            return False
        for alias in node.names:
            module = f"{base}.{dotted(alias.name)}"
            if in_estimator_only_module(module):
                self._import(node, module, bound=alias.evaluated_alias or alias.evaluated_name)
        return False

    def _import(self, node: cst.CSTNode, module: str, bound: str) -> None:
        self.state.keep_original = True
        self.refuse(node, _import_message(module, bound))

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        qualified = self.state.imports.qualify(node)
        if not in_estimator_only_module(qualified):
            return True
        # Reached through a module current TensorFlow has (`tf.estimator.X`): the use fails.
        head = node
        while isinstance(head, cst.Attribute):
            head = head.value  # type: ignore[assignment]
        if isinstance(head, cst.Name) and in_estimator_only_module(
            self.state.imports.qualify(head)
        ):
            return False  # through an Estimator-only import, reported at the import
        self.state.keep_original = True
        self.refuse(node, _use_message(dotted(node) or "this name", qualified or ""))
        return False

    @classmethod
    def scan(cls, tree: PyTree, state: FileState) -> list[tuple[ast.AST, str]] | None:
        imports = state.imports
        found: list[tuple[ast.AST, str]] = []
        for node in tree.imports():
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if in_estimator_only_module(alias.name):
                        found.append(
                            (node, _import_message(alias.name, alias.asname or alias.name))
                        )
            elif node.level == 0 and node.module is not None:
                if node.names[0].name == "*":
                    if in_estimator_only_module(node.module):
                        found.append((node, _import_message(node.module, "*")))
                    continue
                for alias in node.names:
                    module = f"{node.module}.{alias.name}"
                    if in_estimator_only_module(module):
                        found.append((node, _import_message(module, alias.asname or alias.name)))
        # The walk of LibCST's tree reports an attribute chain at its outermost attribute
        # and does not enter it: the attributes that are another one's value are not met.
        attributes = cast("list[ast.Attribute]", tree.of(ast.Attribute))
        inner = {id(n.value) for n in attributes if type(n.value) is ast.Attribute}
        for attribute in attributes:
            if id(attribute) in inner:
                continue
            name = ast_dotted(attribute)
            qualified = imports.qualify_dotted(name) if name is not None else None
            if not in_estimator_only_module(qualified):
                continue
            assert name is not None and qualified is not None
            if in_estimator_only_module(imports.qualify_dotted(name.partition(".")[0])):
                continue  # through an Estimator-only import, reported at the import
            if id(attribute) in tree.in_fstrings:
                return None  # Python 3.11 places nodes inside f-strings unreliably
            found.append((attribute, _use_message(name, qualified)))
        return found


_KEPT = "the file is left as it is (its migration would fail at import on current TensorFlow)"


def _import_message(module: str, bound: str) -> str:
    return (
        f"`{module}` does not exist in current TensorFlow ({_module_hint(module)}) and "
        f"est2tpu could not move what this file uses through `{bound}` to the tf2 facade: "
        f"{_KEPT}; port those uses by hand, then delete the import ({_FACADE})"
    )


def _use_message(name: str, qualified: str) -> str:
    return (
        f"{name} does not exist in current TensorFlow ({_module_hint(qualified)}) and has "
        f"no exact tf2 facade equivalent that est2tpu could prove here: {_KEPT}; rewrite "
        f"this use by hand ({_FACADE})"
    )
