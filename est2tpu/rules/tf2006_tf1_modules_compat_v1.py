"""TF2006: TF 1.x's plain `tf.logging`, `tf.app`, `tf.flags` and `tf.gfile` -> their
`tf.compat.v1` homes (TF 2.x's `tf` has none of them)."""

from __future__ import annotations

import libcst as cst

from est2tpu.names import dotted, spelled_in_code
from est2tpu.rule import FileState, Rule
from est2tpu.rules._tf2 import plain_tensorflow

# TF 1.x's modules TF 2.x's `tf` lacks and `tf.compat.v1` keeps as they were.
MODULES = ("logging", "app", "flags", "gfile")
PLAIN = frozenset(f"tensorflow.{module}" for module in MODULES)


class Tf1ModulesCompatV1(Rule):
    PRUNE = True

    @classmethod
    def applies(cls, state: FileState) -> bool:
        if any(target in PLAIN for target in state.imports.bindings.values()):
            return True
        spellings = [f"{tf}.{module}" for tf in plain_tensorflow(state) for module in MODULES]
        return bool(spellings) and spelled_in_code(state.original, spellings, ".")

    def wanted(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.ImportFrom):
            return self._from_tensorflow(node) is not None
        return isinstance(node, cst.Attribute) and self.state.imports.qualify(node) in PLAIN

    def _from_tensorflow(self, node: cst.ImportFrom) -> list[str] | None:
        """The names a `from tensorflow import ...` imports, when one is one of MODULES."""
        if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
            return None
        if dotted(node.module) != "tensorflow":
            return None
        names = [dotted(alias.name) or "" for alias in node.names]
        return names if any(name in MODULES for name in names) else None

    def leave_Attribute(
        self, original_node: cst.Attribute, updated_node: cst.Attribute
    ) -> cst.BaseExpression:
        qualified = self.state.imports.qualify(original_node)
        if qualified not in PLAIN:
            return updated_node
        module = qualified.removeprefix("tensorflow.")
        self.record(original_node, f"tf.{module} -> tf.compat.v1.{module}")
        return self.tf(f"compat.v1.{module}")

    def leave_ImportFrom(
        self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom
    ) -> cst.ImportFrom:
        names = self._from_tensorflow(original_node)
        if names is None:
            return updated_node
        if not all(name in MODULES for name in names):
            self.refuse(
                original_node,
                "TF 2.x's tensorflow has no "
                + ", ".join(name for name in names if name in MODULES)
                + ": import it from tensorflow.compat.v1 on a line of its own (`from "
                "tensorflow.compat.v1 import ...`), which holds TF 1.x's module",
            )
            return updated_node
        self.record(original_node, "from tensorflow import -> from tensorflow.compat.v1 import")
        return updated_node.with_changes(module=cst.parse_expression("tensorflow.compat.v1"))
