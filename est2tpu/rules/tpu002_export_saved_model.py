"""TPU002: `estimator.export_savedmodel(...)` -> `estimator.export_saved_model(...)`."""

from __future__ import annotations

import libcst as cst

from est2tpu.rule import FileState, Rule


class ExportSavedModel(Rule):
    @classmethod
    def applies(cls, state: FileState) -> bool:
        return ".export_savedmodel(" in state.original

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        func = updated_node.func
        if not isinstance(func, cst.Attribute) or func.attr.value != "export_savedmodel":
            return updated_node
        # Only Estimator ever had `export_savedmodel`; its arguments carried over unchanged
        # (export_dir_base, serving_input_receiver_fn, ...), except `strip_default_attrs`,
        # whose default changed from False to True.
        if not any(
            a.keyword and a.keyword.value == "strip_default_attrs" for a in updated_node.args
        ):
            positional = [a for a in updated_node.args if a.keyword is None]
            if len(positional) > 4:
                self.refuse(
                    original_node,
                    "export_savedmodel with positional strip_default_attrs; rename by hand",
                )
                return updated_node
        self.record(original_node, "export_savedmodel -> export_saved_model")
        return updated_node.with_changes(
            func=func.with_changes(attr=cst.Name("export_saved_model"))
        )
