"""TF2005's premades: TF 2.15's V2 premade estimators the tf2 facade reproduces, their
parameters, what TF 1.x's V1 premades differ in, and the feature columns, optimizer and loss
reduction arguments whose mapping is exact."""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from est2tpu.cstutil import explode, literal_text, one_per_line
from est2tpu.names import single_assignments
from est2tpu.rule import FileState
from est2tpu.rules._tf2005_optimizers import TF1_NO_KERAS, TF1_OPTIMIZERS, is_none
from est2tpu.tfapi import feature_column_calls, is_column_kind

PREMADE_PREFIXES = ("Baseline", "BoostedTrees", "DNN", "Linear")
# TF 2.15's V2 premade estimators the facade builds exactly (est2tpu/runtime/tf2/premade.py),
# and the parameters of each, in order (positional arguments are matched against them).
PREMADE_FACADE: dict[str, tuple[str, ...]] = {
    "DNNClassifier": (
        "hidden_units",
        "feature_columns",
        "model_dir",
        "n_classes",
        "weight_column",
        "label_vocabulary",
        "optimizer",
        "activation_fn",
        "dropout",
        "config",
        "warm_start_from",
        "loss_reduction",
        "batch_norm",
    ),
    "DNNRegressor": (
        "hidden_units",
        "feature_columns",
        "model_dir",
        "label_dimension",
        "weight_column",
        "optimizer",
        "activation_fn",
        "dropout",
        "config",
        "warm_start_from",
        "loss_reduction",
        "batch_norm",
    ),
    "LinearClassifier": (
        "feature_columns",
        "model_dir",
        "n_classes",
        "weight_column",
        "label_vocabulary",
        "optimizer",
        "config",
        "warm_start_from",
        "loss_reduction",
        "sparse_combiner",
    ),
    "LinearRegressor": (
        "feature_columns",
        "model_dir",
        "label_dimension",
        "weight_column",
        "optimizer",
        "config",
        "warm_start_from",
        "loss_reduction",
        "sparse_combiner",
    ),
}
# What a premade's `optimizer=` may be: one of TF 2.15's names, or a Keras legacy optimizer.
OPTIMIZER_NAMES = ("Adagrad", "Adam", "Ftrl", "RMSProp", "SGD")
LEGACY_OPTIMIZERS = frozenset(
    f"keras.optimizers.legacy.{n}" for n in ("Adagrad", "Adam", "Ftrl", "RMSprop", "SGD")
)
LEGACY_OPTIMIZERS = LEGACY_OPTIMIZERS | {"keras.optimizers.legacy.Adadelta"}
LOSS_REDUCTIONS = frozenset({"SUM_OVER_BATCH_SIZE", "SUM"})


# How many leading parameters TF 1.x's (V1) premade shares with TF 2.15's (V2), in order.
V1_COMMON_PREFIX = {
    "DNNClassifier": 9,
    "DNNRegressor": 8,
    "LinearClassifier": 7,
    "LinearRegressor": 6,
}

# V1_PARTITIONER (tfapi) names the argument only TF 1.x's (V1) premade has: it shards the
# weights it names over parameter servers. TF 1.15's `canned/linear.py` opens
# `variable_scope('linear', partitioner=...)` around the linear model, whose logits are
# `sum_c x_c @ W_c + b`: a partitioned W is the concatenation of its shards (each
# initialized to zeros, as W is), so the product and its gradient (split back per shard) are
# W's, and every optimizer the facade takes updates element-wise. `canned/dnn.py` opens
# `variable_scope('input_from_feature_columns', partitioner=...)` around the input layer
# only, whose variables are embedding tables read by `embedding_lookup` over the shards
# (`partition_strategy='div'`): the rows of the whole table. Without parameter servers both
# default to `min_max_variable_partitioner(max_partitions=num_ps_replicas)` anyway:
# placement, not math.

# TF 1.x's partitioner factories: calls that only build a function (nothing else happens).
PARTITIONER_FACTORIES = frozenset(
    {"fixed_size_partitioner", "min_max_variable_partitioner", "variable_axis_size_partitioner"}
)
# V1's `get_optimizer_instance(name, learning_rate=_LEARNING_RATE)` (TF 2.15
# `canned/optimizers.py`): a name is TF1's class at the premade's own rate (dnn.py 0.05,
# linear.py 0.2), where the V2 facade gives a DNN the Keras class default (Adagrad: 0.001).
V1_LEARNING_RATE = {"DNN": "0.05", "Linear": "0.2"}
V1_DEFAULT_OPTIMIZER = {"DNN": "Adagrad", "Linear": "Ftrl"}


# Feature columns the facade's premades take (the only ones whose mapping is proven here).
EXACT_COLUMNS = frozenset({"feature_column.numeric_column"})
# ... and the DNN premades also take these: TF 2.15's DNN feeds its columns through the same
# `DenseFeatures` layer the facade builds, so a dense column over integer ids (one-hot,
# weighted one-hot, embedding, buckets) is the same function; so are ids looked up from
# strings (vocabulary list or file, hash buckets, crosses), which the facade computes with the
# column's own lookup on the host when the step is compiled (XLA, TPU).
DNN_EXACT_COLUMNS = EXACT_COLUMNS | {
    f"feature_column.{name}"
    for name in (
        "bucketized_column",
        "categorical_column_with_identity",
        "weighted_categorical_column",
        "categorical_column_with_vocabulary_list",
        "categorical_column_with_vocabulary_file",
        "categorical_column_with_hash_bucket",
        "crossed_column",
        "indicator_column",
        "embedding_column",
    )
}


def builds_other_estimator(canonical: str) -> bool:
    """A premade estimator: an Estimator the facade cannot be."""
    short = canonical.rsplit(".", 1)[-1]
    return (
        canonical.startswith("estimator.")
        and short.startswith(PREMADE_PREFIXES)
        and short.endswith(("Classifier", "Regressor", "Estimator"))
    )


class PremadeChecks:
    """What `PremadeFacade` reads of a premade call and its arguments (a mixin)."""

    state: FileState
    tf_name: Callable[[cst.BaseExpression], str | None]
    call_depth: Callable[[], int]
    _module: cst.Module
    _columns: list[str] | None
    v1_optimizer: dict[int, str]
    v1_partitioned: dict[int, str]

    def column_kinds(self, exact: frozenset[str]) -> list[str]:
        """The `tf.feature_column.*` columns this module builds, other than the exact ones
        (`make_parse_example_spec`, `input_layer` build no column)."""
        if self._columns is None:
            current = self.state.current
            found = feature_column_calls(current, self.tf_name) if current is not None else ()
            self._columns = sorted(found)
        return [
            short
            for name in self._columns
            if name not in exact and is_column_kind(short := name.rsplit(".", 1)[-1])
        ]

    def _relaid(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        """A V1 premade whose rewrite made a line too long, laid out one argument per line
        (also a multi-line call, unless a comment sits among its arguments)."""
        if not (self.v1_partitioned.get(id(original)) or id(original) in self.v1_optimizer):
            return updated
        code = cst.Module([]).code_for_node(updated)
        long = max(len(line) for line in code.splitlines()) + 16 > 88
        if long and "#" not in code and not one_per_line(updated) and self.call_depth() == 1:
            return explode(updated, 1)
        return updated

    def _plain_partitioner(self, node: cst.BaseExpression) -> bool:
        """`None`, a name, an attribute of a name, or TF 1.x's partitioner factory called
        with such values or literals: nothing but the value happens when it is evaluated."""
        if isinstance(node, cst.Name):
            return True
        if isinstance(node, cst.Attribute):
            return self._plain_partitioner(node.value)
        if isinstance(node, (cst.Integer, cst.Float, cst.SimpleString)):
            return True
        if isinstance(node, cst.UnaryOperation):
            return self._plain_partitioner(node.expression)
        if isinstance(node, cst.BinaryOperation):
            return self._plain_partitioner(node.left) and self._plain_partitioner(node.right)
        if isinstance(node, cst.Call):
            name = self.tf_name(node.func) or ""
            return name.rsplit(".", 1)[-1] in PARTITIONER_FACTORIES and all(
                not a.star and self._plain_partitioner(a.value) for a in node.args
            )
        return False

    def _v1_named_optimizer(self, short: str, node: cst.BaseExpression | None) -> str:
        """The Keras legacy optimizer (class and arguments) that makes V1's update for an
        optimizer given by name or left to its default; "" when the facade's own is already
        V1's, "(why)" when none is."""
        kind = "DNN" if short.startswith("DNN") else "Linear"
        if node is None:
            name = V1_DEFAULT_OPTIMIZER[kind]
        elif is_none(node):
            if kind == "DNN":
                return "(None: TF 1.x's V1 DNN premade raises a ValueError for it)"
            return ""  # both use Ftrl at min(0.2, 1 / sqrt(len(feature_columns)))
        elif isinstance(node, cst.SimpleString) and literal_text(node) in OPTIMIZER_NAMES:
            name = str(literal_text(node))
        else:
            return (
                f"(the partitioner makes this TF 1.x's V1 {short}, whose optimizer maps "
                "exactly only as a name or a TF1 optimizer written here; a Keras optimizer "
                "fails in it)"
            )
        tf1 = f"train.{'GradientDescent' if name == 'SGD' else name}Optimizer"
        if tf1 in TF1_NO_KERAS:
            return f"({name!r} is TF 1.x's {tf1[6:]}: {TF1_NO_KERAS[tf1]})"
        if kind == "Linear" and name == "Ftrl":
            return ""  # the facade's 'Ftrl' is Ftrl at 0.2 too
        spec = TF1_OPTIMIZERS[tf1]
        extra = "".join(f", {k}={v}" for k, v in spec.written.items())
        return f"{spec.keras}(learning_rate={V1_LEARNING_RATE[kind]}{extra})"

    def _exact_optimizer(self, node: cst.BaseExpression) -> bool:
        if isinstance(node, cst.SimpleString):
            return literal_text(node) in OPTIMIZER_NAMES
        if isinstance(node, cst.Call):
            name = self.tf_name(node.func)
            return name in LEGACY_OPTIMIZERS and not any(a.star for a in node.args)
        return False

    def _exact_reduction(self, node: cst.BaseExpression) -> bool:
        if isinstance(node, cst.Name):
            # `loss_reduction = tf.losses.Reduction.SUM` once in the module: that constant
            value = self._bound_once(node.value)
            return (
                value is not None
                and not isinstance(value, cst.Name)
                and (self._exact_reduction(value))
            )
        name = self.tf_name(node)
        qualified = self.state.imports.qualify(node) or ""
        if name is None or ".compat.v1." in qualified:
            return False  # tf.compat.v1.losses.Reduction is TF1's (weighted_sum, ...)
        head, _, last = name.rpartition(".")
        return head in ("losses.Reduction", "keras.losses.Reduction") and last in LOSS_REDUCTIONS

    def _bound_once(self, name: str) -> cst.BaseExpression | None:
        """What `name = value`, the only binding of the name anywhere in the module, binds."""
        assign = single_assignments(self._module).get(name)
        return assign.value if assign is not None else None
