"""TPU014: every Estimator construct the other rules left as it is gets a finding with the fix.

The rewriting rules act on what the project index can prove (an Estimator whose model_fn is a
project function passed by name, its input functions, its specs); everything else is left.
This rule runs once, after them, over the final code, and names each construct still there
that a TPUEstimator program cannot keep, unless another rule already explained that line.
"""

from __future__ import annotations

import ast
import os.path
import re
from typing import cast

import libcst as cst

from est2tpu.names import ast_dotted, estimator_name, estimator_name_of, spelled_in_code
from est2tpu.pytree import PyTree
from est2tpu.rule import FileState, Rule
from est2tpu.tfapi import PREMADE

_WATCHED = (
    "estimator.Estimator",
    "estimator.EstimatorSpec",
    "estimator.RunConfig",
    "contrib.learn.RunConfig",
    "estimator.train_and_evaluate",
    "keras.estimator.model_to_estimator",
    "estimator.inputs.numpy_input_fn",
    "estimator.inputs.pandas_input_fn",
    "contrib.tpu",
    *(f"estimator.{name}" for name in PREMADE),
)
_PRIVATE_MODULES = ("tensorflow_estimator.python.estimator", "tensorflow.python.estimator")
# The last part of the names above that `_message` has a fix for.
_SHORT = frozenset(
    {
        "Estimator",
        "EstimatorSpec",
        "RunConfig",
        "train_and_evaluate",
        "model_to_estimator",
        "numpy_input_fn",
        "pandas_input_fn",
        *PREMADE,
    }
)

_TPU_ESTIMATOR = "tf.compat.v1.estimator.tpu.TPUEstimator"
_EXPORT_SAVEDMODEL = (
    "export_savedmodel was removed in TensorFlow 2: if this is an Estimator, call "
    "export_saved_model(export_dir_base, serving_input_receiver_fn) instead"
)
# Module-level functions SageMaker's legacy TensorFlow container calls beside `model_fn`.
_CONTAINER_INPUT_FNS = frozenset({"train_input_fn", "eval_input_fn", "serving_input_fn"})
_TOP_LEVEL_DEF = re.compile(r"^def\s+(\w+)\s*\(", re.MULTILINE)
_HOW_TPU_ESTIMATOR = (
    f"build a {_TPU_ESTIMATOR} by hand: its model_fn takes `params` and returns "
    "TPUEstimatorSpec, its input functions batch by params['batch_size'] with "
    "drop_remainder=True, and the constructor takes use_tpu and the global "
    "train/eval/predict batch sizes (see `est2tpu explain TPU007`)"
)


def _message(name: str, subclass: bool) -> str | None:
    head, _, short = name.rpartition(".")
    if name.startswith("contrib.tpu"):
        return (
            f"tf.{name} has no home in TensorFlow 2 that est2tpu knows; use its "
            "tf.compat.v1.estimator.tpu / tf.compat.v1.tpu counterpart by hand"
        )
    if name == "estimator.Estimator":
        if subclass:
            return (
                f"a subclass of tf.{name} builds its own model_fn, which est2tpu cannot "
                f"rewrite: derive from {_TPU_ESTIMATOR} instead, pass use_tpu and the batch "
                "sizes to its constructor, and return TPUEstimatorSpec from the model_fn"
            )
        return (
            f"tf.{name} left as it is: est2tpu could not trace its model_fn to a function of "
            f"this project (a lambda, a method, a function from another package); {_HOW_TPU_ESTIMATOR}"
        )
    if subclass:
        return None
    if head == "estimator" and short == "EstimatorSpec":
        return (
            "EstimatorSpec built outside a model_fn that this project passes to an Estimator "
            "(a head, a helper, a model_fn est2tpu cannot trace): where it reaches a "
            "TPUEstimator, return tf.compat.v1.estimator.tpu.TPUEstimatorSpec, with "
            "eval_metric_ops as eval_metrics=(metric_fn, tensors) and scaffold as scaffold_fn"
        )
    if name == "contrib.learn.RunConfig":
        return (
            "tf.contrib.learn.RunConfig does not exist in TensorFlow 2 (tf.contrib was "
            "removed), and TPU008 left this one: it reaches no Estimator est2tpu migrates, or "
            "it has arguments TPU008 does not convert (positional ones, or master, num_cores, "
            "log_device_placement, gpu_memory_fraction, evaluation_master, which "
            "tf.estimator.RunConfig lacks): use "
            "tf.compat.v1.estimator.tpu.RunConfig with the keyword arguments "
            "(est2tpu.runtime.run_config() builds one with the TPU cluster resolver), and "
            "put the session arguments into session_config"
        )
    if head == "estimator" and short == "RunConfig":
        return (
            "RunConfig left as it is (it reaches no Estimator est2tpu migrates): a "
            "TPUEstimator needs tf.compat.v1.estimator.tpu.RunConfig with "
            "tpu_config=TPUConfig(iterations_per_loop=...) and the TPU cluster resolver "
            "(est2tpu.runtime.run_config() builds both)"
        )
    if short == "train_and_evaluate":
        return (
            "train_and_evaluate left as it is (est2tpu could not see a TPUEstimator passed to "
            "it): with a TPUEstimator use est2tpu.runtime.train_and_evaluate, which runs "
            "TPUEstimator's train and evaluate in turn and honours the exporters"
        )
    if short == "model_to_estimator":
        return (
            "model_to_estimator left as it is: pass the compiled Keras model as keras_model= "
            "to est2tpu.runtime.model_to_estimator, which builds a TPUEstimator from it"
        )
    if short in ("numpy_input_fn", "pandas_input_fn"):
        return (
            f"{short} feeds no TPUEstimator est2tpu could see: where it does, use "
            f"est2tpu.runtime.{short} (same arguments without batch_size; TPUEstimator "
            "passes the per-shard batch size in params['batch_size'])"
        )
    if head == "estimator" and short in PREMADE:
        return (
            f"premade {short} has no TPUEstimator form (TPUEstimator needs a model_fn); "
            "use `--target tf2` (Keras model under TPUStrategy) or write a model_fn"
        )
    return None


def _container(state: FileState) -> tuple[tuple[str, ...], bool]:
    """The SageMaker container's input functions the module defines, and whether its
    `model_fn` follows that contract (no Estimator of this project uses it).

    From the text: the engine may hand the rules a module whose untouched top-level defs
    are set aside (est2tpu.inert), and these input functions may be such defs."""
    defs = set(_TOP_LEVEL_DEF.findall(state.original))
    key = (state.path, "model_fn")
    inputs = tuple(sorted(defs & _CONTAINER_INPUT_FNS))
    return inputs, (
        "model_fn" in defs
        and bool(inputs)
        and key not in state.index.kept_model_fns
        and all(plan.model_fn != key for plan in state.index.ctors.values())
    )


def _near(path: str, here: str) -> str:
    """`path` as seen from the directory of `here`."""
    return os.path.relpath(path, os.path.dirname(here) or ".")


class EstimatorApiLeft(Rule):
    FINAL = True
    KEYED = True  # an Estimator the index refused is named with the index's reason

    @classmethod
    def applies(cls, state: FileState) -> bool:
        imports = state.imports
        if imports.uses(state.original, *_WATCHED) or "export_savedmodel" in state.original:
            return True
        # Through tensorflow_estimator's private modules (its own code, tests and examples):
        # a name bound to one of the APIs above, or an attribute of a module bound there.
        spellings: list[str] = []
        for name, target in imports.bindings.items():
            if not target.startswith(_PRIVATE_MODULES):
                continue
            if target.rpartition(".")[2].removesuffix("V2") in _SHORT:
                spellings.append(name)
            else:
                spellings.extend(f"{name}.{short}" for short in _SHORT)
        return spelled_in_code(state.original, spellings)

    container_model_fn = False  # the module follows SageMaker's legacy script contract
    container_inputs: tuple[str, ...] = ()

    def visit_Module(self, node: cst.Module) -> None:
        self.container_inputs, self.container_model_fn = _container(self.state)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if self.container_model_fn and not self.scope[:-1] and node.name.value == "model_fn":
            inputs = self.container_inputs
            self.refuse(
                node.name,
                f"model_fn and {', '.join(inputs)} follow SageMaker's legacy TensorFlow script "
                "contract: its container builds the Estimator from them, and no Estimator of "
                "this project uses them, so nothing here can be migrated (the EstimatorSpecs "
                "are right for that Estimator). For TPU, build a "
                f"{_TPU_ESTIMATOR}(model_fn=model_fn, ...) and train it with these input "
                "functions in a script of your own, then re-run est2tpu",
            )

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        for base in node.bases:
            name = estimator_name(self.state.imports, base.value)
            message = _message(name, subclass=True) if name else None
            if message:
                self.refuse(node.name, message)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "export_savedmodel":
            self.refuse(node, _EXPORT_SAVEDMODEL)
            return
        name = estimator_name(self.state.imports, func)
        message = _message(name, subclass=False) if name else None
        if (
            name == "estimator.EstimatorSpec"
            and self.container_model_fn
            and self.scope[:1] == ["model_fn"]
        ):
            return  # the finding on the model_fn says it
        if name == "estimator.EstimatorSpec":
            kept_in = self.state.index.kept_model_fns.get((self.state.path, self.here))
            if kept_in is not None and self.state.path in kept_in:
                return  # its Estimator, here, stays a plain one (TPU007 says why there)
            if kept_in is not None:
                where = ", ".join(sorted(_near(p, self.state.path) for p in kept_in))
                message = (
                    f"EstimatorSpec of a model_fn whose Estimator stays as it is (in {where}; "
                    "TPU007 there says why): right for that Estimator; once it is a "
                    "TPUEstimator, return tf.compat.v1.estimator.tpu.TPUEstimatorSpec here"
                )
        key = self.key_of(node) if name == "estimator.Estimator" else None
        plan = self.state.index.ctors.get(key) if key is not None else None
        if plan is not None and plan.model_fn is not None and plan.refusal:
            message = f"{plan.refusal} (see `est2tpu explain TPU007`)"
        if message:
            self.refuse(node, message)

    @classmethod
    def scan(cls, tree: PyTree, state: FileState) -> list[tuple[ast.AST, str]] | None:
        # Only where the index knows nothing of this file: no model_fn kept here, no
        # Estimator built here, no SageMaker-contract model_fn (the index's reasons and
        # the scope those lookups take are LibCST's walk's).
        index, path = state.index, state.path
        if any(key[0] == path for key in index.kept_model_fns) or any(
            key[0] == path for key in index.ctors
        ):
            return None
        if _container(state)[1]:
            return None
        found: list[tuple[ast.AST, str]] = []
        for node in cast("list[ast.ClassDef]", tree.of(ast.ClassDef)):
            for base in node.bases:
                if type(base) is ast.Starred:
                    base = base.value  # LibCST's bases are arguments: `*x` is x, starred
                name = _ast_estimator_name(state, base)
                message = _message(name, subclass=True) if name else None
                if message:
                    at = _class_name(tree, node)
                    if at is None:
                        return None
                    found.append((at, message))
        for call in cast("list[ast.Call]", tree.of(ast.Call)):
            func = call.func
            if type(func) is ast.Attribute and func.attr == "export_savedmodel":
                message = _EXPORT_SAVEDMODEL
            else:
                name = _ast_estimator_name(state, func)
                message = _message(name, subclass=False) if name else None
            if message:
                if id(call) in tree.in_fstrings:
                    return None  # Python 3.11 places nodes inside f-strings unreliably
                found.append((call, message))
        return found


def _ast_estimator_name(state: FileState, node: ast.expr) -> str | None:
    name = ast_dotted(node)
    return estimator_name_of(state.imports.qualify_dotted(name)) if name is not None else None


_CLASS_HEAD = re.compile(rb"class[ \t]+")


def _class_name(tree: PyTree, node: ast.ClassDef) -> ast.Name | None:
    """The class's name as a node placed where LibCST places it (Python 3.11's tree places
    only the `class` keyword); None when the name is not on that line."""
    line = tree.line(node.lineno).encode("utf-8")
    head = _CLASS_HEAD.match(line, node.col_offset)
    if head is None or not line.startswith(node.name.encode("utf-8"), head.end()):
        return None
    return ast.Name(id=node.name, lineno=node.lineno, col_offset=head.end())
