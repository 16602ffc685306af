"""TPU013: `numpy_input_fn`/`pandas_input_fn` -> params-aware shim versions; the batch size
moves to the TPUEstimator."""

from __future__ import annotations

import libcst as cst

from est2tpu.rule import FileState, Rule
from est2tpu.tfapi import NUMPY_INPUTS

# The parameters after batch_size, in order, for turning positionals into keywords.
AFTER_BATCH = ("num_epochs", "shuffle", "queue_capacity", "num_threads", "target_column")


class NumpyInputFn(Rule):
    KEYED = True

    @classmethod
    def applies(cls, state: FileState) -> bool:
        # The index saw the calls themselves (not mentions in docstrings).
        return any(key[0] == state.path for key in state.index.numpy_inputs)

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        name = self.tf_name(original_node.func) or ""
        if name not in NUMPY_INPUTS:
            return updated_node
        key = self.key_of(original_node)
        if key is None or key not in self.state.index.numpy_inputs:
            return updated_node
        batch_at = NUMPY_INPUTS[name]
        args: list[cst.Arg] = []
        position = 0
        for arg in updated_node.args:
            if arg.star:
                self.refuse(original_node, f"{name.rsplit('.', 1)[-1]} with *args; convert by hand")
                return updated_node
            if arg.keyword is None:
                if position == batch_at:
                    position += 1
                    continue
                if position > batch_at:
                    arg = arg.with_changes(
                        keyword=cst.Name(AFTER_BATCH[position - batch_at - 1]),
                        equal=cst.AssignEqual(
                            whitespace_before=cst.SimpleWhitespace(""),
                            whitespace_after=cst.SimpleWhitespace(""),
                        ),
                    )
                position += 1
            elif arg.keyword.value == "batch_size":
                continue
            args.append(arg)
        if args:
            args[-1] = args[-1].with_changes(comma=updated_node.args[-1].comma)
        short = name.rsplit(".", 1)[-1]
        self.record(original_node, f"{short} -> params-aware tpu_runtime.{short}")
        return updated_node.with_changes(func=self.runtime(short), args=args)
