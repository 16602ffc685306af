"""TPU001: `tf.contrib.tpu.*` and `tf.estimator.tpu.*` -> their `tf.compat.v1` homes."""

from __future__ import annotations

import libcst as cst

from est2tpu.cstpatch import schedule_removal
from est2tpu.rule import FileState, Rule

ESTIMATOR_TPU = frozenset(
    {"TPUEstimator", "TPUEstimatorSpec", "RunConfig", "TPUConfig", "InputPipelineConfig"}
)
# tf.contrib.tpu names that live on in tf.compat.v1.tpu (TensorFlow 2.15).
COMPAT_TPU = frozenset(
    {
        "CrossShardOptimizer",
        "bfloat16_scope",
        "rewrite",
        "shard",
        "batch_parallel",
        "replicate",
        "initialize_system",
        "shutdown_system",
        "outside_compilation",
        "cross_replica_sum",
    }
)
OLD_ROOTS = (
    "tensorflow.contrib.tpu.",
    "tensorflow.estimator.tpu.",
    "tensorflow_estimator.estimator.tpu.",
)
RESOLVERS = {
    "tensorflow.contrib.cluster_resolver.TPUClusterResolver": "distribute.cluster_resolver.TPUClusterResolver",
}


class TpuApiSpellings(Rule):
    @classmethod
    def applies(cls, state: FileState) -> bool:
        return any(
            target.startswith(OLD_ROOTS) or target in RESOLVERS
            for target in state.imports.bindings.values()
        ) or state.imports.uses(
            state.original, "contrib.tpu", "estimator.tpu", "contrib.cluster_resolver"
        )

    PRUNE = True

    def wanted(self, node: cst.CSTNode) -> bool:
        if not isinstance(node, (cst.Name, cst.Attribute)):
            return False
        qualified = self.state.imports.qualify(node)
        return qualified is not None and (qualified.startswith(OLD_ROOTS) or qualified in RESOLVERS)

    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    def leave_Attribute(
        self, original_node: cst.Attribute, updated_node: cst.Attribute
    ) -> cst.BaseExpression:
        return self._rewrite(original_node, updated_node)

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        return self._rewrite(original_node, updated_node)

    def _rewrite(
        self, original: cst.Name | cst.Attribute, updated: cst.BaseExpression
    ) -> cst.BaseExpression:
        qualified = self.state.imports.qualify(original)
        if qualified is None:
            return updated
        if qualified in RESOLVERS:
            self._unimport(original, qualified)
            self.record(original, "TPUClusterResolver moved to tf.distribute")
            return self.tf(RESOLVERS[qualified])
        root = next((r for r in OLD_ROOTS if qualified.startswith(r)), None)
        if root is None:
            return updated
        rest = qualified[len(root) :]
        head = rest.split(".")[0]
        if head in ESTIMATOR_TPU:
            new = f"compat.v1.estimator.tpu.{rest}"
        elif head in COMPAT_TPU and root == "tensorflow.contrib.tpu.":
            new = f"compat.v1.tpu.{rest}"
        else:
            if "." not in rest:
                self.refuse(
                    original,
                    f"`{qualified.replace('tensorflow.', 'tf.')}` has no TensorFlow 2 home; "
                    "see the TPU migration guide for its replacement",
                )
            return updated
        self._unimport(original, qualified)
        self.record(original, f"{qualified} -> tf.{new}")
        return self.tf(new)

    def _unimport(self, node: cst.BaseExpression, qualified: str) -> None:
        if isinstance(node, cst.Name):
            module, _, name = qualified.rpartition(".")
            schedule_removal(self.context, module, name)
