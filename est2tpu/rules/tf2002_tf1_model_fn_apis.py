"""TF2002: TF1 layers, losses, metrics, optimizers and the global step in a model_fn -> the
tf2 facade's exact equivalents, from one table."""

from __future__ import annotations

import libcst as cst

from est2tpu.rule import FileState
from est2tpu.rules._tf2 import (
    KERAS_TOO,
    TABLE,
    PairUses,
    facade,
    has_model_fn_code,
    model_fn_scopes,
)

COLLECTION = "get_collection"


class Tf1ModelFnApis(PairUses):
    @classmethod
    def applies(cls, state: FileState) -> bool:
        return has_model_fn_code(state)

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
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
        """`layers.dense` for `tf.compat.v1.layers.dense` (and for `tf.layers.dense`; for
        `tf.metrics.mean_squared_error` where its value is used as TF1's metric pair)."""
        qualified = self.state.imports.qualify(node)
        if qualified is None:
            return None
        for root, plain in (("tensorflow.compat.v1.", False), ("tensorflow.", True)):
            if qualified.startswith(root):
                name = qualified[len(root) :]
                mapping = TABLE.get(name)
                if name == COLLECTION:
                    return name
                if mapping is not None and (
                    not plain
                    or mapping.plain_is_tf1
                    or (name in KERAS_TOO and id(node) in self.paired)
                ):
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
        qualified = self.state.imports.qualify(original_node) or ""
        # The plain spelling (`tf.metrics.auc`) says it is TF 1's, as TF 2.x reads it otherwise.
        spelled = "tf.compat.v1." if "compat.v1." in qualified else "TF 1's tf."
        self.record(original_node, f"{spelled}{name} -> est2tpu.runtime.tf2.{new}")
        return facade(self, new)
