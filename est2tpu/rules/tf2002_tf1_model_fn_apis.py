"""TF2002: TF1 layers, losses, metrics, optimizers and the global step in a model_fn -> the
tf2 facade's exact equivalents, from one table."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from est2tpu.ftypes import Target
from est2tpu.rule import FileState, Rule
from est2tpu.rules.tf2001_estimator_facade import facade, has_model_fn_code, model_fn_scopes


@dataclass(frozen=True)
class Mapping:
    """`tf.compat.v1.<old>` -> `est2tpu.runtime.tf2.<new>`, same call signature."""

    old: str
    new: str
    # True when `tf.<old>` (without compat.v1) cannot mean anything else in TF 2.x, so the
    # plain spelling is TF1 code too. `tf.losses`/`tf.metrics` are Keras in TF 2.x: only
    # their compat.v1 spellings are TF1.
    plain_is_tf1: bool = False


def _same(prefix: str, names: str, plain_is_tf1: bool = False) -> list[Mapping]:
    return [Mapping(f"{prefix}.{n}", f"{prefix}.{n}", plain_is_tf1) for n in names.split()]


MAPPINGS: tuple[Mapping, ...] = (
    *_same(
        "layers",
        "dense batch_normalization dropout conv1d conv2d max_pooling1d max_pooling2d "
        "average_pooling2d flatten",
        plain_is_tf1=True,
    ),
    *_same(
        "losses",
        "absolute_difference compute_weighted_loss cosine_distance hinge_loss huber_loss "
        "log_loss mean_squared_error sigmoid_cross_entropy softmax_cross_entropy "
        "sparse_softmax_cross_entropy get_regularization_loss Reduction",
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
COLLECTION = "get_collection"


class Tf1ModelFnApis(Rule):
    ID = "TF2002"
    TARGETS = (Target.TF2,)

    @classmethod
    def applies(cls, state: FileState) -> bool:
        return has_model_fn_code(state)

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.model_fns = model_fn_scopes(self.state)
        self.depth = 0  # > 0 inside a model_fn (nested defs included: helpers run there)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if self.depth or self.here in self.model_fns:
            self.depth += 1

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        if self.depth:
            self.depth -= 1
        return updated_node

    def tf1_name(self, node: cst.BaseExpression) -> str | None:
        """`layers.dense` for `tf.compat.v1.layers.dense` (and for `tf.layers.dense`)."""
        qualified = self.state.imports.qualify(node)
        if qualified is None:
            return None
        for root, plain in (("tensorflow.compat.v1.", False), ("tensorflow.", True)):
            if qualified.startswith(root):
                name = qualified[len(root) :]
                mapping = TABLE.get(name)
                if name == COLLECTION:
                    return name
                if mapping is not None and (not plain or mapping.plain_is_tf1):
                    return name
                return None
        return None

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if not self.depth or self.tf1_name(original_node.func) != COLLECTION:
            return updated_node
        first = original_node.args[0].value if original_node.args else None
        if first is None or self.tf1_name(first) != "GraphKeys.UPDATE_OPS":
            return updated_node  # TF2003 reports other collections
        self.record(original_node, "get_collection(UPDATE_OPS) -> the facade's (empty) list")
        return updated_node.with_changes(func=facade(self, COLLECTION))

    def leave_Attribute(
        self, original_node: cst.Attribute, updated_node: cst.Attribute
    ) -> cst.BaseExpression:
        if not self.depth:
            return updated_node
        name = self.tf1_name(original_node)
        if name is None or name == COLLECTION:
            return updated_node
        new = TABLE[name].new
        self.record(original_node, f"tf.compat.v1.{name} -> est2tpu.runtime.tf2.{new}")
        return facade(self, new)
