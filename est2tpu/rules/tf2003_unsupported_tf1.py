"""TF2003: TF1-only constructs left in a model_fn have no exact TF2 equivalent: report them."""

from __future__ import annotations

import libcst as cst

from est2tpu.rule import FileState, Rule
from est2tpu.rules._tf2 import (
    PLAIN_TF1_ONLY,
    TABLE,
    collection_refusal,
    has_model_fn_code,
    model_fn_scopes,
    plain_tf1,
)

# Canonical-name prefixes (after `tf.compat.v1.`) that only work in a TF1 graph, with the
# way forward. A prefix ending in "." covers a namespace.
UNSUPPORTED: dict[str, str] = {
    "get_variable": "create a Keras layer or a tf.Variable once, outside the model_fn",
    "Variable": "create the tf.Variable once, outside the model_fn",
    "placeholder": "feed tensors through the input_fn",
    "Session": "the facade runs the model; sessions do not exist in TF2",
    "InteractiveSession": "the facade runs the model; sessions do not exist in TF2",
    "get_collection": "only get_collection(GraphKeys.UPDATE_OPS) is supported",
    "add_to_collection": "graph collections do not exist in TF2",
    "get_default_graph": "graphs are per tf.function in TF2",
    "global_variables": "graph collections do not exist in TF2",
    "local_variables": "graph collections do not exist in TF2",
    "GraphKeys": "only GraphKeys.UPDATE_OPS is supported",
    "py_func": (
        "it runs Python on the host: under the facade it works on CPU and GPU (TF2's "
        "tf.compat.v1.py_func is tf.numpy_function) but no TPU can run it; keep the work "
        "outside the model_fn (in the input_fn, or after predict)"
    ),
    "layers.": "this layer has no facade equivalent; use a Keras layer created once",
    "losses.": "this loss has no facade equivalent; compute it with TF2 ops",
    "metrics.": "this metric has no facade equivalent; use one of the facade's metrics",
    "train.": "this tf.compat.v1.train API has no facade equivalent",
    "summary.": (
        "only summary.scalar/histogram/image/audio/text are written by the facade (through "
        "its writer, every save_summary_steps); merged summaries, FileWriter and "
        "tensor_summary need a TF1 session: write the value with one of those instead"
    ),
}
# TF1 summaries TensorFlow 2 writes itself: inside a `tf.function` with a default writer and
# a step (the facade's train loop sets both, as TF1's SummarySaverHook ran them) each of these
# calls its TF2 op, same tag and value; skipped on replicas other than the first.
WRITTEN_SUMMARIES = frozenset(
    f"summary.{kind}" for kind in ("scalar", "histogram", "image", "audio", "text")
)
# TF1's learning-rate schedules: functions of the global step made of TensorFlow ops, which
# current TensorFlow still ships. In the facade's traced step they compute the same tensor
# from the facade's global step, as they did in TF1's graph.
LEARNING_RATE_SCHEDULES = frozenset(
    f"train.{name}"
    for name in (
        "cosine_decay",
        "cosine_decay_restarts",
        "exponential_decay",
        "inverse_time_decay",
        "linear_cosine_decay",
        "natural_exp_decay",
        "noisy_linear_cosine_decay",
        "piecewise_constant",
        "piecewise_constant_decay",
        "polynomial_decay",
    )
)
# `optimizer.compute_gradients` / `apply_gradients` map (the facade's optimizers compute
# TF1's gradients and apply them after the model_fn returns), except an apply_gradients in a
# def or lambda nested in the model_fn: a `tf.cond` branch, whose choice the facade, applying
# once per step after the model_fn, cannot keep.
NESTED_APPLY = (
    "`.apply_gradients(...)` in a function or lambda nested in a model_fn (a tf.cond or "
    "tf.while_loop branch) has no tf2 facade equivalent: the facade applies the gradients "
    "once per step, after the model_fn returns; choose the gradients in the branches (for "
    "instance zeros for the variables a branch leaves alone) and call apply_gradients once, "
    "in the model_fn itself"
)
# TF 1.x's train-op builders, gone from TF 2.x (no tf.contrib) and not in the facade: the
# migrated model_fn would fail on them.
CREATE_TRAIN_OP = frozenset(
    {
        "tensorflow.contrib.training.create_train_op",
        "tensorflow.contrib.slim.learning.create_train_op",
        "tensorflow.contrib.slim.create_train_op",
        "tf_slim.learning.create_train_op",
        "tf_slim.create_train_op",
        "tf_slim.training.create_train_op",
    }
)
# The facade reports an eval_metric_ops `(value, update_op)` entry by the metric its update
# op came from, so a value computed from the metric's (`tf.exp(mean[0])`) would silently be
# reported as the metric's own value.
DERIVED_METRIC_VALUE = (
    "an eval_metric_ops entry whose value `{value}` is not its metric's own value "
    "(`{own}`) has no tf2 facade equivalent: the facade reports an entry by the metric its "
    "update op `{update}` comes from, so it would report that metric's value, not `{value}`; "
    "put the metric itself in eval_metric_ops and compute `{value}` from its result after "
    "evaluate"
)


# TF 1.x's `tf.contrib` in a model_fn: TF 2.x has none of it. Its Estimator modules are
# TF2001's to map and TF2004's to report.
CONTRIB = "contrib."
CONTRIB_ESTIMATOR = ("contrib.estimator", "contrib.learn", "contrib.tpu")
CONTRIB_HINT = (
    "write it with TF 2.x ops, or with the tf.compat.v1 layers, losses, metrics and "
    "optimizers the facade maps"
)


def plain_top(name: str) -> bool:
    """Is `tf.<name>` (plain) one of TF1's names TF 2.x's `tf` lacks?"""
    return any(name == top or name.startswith(f"{top}.") for top in PLAIN_TF1_ONLY)


def unsupported(name: str) -> str | None:
    for prefix, hint in UNSUPPORTED.items():
        if name == prefix or (prefix.endswith(".") and name.startswith(prefix)):
            return hint
        if not prefix.endswith(".") and name.startswith(prefix + "."):
            return hint
    return None


class UnsupportedTf1(Rule):
    @classmethod
    def applies(cls, state: FileState) -> bool:
        return has_model_fn_code(state)

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.model_fns = model_fn_scopes(self.state)
        self.depth = 0
        self.lambdas = 0  # lambdas open inside a model_fn
        self.inner: set[int] = set()
        # (value, update_op) names bound together by `value, update_op = call(...)`.
        self.pairs: dict[str, str] = {}  # update_op name -> value name

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if not self.depth:
            self.pairs = {}  # names are per model_fn
        if self.depth or self.here in self.model_fns:
            self.depth += 1

    def visit_Lambda(self, node: cst.Lambda) -> None:
        if self.depth:
            self.lambdas += 1

    def leave_Lambda(self, original_node: cst.Lambda, updated_node: cst.Lambda) -> cst.Lambda:
        if self.depth:
            self.lambdas -= 1
        return updated_node

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        if self.depth:
            self.depth -= 1
        return updated_node

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.inner.add(id(node.value))
        self.inner.add(id(node.attr))
        if self.depth:
            self._check(node)

    def visit_Name(self, node: cst.Name) -> None:
        if self.depth and id(node) not in self.inner:
            self._check(node)

    def visit_Assign(self, node: cst.Assign) -> None:
        if not self.depth:
            return
        for target in node.targets:
            inner = target.target
            if (
                isinstance(node.value, cst.Call)
                and isinstance(inner, (cst.Tuple, cst.List))
                and len(inner.elements) == 2
                and all(isinstance(e.value, cst.Name) for e in inner.elements)
            ):
                value, update = (e.value for e in inner.elements)
                assert isinstance(value, cst.Name) and isinstance(update, cst.Name)
                self.pairs[update.value] = value.value
            elif isinstance(inner, cst.Subscript):
                self._check_metric_entry(node.value)

    def visit_DictElement(self, node: cst.DictElement) -> None:
        if self.depth:
            self._check_metric_entry(node.value)

    def _check_metric_entry(self, entry: cst.BaseExpression) -> None:
        """Refuse `(value, update_op)` where update_op is a metric's and value is not that
        metric's value (`(tf.exp(m[0]), m[1])`, `(perplexity, log_ppl_update)`)."""
        if not isinstance(entry, cst.Tuple) or len(entry.elements) != 2:
            return
        value, update = (e.value for e in entry.elements)
        if isinstance(update, cst.Name) and update.value in self.pairs:
            own: cst.BaseExpression = cst.Name(self.pairs[update.value])
        elif (
            isinstance(update, cst.Subscript)
            and isinstance(update.value, cst.Name)
            and _index(update) == 1
        ):
            own = update.with_changes(slice=[cst.SubscriptElement(cst.Index(cst.Integer("0")))])
        else:
            return
        if value.deep_equals(own):
            return
        code = cst.Module([]).code_for_node
        self.refuse(
            value,
            DERIVED_METRIC_VALUE.format(value=code(value), own=code(own), update=code(update)),
        )

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if self.depth:
            self._check_collection(node)
        if self.depth and (self.state.imports.qualify(func) or "") in CREATE_TRAIN_OP:
            self.refuse(
                node,
                f"`{cst.Module([]).code_for_node(func)}(...)` (TF 1.x's tf.contrib / "
                "TF-Slim train-op builder) has no tf2 facade equivalent and TF 2.x has no "
                "tf.contrib; TF2002 expands `train_op = create_train_op(loss, optimizer)` "
                "(global_step the global step, check_numerics, the other arguments at their "
                "defaults), not this one: write what it ran: `update_ops = "
                "tf.compat.v1.get_collection("
                "tf.compat.v1.GraphKeys.UPDATE_OPS)`, then under `with tf.control_dependencies("
                "update_ops):` `train_op = optimizer.minimize(loss, global_step="
                "tf.compat.v1.train.get_global_step())` (TF2002 maps these; gradient "
                "clipping or multipliers: compute_gradients, transform, apply_gradients)",
            )
        if (
            (self.depth > 1 or self.lambdas)
            and isinstance(func, cst.Attribute)
            and func.attr.value == "apply_gradients"
            and self.state.imports.qualify(func) is None
        ):
            self.refuse(node, NESTED_APPLY)

    def _check_collection(self, node: cst.Call) -> None:
        """TF1's loss-collection calls TF2002 maps, but for arguments the facade cannot keep."""
        qualified = self.state.imports.qualify(node.func) or ""
        for root in ("tensorflow.compat.v1.", "tensorflow."):
            name = qualified.removeprefix(root)
            if name != qualified:
                break
        else:
            return
        if root == "tensorflow." and not plain_tf1(name):
            return
        problem = collection_refusal(name, node)
        if problem is None:
            return
        self.refuse(
            node,
            f"`{cst.Module([]).code_for_node(node.func)}(...)` (TF1's `tf.compat.v1.{name}`) "
            f"{problem}, so it has no exact TF2 equivalent in a model_fn run by the tf2 "
            "facade: drop the argument where the default collection is meant, or keep the "
            "losses in a Python list and sum them with tf.add_n",
        )

    def _check(self, node: cst.Name | cst.Attribute) -> None:
        if id(node) in self.inner:
            return  # only the whole dotted name is judged
        qualified = self.state.imports.qualify(node)
        if qualified is None:
            return
        if not qualified.startswith("tensorflow.compat.v1."):
            self._check_plain(node, qualified)
            return
        name = qualified[len("tensorflow.compat.v1.") :]
        if name in TABLE:
            return  # TF2002's to map
        if name in WRITTEN_SUMMARIES or name in LEARNING_RATE_SCHEDULES:
            return
        hint = unsupported(name)
        if hint is not None and name == "py_func":
            self.refuse(node, f"`tf.compat.v1.py_func` in a model_fn run by the tf2 facade: {hint}")
        elif hint is not None:
            self.refuse(
                node,
                f"`tf.compat.v1.{name}` has no exact TF2 equivalent in a model_fn run by the "
                f"tf2 facade; {hint}",
            )

    def _check_plain(self, node: cst.Name | cst.Attribute, qualified: str) -> None:
        """`tf.metrics.mean_iou`, `tf.losses.get_total_loss`: TF1's, as TF 2.x's Keras
        `tf.metrics`/`tf.losses` have no such name; TF2002 maps the ones the facade has."""
        name = qualified.removeprefix("tensorflow.")
        if name == qualified or name in TABLE or qualified in CREATE_TRAIN_OP:
            return
        if name.startswith(CONTRIB) and not name.startswith(CONTRIB_ESTIMATOR):
            self.refuse(
                node,
                f"`tf.{name}` is TensorFlow 1.x's tf.contrib, which TF 2.x does not have, so "
                f"the migrated model_fn would fail; {CONTRIB_HINT}",
            )
            return
        if name == "py_func":
            self.refuse(
                node,
                "`tf.py_func` is TensorFlow 1's `tf.compat.v1.py_func` (TF 2.x's `tf` has no "
                "such name, so the migrated model_fn would fail): it runs Python on the host, "
                "which no TPU can run; keep the work outside the model_fn (in the input_fn, or "
                "after predict), or call tf.numpy_function where no TPU runs it",
            )
            return
        if plain_top(name):
            self.refuse(
                node,
                f"`tf.{name}` is TensorFlow 1's `tf.compat.v1.{name}` (TF 2.x's `tf` has no "
                "such name, so the migrated model_fn would fail) and has no exact TF2 "
                f"equivalent in a model_fn run by the tf2 facade; {unsupported(name)}",
            )
            return
        if not plain_tf1(name):
            return
        hint = unsupported(name)
        if hint is not None:
            spelled = f"tf.{name}"
            self.refuse(
                node,
                f"`{spelled}` is TensorFlow 1's `tf.compat.v1.{name}` (TF 2.x's `tf."
                f"{name.partition('.')[0]}` is Keras' and has no such name, so the migrated "
                f"model_fn would fail) and has no exact TF2 equivalent in a model_fn run by "
                f"the tf2 facade; {hint}",
            )


def _index(node: cst.Subscript) -> int | None:
    if len(node.slice) != 1:
        return None
    index = node.slice[0].slice
    if isinstance(index, cst.Index) and isinstance(index.value, cst.Integer):
        return int(index.value.value)
    return None
