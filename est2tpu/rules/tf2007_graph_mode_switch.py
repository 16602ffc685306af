"""TF2007: a program that turns TensorFlow 2's behaviour off gets eager execution back.

The facade runs the model_fn in `tf.function` under a distribution strategy, and both need
eager execution: with `tf.compat.v1.disable_eager_execution()` or `disable_v2_behavior()`
called first, the facade's first variable fails to build. Estimator code of the TF 1 era
calls one of them at the top of the program (`import tensorflow.compat.v1 as tf;
tf.disable_v2_behavior()`), so every such program would crash on the tf2 target.

`disable_eager_execution()` goes. `disable_v2_behavior()` becomes
`disable_v2_tensorshape()`: of what it turned off, that is the one the program's own code
can see under the facade (`shape[1].value`, `Dimension`); resource variables, v2 control
flow and tensor equality are what TensorFlow runs in the facade's `tf.function` anyway.
A file that runs TF1 graph code in a session of its own needs eager execution off: there
the call is left as it is, with a finding.
"""

from __future__ import annotations

import libcst as cst

from est2tpu.cstpatch import schedule_import, schedule_removal
from est2tpu.rule import FileState, Rule
from est2tpu.tfapi import EAGER_OFF, TF1_SESSIONS, V2_OFF

TENSORSHAPE_OFF = "disable_v2_tensorshape"
SESSION_NEEDS_GRAPH = (
    "`{call}()` left as it is: the tf2 facade runs the model_fn in tf.function, which "
    "needs eager execution, but {path} runs TF1 graph code in a session of its own "
    "(tf.compat.v1.Session), which needs it off; port that code to TensorFlow 2 (eager "
    "ops, tf.function), then delete this call"
)


class GraphModeSwitch(Rule):
    _sessions: bool | None = None  # see `_runs_session`

    @classmethod
    def applies(cls, state: FileState) -> bool:
        return bool(state.index.ctors) and state.imports.calls(state.original, EAGER_OFF, V2_OFF)

    def _switch(self, stmt: cst.BaseSmallStatement) -> str | None:
        """EAGER_OFF or V2_OFF when `stmt` is a call of that switch on its own."""
        if not (isinstance(stmt, cst.Expr) and isinstance(stmt.value, cst.Call)):
            return None
        if stmt.value.args:
            return None
        name = self.tf_name(stmt.value.func)
        return name if name in (EAGER_OFF, V2_OFF) else None

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine | cst.RemovalSentinel:
        kept: list[cst.BaseSmallStatement] = []
        changed = False
        for old, new in zip(original_node.body, updated_node.body, strict=True):
            name = self._switch(old)
            if name is None or not isinstance(new, cst.Expr):
                kept.append(new)
                continue
            assert isinstance(old, cst.Expr) and isinstance(old.value, cst.Call)
            if self._runs_session():
                self.refuse(old, SESSION_NEEDS_GRAPH.format(call=name, path=self.state.path))
                kept.append(new)
                continue
            changed = True
            if name == EAGER_OFF:
                self._unimport(old.value.func)
                self.record(old, "disable_eager_execution() removed: the facade needs eager")
                continue
            self.record(old, "disable_v2_behavior() -> disable_v2_tensorshape(): eager stays on")
            call = cst.ensure_type(new.value, cst.Call)
            kept.append(new.with_changes(value=call.with_changes(func=self._shapes_off(call))))
        if not changed:
            return updated_node
        if not kept:
            return cst.RemoveFromParent()
        kept[-1] = kept[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
        return updated_node.with_changes(body=kept)

    def _runs_session(self) -> bool:
        """Does this file construct a TF1 session (asked once per pass, at its first switch)?"""
        if self._sessions is None:
            self._sessions = self.state.imports.calls(self.state.original, *TF1_SESSIONS)
        return self._sessions

    def _shapes_off(self, call: cst.Call) -> cst.BaseExpression:
        """`disable_v2_tensorshape` from the module the call took `disable_v2_behavior`
        from: `tf.disable_v2_behavior` -> `tf.disable_v2_tensorshape` (the file's own
        name, bound where the call could read it); a from-imported name -> the same
        from-import of `disable_v2_tensorshape`."""
        func = call.func
        if isinstance(func, cst.Attribute):
            return func.with_changes(attr=cst.Name(TENSORSHAPE_OFF))
        self._unimport(func)
        qualified = self.state.imports.qualify(func) or ""
        schedule_import(self.context, qualified.rpartition(".")[0], TENSORSHAPE_OFF)
        return cst.Name(TENSORSHAPE_OFF)

    def _unimport(self, func: cst.BaseExpression) -> None:
        """`from tensorflow.compat.v1 import disable_v2_behavior`: the import goes with its
        last use."""
        if isinstance(func, cst.Name):
            qualified = self.state.imports.qualify(func)
            if qualified is not None:
                module, _, name = qualified.rpartition(".")
                schedule_removal(self.context, module, name)
