"""What the tf2 rules (TF2001-TF2005) share: the facade module, which defs run as a
model_fn, and the table of TF1 APIs the facade has exact equivalents for. Not a rule (the
registry skips `_`-prefixed modules)."""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst

from est2tpu.cstpatch import schedule_import, schedule_removal
from est2tpu.cstutil import iter_calls
from est2tpu.index import ProjectIndex
from est2tpu.names import attr_chain, in_estimator_only_module
from est2tpu.rule import FileState, Rule
from est2tpu.scan import code_only, may_spell

FACADE_MODULE = "est2tpu.runtime.tf2"
FACADE_ALIAS = "tf2_runtime"


def facade(rule: Rule, name: str) -> cst.BaseExpression:
    """A reference to `est2tpu.runtime.tf2.<name>`, imported as `tf2_runtime`."""
    schedule_import(rule.context, FACADE_MODULE, asname=FACADE_ALIAS)
    return attr_chain(f"{FACADE_ALIAS}.{name}")


def drop_estimator_import(rule: Rule, node: cst.Name | cst.Attribute) -> None:
    """`tfe.Estimator` (or `Estimator`) became the facade's: once nothing else uses `tfe`,
    its import of an Estimator-only module goes (current TensorFlow cannot import it).
    LibCST removes it only if it is unused when the rule is done; an import of `tensorflow`
    itself stays."""
    head: cst.BaseExpression = node
    while isinstance(head, cst.Attribute):
        head = head.value
    if not isinstance(head, cst.Name):
        return
    imports = rule.state.imports
    target = imports.bindings.get(head.value)
    if not (isinstance(node, cst.Name) or in_estimator_only_module(target)):
        return
    form = imports.import_form(head.value)
    if form is not None:
        schedule_removal(rule.context, *form)


def tf2_model_fns(index: ProjectIndex) -> set[tuple[str, str]]:
    """Every project def an Estimator is built with (the tf2 target keeps any model_fn).

    Not a TPUEstimator's (est2tpu's own tpu-estimator output, or hand-written): the facade
    runs no TPUEstimator, so its model_fn stays TF1 code and TF2001 reports the
    TPUEstimator; the file is left as it is."""
    return {
        p.model_fn
        for p in index.ctors.values()
        if p.model_fn is not None and not p.keras and not p.premade and not p.tpu
    }


def model_fn_scopes(state: FileState) -> set[str]:
    """Defs of this file that run as (part of) a model_fn: the model_fns, the defs the index
    found them calling in any module (`ProjectIndex.model_fn_helpers`), and the top-level
    functions of this file those call by name, transitively (helpers that build the net)."""
    roots = {
        scope
        for path, scope in tf2_model_fns(state.index) | state.index.model_fn_helpers
        if path == state.path
    }
    module = state.current
    if not roots or module is None:
        return roots
    defs = {s.name.value: s for s in module.body if isinstance(s, cst.FunctionDef)}
    found, todo = set(roots), list(roots)
    while todo:
        fn = defs.get(todo.pop().split(".")[0])
        if fn is None:
            continue
        for call in iter_calls(fn, into_defs=True):
            name = call.func.value if isinstance(call.func, cst.Name) else None
            if name in defs and name not in found:
                found.add(name)
                todo.append(name)
    return found


def has_model_fn_code(state: FileState) -> bool:
    """Does this file hold a model_fn or a def one calls (the tf2 rules' `applies`)?"""
    return any(
        path == state.path for path, _ in tf2_model_fns(state.index) | state.index.model_fn_helpers
    )


@dataclass(frozen=True)
class Mapping:
    """`tf.compat.v1.<old>` -> `est2tpu.runtime.tf2.<new>`, same call signature."""

    old: str
    new: str
    # True when `tf.<old>` (without compat.v1) cannot mean anything else in TF 2.x, so the
    # plain spelling is TF1 code too.
    plain_is_tf1: bool = False


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# TF1's `tf.metrics` and `tf.losses` (as TF 2.15's tf.compat.v1 keeps them). In TF 2.x the
# plain `tf.metrics`/`tf.losses` are Keras' modules, which lack all of these names but
# KERAS_TOO: a model_fn written for TF 1 that calls `tf.metrics.auc` fails on TF 2.x with an
# AttributeError, so the plain spelling of these names is TF1 code.
TF1_METRICS = _words(
    "accuracy auc average_precision_at_k false_negatives false_negatives_at_thresholds "
    "false_positives false_positives_at_thresholds mean mean_absolute_error "
    "mean_cosine_distance mean_iou mean_per_class_accuracy mean_relative_error "
    "mean_squared_error mean_tensor percentage_below precision precision_at_k "
    "precision_at_thresholds precision_at_top_k recall recall_at_k recall_at_thresholds "
    "recall_at_top_k root_mean_squared_error sensitivity_at_specificity "
    "sparse_average_precision_at_k sparse_precision_at_k specificity_at_sensitivity "
    "true_negatives true_negatives_at_thresholds true_positives true_positives_at_thresholds"
)
TF1_LOSSES = _words(
    "Reduction absolute_difference add_loss compute_weighted_loss cosine_distance get_losses "
    "get_regularization_loss get_regularization_losses get_total_loss hinge_loss huber_loss "
    "log_loss mean_pairwise_squared_error mean_squared_error sigmoid_cross_entropy "
    "softmax_cross_entropy sparse_softmax_cross_entropy"
)
# Names TF 2.15's Keras `tf.metrics`/`tf.losses` have too, with another meaning (a
# per-example function, Keras' reduction enum). Plain, the use decides: see `pair_use`.
KERAS_TOO = frozenset(
    {"metrics.mean_absolute_error", "metrics.mean_squared_error", "losses.mean_squared_error"}
    | {"losses.Reduction"}
)


def plain_tf1(name: str) -> bool:
    """Is `tf.<name>` (plain, e.g. `metrics.auc`) TF1's API whatever the use?"""
    module, _, short = name.partition(".")
    names = {"metrics": TF1_METRICS, "losses": TF1_LOSSES}.get(module, frozenset())
    return short in names and name not in KERAS_TOO


# TF1's `tf.losses.Reduction` members Keras' (`none`, `sum`, `sum_over_batch_size`, `auto`)
# lacks; the members both have differ in value (TF1's SUM is "weighted_sum").
TF1_ONLY_REDUCTIONS = frozenset({"MEAN", "SUM_BY_NONZERO_WEIGHTS", "SUM_OVER_NONZERO_WEIGHTS"})


class PairUses(Rule):
    """Collects the KERAS_TOO names a use shows to be TF1's: calls whose value is used as
    TF1's metric `(value, update_op)` pair (a dict value: `eval_metric_ops`, a metric_fn's
    return; a subscript-assigned value, `metrics["mse"] = ...`; unpacked into two names;
    indexed), which Keras' per-example `tf.metrics.mean_squared_error` tensor is not in a
    model_fn; and `tf.losses.Reduction` given as a TF1 loss' `reduction=` or with a member
    only TF1's has."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.paired: set[int] = set()  # ids of those calls' `func`

    def _pair(self, value: cst.BaseExpression | None) -> None:
        if isinstance(value, cst.Call):
            self.paired.add(id(value.func))

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.state.imports.qualify(node.func) or ""
        name = qualified.removeprefix("tensorflow.")
        if not name.startswith("losses.") or not plain_tf1(name):
            return
        for arg in node.args:
            keyword = arg.keyword.value if arg.keyword is not None else None
            if keyword == "reduction" and isinstance(arg.value, cst.Attribute):
                self.paired.add(id(arg.value.value))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value in TF1_ONLY_REDUCTIONS:
            self.paired.add(id(node.value))

    def visit_DictElement(self, node: cst.DictElement) -> None:
        self._pair(node.value)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        self._pair(node.value)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            inner = target.target
            if isinstance(inner, cst.Subscript) or (
                isinstance(inner, (cst.Tuple, cst.List)) and len(inner.elements) == 2
            ):
                self._pair(node.value)


def _same(prefix: str, names: str, plain_is_tf1: bool = False) -> list[Mapping]:
    return [
        Mapping(f"{prefix}.{n}", f"{prefix}.{n}", plain_is_tf1 or plain_tf1(f"{prefix}.{n}"))
        for n in names.split()
    ]


MAPPINGS: tuple[Mapping, ...] = (
    *_same(
        "layers",
        "dense batch_normalization dropout conv1d conv2d max_pooling1d max_pooling2d "
        "average_pooling2d flatten",
        plain_is_tf1=True,
    ),
    # The class forms: the facade's classes take the same arguments.
    *_same(
        "layers",
        "Dense BatchNormalization Dropout Conv1D Conv2D MaxPooling1D MaxPooling2D "
        "AveragePooling2D Flatten",
        plain_is_tf1=True,
    ),
    *_same(
        "losses",
        "absolute_difference compute_weighted_loss cosine_distance hinge_loss huber_loss "
        "log_loss mean_squared_error sigmoid_cross_entropy softmax_cross_entropy "
        "sparse_softmax_cross_entropy get_regularization_loss Reduction",
    ),
    # TF1's LOSSES collection, kept by the facade per model_fn call (and replica); see
    # `collection_refusal` for the arguments it cannot keep.
    *_same(
        "losses",
        "add_loss get_losses get_regularization_losses get_total_loss",
    ),
    *_same(
        "metrics",
        "accuracy auc mean mean_absolute_error mean_squared_error root_mean_squared_error "
        "mean_per_class_accuracy precision recall true_positives false_positives "
        "true_negatives false_negatives",
    ),
    *_same(
        "train",
        "AdadeltaOptimizer AdagradOptimizer AdamOptimizer FtrlOptimizer "
        "GradientDescentOptimizer MomentumOptimizer RMSPropOptimizer "
        "ProximalAdagradOptimizer ProximalGradientDescentOptimizer "
        "get_global_step get_or_create_global_step",
        plain_is_tf1=True,
    ),
    Mapping("GraphKeys.UPDATE_OPS", "GraphKeys.UPDATE_OPS", plain_is_tf1=True),
)
TABLE: dict[str, Mapping] = {m.old: m for m in MAPPINGS}

# TF1's names of `UNSUPPORTED` that TF 2.x's own `tf` lacks (`tf.get_variable`,
# `tf.placeholder`, `tf.summary.merge_all`): spelled plain, as a model_fn written for TF 1
# spells them, they fail on TF 2.x before the facade runs anything.
PLAIN_TF1_ONLY = frozenset(
    {
        "get_variable",
        "placeholder",
        "Session",
        "InteractiveSession",
        "get_collection",
        "add_to_collection",
        "get_default_graph",
        "global_variables",
        "local_variables",
        "GraphKeys",
        "py_func",
        "summary.merge",
        "summary.merge_all",
        "summary.FileWriter",
        "summary.tensor_summary",
    }
)
# TF 1.x's modules TF 2.x's plain `tf` lacks (tf_upgrade_v2 moves each under tf.compat.v1,
# `tf.io.gfile` or absl).
PLAIN_TF1_MODULES = frozenset({"layers", "logging", "app", "flags", "gfile", "contrib"})
# Whole names TF 2.x's plain `tf` lacks besides those modules: a file that spells one
# through a plain `import tensorflow` was written for TF 1.x.
PLAIN_TF1_NAMES = PLAIN_TF1_ONLY | {
    m.old for m in MAPPINGS if m.plain_is_tf1 and m.old.partition(".")[0] not in PLAIN_TF1_MODULES
}


def plain_tensorflow(state: FileState) -> list[str]:
    """The names the file binds to the plain `tensorflow` package (`import tensorflow as tf`),
    through which TF 1.x code spells the names TF 2.x's `tf` lacks."""
    return [name for name, target in state.imports.bindings.items() if target == "tensorflow"]


def written_for_tf1(state: FileState) -> bool:
    """Was this file written for TF 1.x? True when its code spells, through a plain
    `import tensorflow` binding, a name TF 2.x's `tf` lacks (`tf.layers`, `tf.logging`,
    `tf.app.flags`, `tf.train.AdamOptimizer`, `tf.get_variable`, ...): it fails on TF 2.x
    with an AttributeError, so where it ran, plain `tf.losses` and `tf.metrics` were TF1's,
    the names Keras has too (KERAS_TOO) included. Read from the text before any rule ran,
    so every pass of a run gets the same answer."""
    plain = plain_tensorflow(state)
    if not plain:
        return False
    text = state.original
    spellings = [f"{tf}.{name}" for tf in plain for name in PLAIN_TF1_MODULES | PLAIN_TF1_NAMES]
    if not may_spell(text, spellings):
        return False
    # whole names only: `tf.metrics.mean` is TF1-only, `tf.metrics.mean_squared_error` not
    whole = re.compile(rf"(?<![\w.])(?:{'|'.join(map(re.escape, spellings))})(?!\w)")
    return whole.search(code_only(text)) is not None


# TF1's loss-collection functions' parameters, in order (TF 1.15's losses/util.py).
COLLECTION_PARAMS: dict[str, tuple[str, ...]] = {
    "losses.add_loss": ("loss", "loss_collection"),
    "losses.get_losses": ("scope", "loss_collection"),
    "losses.get_regularization_losses": ("scope",),
    "losses.get_regularization_loss": ("scope", "name"),
    "losses.get_total_loss": ("add_regularization_losses", "name", "scope"),
}


def collection_refusal(name: str, call: cst.Call) -> str | None:
    """Why the facade cannot keep this call of TF1 loss API `name` (`losses.add_loss`), or
    None: it keeps TF1's default LOSSES collection of the model_fn call, not another
    collection (`loss_collection=` other than None, TF1's `add_loss` no-op), nor a filter
    by graph name scope (`scope=`, which TF2 graphs traced by tf.function do not keep)."""
    if not name.startswith("losses.") or name not in TABLE:
        return None
    params = COLLECTION_PARAMS.get(name, ())
    code = cst.Module([]).code_for_node
    for i, arg in enumerate(call.args):
        if arg.star:
            return "is called with `*`/`**` arguments the rule cannot read"
        if arg.keyword is not None:
            key = arg.keyword.value
        elif i < len(params):
            key = params[i]
        else:
            continue
        is_none = isinstance(arg.value, cst.Name) and arg.value.value == "None"
        if key == "scope" and name in COLLECTION_PARAMS and not is_none:
            return (
                f"filters TF1's collection by graph name scope (`scope={code(arg.value)}`), "
                "which the facade's tf.function traces do not keep"
            )
        if key == "loss_collection" and (name == "losses.get_losses" or not is_none):
            return (
                f"names a loss collection (`loss_collection={code(arg.value)}`): the facade "
                "keeps only TF1's default LOSSES collection of each model_fn call"
            )
    return None
