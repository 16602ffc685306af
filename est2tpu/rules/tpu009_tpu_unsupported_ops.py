"""TPU009: report what a model_fn does that a TPU cannot run and no rule can fix safely."""

from __future__ import annotations

import libcst as cst

from est2tpu.cstutil import iter_calls, walk
from est2tpu.rule import FileState, Rule

PY_FUNCS = frozenset({"py_func", "py_function", "numpy_function", "compat.v1.py_func"})
DYNAMIC_SHAPES = frozenset(
    {"boolean_mask", "unique", "dynamic_partition", "where_v2", "math.bincount", "bincount"}
)
FLOAT64 = frozenset({"float64", "double", "dtypes.float64"})


class TpuUnsupported(Rule):
    @classmethod
    def applies(cls, state: FileState) -> bool:
        return cls.file_has_model_fn(state)

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.string_constants: set[str] = set()

    def visit_Module(self, node: cst.Module) -> None:
        for stmt in node.body:
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if (
                        isinstance(small, cst.Assign)
                        and isinstance(small.value, (cst.List, cst.Tuple))
                        and small.value.elements
                        and all(isinstance(e.value, cst.SimpleString) for e in small.value.elements)
                    ):
                        for t in small.targets:
                            if isinstance(t.target, cst.Name):
                                self.string_constants.add(t.target.value)

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        if not self.in_model_fn():
            return updated_node
        for call in iter_calls(original_node):
            self._check_call(call)
        self._check_dtypes(original_node)
        return updated_node

    def _check_call(self, call: cst.Call) -> None:
        name = self.tf_name(call.func) or ""
        if name in PY_FUNCS:
            self.refuse(
                call,
                f"tf.{name} runs Python on the host and cannot run on TPU; rewrite it with "
                "TensorFlow ops or move it into the input function",
            )
        elif name.startswith(("summary.", "compat.v1.summary.")):
            self.refuse(
                call,
                f"tf.{name} inside a model_fn does not run on TPU; pass the tensors through "
                "TPUEstimatorSpec(host_call=(host_fn, tensors)) and write the summary there",
            )
        elif name in DYNAMIC_SHAPES or (name == "where" and len(call.args) == 1):
            self.refuse(
                call,
                f"tf.{name} gives a shape known only at run time; TPU needs static shapes: "
                "use a fixed-size mask (e.g. multiply by a 0/1 weight) instead",
            )
        elif name.startswith("strings.") or name in ("as_string", "string_split"):
            self.refuse(
                call,
                f"tf.{name} makes string tensors, which TPU cannot hold; map strings to ids "
                "in the input function (or compute them on the host in predictions only)",
            )
        elif name in ("gather", "constant", "convert_to_tensor") and call.args:
            first = call.args[0].value
            if (isinstance(first, cst.Name) and first.value in self.string_constants) or (
                isinstance(first, (cst.List, cst.Tuple))
                and first.elements
                and all(isinstance(e.value, cst.SimpleString) for e in first.elements)
            ):
                self.refuse(
                    call,
                    "a string tensor built inside the model_fn cannot live on TPU; return "
                    "class ids and map them to names outside the model (or in a serving "
                    "signature)",
                )

    def _check_dtypes(self, fn: cst.FunctionDef) -> None:
        rule = self

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
