"""TPU015: a file written for TF 1.x imports TensorFlow as `tensorflow.compat.v1`."""

from __future__ import annotations

import libcst as cst

from est2tpu.names import dotted
from est2tpu.rule import FileState, Rule
from est2tpu.rules._tf2 import tf1_bindings, written_for_tf1

COMPAT_V1 = "tensorflow.compat.v1"


class Tf1FileCompatV1(Rule):
    @classmethod
    def applies(cls, state: FileState) -> bool:
        return written_for_tf1(state)

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        # the plain bindings to move: those that spell TF 1.x-only names (read from the
        # text before any rule ran; once moved they are bound to tensorflow.compat.v1)
        self.moved = {
            name
            for name in tf1_bindings(self.state)
            if self.state.imports.bindings.get(name) == "tensorflow"
        }

    def leave_Import(self, original_node: cst.Import, updated_node: cst.Import) -> cst.Import:
        names = []
        changed = False
        for alias in updated_node.names:
            bound = (
                alias.asname.name.value
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name)
                else dotted(alias.name)
            )
            if dotted(alias.name) == "tensorflow" and bound in self.moved:
                alias = alias.with_changes(
                    name=cst.parse_expression(COMPAT_V1),
                    asname=cst.AsName(name=cst.Name(bound)),
                )
                changed = True
            names.append(alias)
        if not changed:
            return updated_node
        self.record(original_node, "import tensorflow -> import tensorflow.compat.v1")
        return updated_node.with_changes(names=names)

    def leave_ImportFrom(
        self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom
    ) -> cst.ImportFrom:
        if (
            not self.moved
            or original_node.relative
            or original_node.module is None
            or dotted(original_node.module) != "tensorflow"
            or isinstance(original_node.names, cst.ImportStar)
            or any(dotted(alias.name) == "contrib" for alias in original_node.names)
        ):
            return updated_node
        self.record(original_node, "from tensorflow import -> from tensorflow.compat.v1 import")
        return updated_node.with_changes(module=cst.parse_expression(COMPAT_V1))

    def leave_Attribute(
        self, original_node: cst.Attribute, updated_node: cst.Attribute
    ) -> cst.BaseExpression:
        # `tf.compat.v1.X` -> `tf.X`: under `import tensorflow.compat.v1 as tf` both are
        # tensorflow.compat.v1.X (TensorFlow's compat modules hold compat modules again)
        value = updated_node.value
        if (
            original_node.attr.value == "v1"
            and isinstance(value, cst.Attribute)
            and value.attr.value == "compat"
            and isinstance(value.value, cst.Name)
            and value.value.value in self.moved
        ):
            return value.value
        return updated_node
