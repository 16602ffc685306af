"""What TPU009 reports in a model_fn and no rule can fix safely: Python functions, strings,
float64, shapes known only at run time, summaries that cannot move, TF1 metrics that train on
the device. Not a rule (the registry skips `_` modules)."""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from est2tpu.cstutil import walk
from est2tpu.rule import Rule

SUMMARY_FIXES = {
    "image": "est2tpu does not move it, since the v1 summary writes one `<name>/image/<n>` tag "
    "per image, scaled its own way, which tf.compat.v2.summary.image does not reproduce: pass "
    "the images through TPUEstimatorSpec(host_call=(host_fn, tensors)) by hand, or drop it",
    "text": "its string tensor cannot leave the TPU through host_call: compute the text "
    "outside the model_fn (after training, or in a hook)",
    "merge_all": "on TPU only TPUEstimatorSpec(host_call=...) writes summaries: delete it, and "
    "pass what it merges through host_call",
    "FileWriter": "write from the host_call function, or outside the model_fn",
}
PY_FUNCS = frozenset({"py_func", "py_function", "numpy_function", "compat.v1.py_func"})
DYNAMIC_SHAPES = frozenset(
    {"boolean_mask", "unique", "dynamic_partition", "where_v2", "math.bincount", "bincount"}
)
FLOAT64 = frozenset({"float64", "double", "dtypes.float64"})
METRIC_PREFIXES = ("metrics.", "compat.v1.metrics.", "contrib.metrics.")
_CONTRIB_METRICS = ("tensorflow.contrib.metrics.", "tensorflow.compat.v1.contrib.metrics.")
_TRAIN = ("ModeKeys.TRAIN",)
_NOT_TRAIN = ("ModeKeys.EVAL", "ModeKeys.PREDICT")


def check_call(rule: Rule, call: cst.Call, string_constants: set[str]) -> None:
    """Report one call of a model_fn that a TPU cannot run."""
    name = rule.tf_name(call.func) or ""
    if name in PY_FUNCS:
        rule.refuse(
            call,
            f"tf.{name} runs Python on the host and cannot run on TPU; rewrite it with "
            "TensorFlow ops or move it into the input function",
        )
    elif name.startswith(("summary.", "compat.v1.summary.")):
        kind = name.rsplit(".", 1)[-1]
        rule.refuse(
            call,
            f"tf.{name} inside a model_fn does not run on TPU; "
            + SUMMARY_FIXES.get(
                kind,
                "pass the tensors through TPUEstimatorSpec(host_call=(host_fn, tensors)) "
                "and write the summary there",
            ),
        )
    elif name in DYNAMIC_SHAPES or (name == "where" and len(call.args) == 1):
        rule.refuse(
            call,
            f"tf.{name} gives a shape known only at run time; TPU needs static shapes: "
            "use a fixed-size mask (e.g. multiply by a 0/1 weight) instead",
        )
    elif name.startswith("strings.") or name in ("as_string", "string_split"):
        rule.refuse(
            call,
            f"tf.{name} makes string tensors, which TPU cannot hold; map strings to ids "
            "in the input function (or compute them on the host in predictions only)",
        )
    elif name in ("gather", "constant", "convert_to_tensor") and call.args:
        first = call.args[0].value
        if (isinstance(first, cst.Name) and first.value in string_constants) or (
            isinstance(first, (cst.List, cst.Tuple))
            and first.elements
            and all(isinstance(e.value, cst.SimpleString) for e in first.elements)
        ):
            rule.refuse(
                call,
                "a string tensor built inside the model_fn cannot live on TPU; return "
                "class ids and map them to names outside the model (or in a serving "
                "signature)",
            )


def check_dtypes(rule: Rule, fn: cst.FunctionDef) -> None:
    """Report float64 and tf.string in a model_fn."""

    class V(cst.CSTVisitor):
        def visit_Attribute(self, node: cst.Attribute) -> bool:
            name = rule.tf_name(node) or ""
            if name in FLOAT64:
                rule.refuse(
                    node,
                    "float64 has no TPU support; use float32 (and cast features in the "
                    "input function)",
                )
                return False
            if name == "string":
                rule.refuse(
                    node,
                    "tf.string tensors cannot reach the TPU; convert strings to ids in the "
                    "input function",
                )
                return False
            return True

    walk(fn, V())


def check_training_metrics(
    rule: Rule,
    fn: cst.FunctionDef,
    mode_is: Callable[[cst.BaseExpression, tuple[str, ...]], bool],
) -> None:
    """Report each `tf.compat.v1.metrics.*` call the model_fn makes when it trains: outside
    an `if mode == EVAL/PREDICT:` body or the `else` of an `if mode == TRAIN:`, and outside
    nested defs (a metric_fn, a host_call function: they run on the host). On TPU the
    training step, and the metric with it, runs inside the TPU loop."""

    class V(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is fn

        def visit_ClassDef(self, node: cst.ClassDef) -> bool:
            return False

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            return False

        def visit_If(self, node: cst.If) -> bool:
            if not mode_is(node.test, _NOT_TRAIN):
                node.body.visit(self)
            if node.orelse is not None and not mode_is(node.test, _TRAIN):
                node.orelse.visit(self)
            node.test.visit(self)
            return False

        def visit_Call(self, node: cst.Call) -> None:
            # TF1's metrics only: under TensorFlow 2, `tf.metrics.X` is Keras' (a function
            # of the batch, with no variables), whatever TensorFlow 1 made of it
            qualified = rule.state.imports.qualify(node.func) or ""
            if ".compat.v1.metrics." in qualified or qualified.startswith(_CONTRIB_METRICS):
                name = rule.tf_name(node.func) or ""
                name = name if name.startswith("contrib.") else f"compat.v1.{name}"
                rule.refuse(
                    node,
                    f"tf.{name} runs when the model_fn trains, so on TPU inside the training "
                    "loop: each core counts only its own examples (never summed across cores) "
                    "and hooks and summaries on the host cannot fetch its value; compute it "
                    "only in EVAL mode (TPUEstimatorSpec(eval_metrics=...)), or pass its "
                    "inputs out through host_call and compute it there",
                )

    walk(fn, V())
