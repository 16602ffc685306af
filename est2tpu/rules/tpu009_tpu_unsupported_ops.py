"""TPU009: report what a model_fn does that a TPU cannot run and no rule can fix safely."""

from __future__ import annotations

import builtins

import libcst as cst

from est2tpu.cstutil import (
    add_param,
    assigned_names,
    free_names,
    has_param,
    iter_calls,
    kwarg,
    names_read,
    pure_read,
    scalar_tensor,
    walk,
)
from est2tpu.names import dotted
from est2tpu.rule import FileState, Rule
from est2tpu.rules._tpu009_reports import (
    METRIC_PREFIXES,
    check_call,
    check_dtypes,
    check_training_metrics,
)
from est2tpu.rules._tpu009_statements import (
    assigned_in,
    docstring,
    keep_config,
    metrics_loop,
    summary_guard,
)

# Summaries a model_fn writes that move to host_call as the TPU reference models write them
# (tensors reshaped and passed out with the global step, tf.compat.v2.summary on the host).
MOVABLE = {
    "summary.scalar": "scalar",
    "compat.v1.summary.scalar": "scalar",
    "contrib.summary.scalar": "scalar",
    "summary.histogram": "histogram",
    "compat.v1.summary.histogram": "histogram",
    "contrib.summary.histogram": "histogram",
}
# Summaries that may stay where they are, beside a host_call, as statements of their own
# (a FileWriter: assigned; it writes only what it is given).
STAYING = frozenset(
    {"scalar", "histogram", "image", "text", "audio", "tensor_summary", "merge_all", "merge",
     "FileWriter"}
)  # fmt: skip
# What to do by hand with a summary that does not move, by kind.
_BUILTINS = frozenset(dir(builtins))
NOT_TENSORS = frozenset({"params", "mode", "config", "self"})
SPEC_NAMES = frozenset({"estimator.EstimatorSpec", "estimator.tpu.TPUEstimatorSpec",
                        "compat.v1.estimator.tpu.TPUEstimatorSpec",
                        "contrib.tpu.TPUEstimatorSpec", "tpu.TPUEstimatorSpec"})  # fmt: skip


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
        self.moved_what = "summaries moved to host_call"
        moved = self._summaries_to_host_call(updated_node)
        if moved is not None:
            self.record(original_node, self.moved_what)
            return moved
        for call in iter_calls(original_node):
            check_call(self, call, self.string_constants)
        check_dtypes(self, original_node)
        check_training_metrics(self, original_node, self._mode_is)
        return updated_node

    # -- summaries -> host_call -------------------------------------------------------------

    def _summary(self, stmt: cst.BaseStatement) -> tuple[str, cst.Call] | None:
        """(kind, call) for `tf.compat.v1.summary.scalar("tag", tensor)` alone on its line,
        or for a loop that writes one per metric of a dict: `for name, op in
        metrics.items(): tf.summary.scalar(name, op[1])` (its tensor reads `op` only), or
        for one alone under `if <read> is not None:` (see `_summary_guard`)."""
        if (guarded := summary_guard(stmt)) is not None:
            return self._summary(guarded[1])
        if (loop := metrics_loop(stmt)) is not None:
            inner, key, value, _ = loop
            found = self._summary(inner)
            if found is None:
                return None
            tag, tensor = found[1].args[0].value, found[1].args[1].value
            if not (isinstance(tag, cst.Name) and tag.value == key):
                return None
            if {n.value for n in free_names(tensor)} != {value}:
                return None
            return found
        if not (
            isinstance(stmt, cst.SimpleStatementLine)
            and len(stmt.body) == 1
            and isinstance(stmt.body[0], cst.Expr)
            and isinstance(stmt.body[0].value, cst.Call)
        ):
            return None
        call = stmt.body[0].value
        kind = MOVABLE.get(self.tf_name(call.func) or "")
        if kind is None or len(call.args) != 2 or any(a.keyword or a.star for a in call.args):
            return None
        if not isinstance(call.args[0].value, (cst.SimpleString, cst.Name)):
            return None
        return kind, call

    def _metrics_value(self, value: cst.BaseExpression) -> bool:
        """A metric (`tf.metrics.accuracy(...)`), a dict literal of metrics, or a call of the
        project's own function (`get_metrics(labels, logits)`), which TPU003 takes for the
        metrics dict it returns: built again on the host from the tensors it reads."""
        if isinstance(value, cst.Dict):
            return bool(value.elements) and all(
                isinstance(e, cst.DictElement)
                and self._metrics_value(e.value)
                and not isinstance(e.value, cst.Dict)
                for e in value.elements
            )
        if not isinstance(value, cst.Call):
            return False
        name = self.tf_name(value.func)
        if name is not None:
            return name.startswith(METRIC_PREFIXES)
        func = dotted(value.func)
        head, dot, _ = (func or "").partition(".")
        return (
            func is not None
            and func not in ("dict", "None")
            # a builtin (`list(zip(...))`) or a method of a value, not of an imported module
            # (`optimizer.compute_gradients(loss)`), is no project helper returning metrics
            and not (not dot and head in _BUILTINS)
            and not (dot and head != "self" and self.state.imports.import_form(head) is None)
            and not (self.state.imports.qualify(value.func) or "").startswith(
                ("tensorflow", "tf_keras", "keras", "est2tpu.")
            )
        )

    def _eval_only(self, test: cst.BaseExpression) -> bool:
        """`mode == ModeKeys.EVAL` (or PREDICT): code the Estimator never trains through."""
        return self._mode_is(test, ("ModeKeys.EVAL", "ModeKeys.PREDICT"))

    def _mode_is(self, test: cst.BaseExpression, keys: tuple[str, ...]) -> bool:
        """`mode == <one of keys>` (either way round)."""
        if not (
            isinstance(test, cst.Comparison)
            and len(test.comparisons) == 1
            and isinstance(test.comparisons[0].operator, cst.Equal)
        ):
            return False
        sides = (test.left, test.comparisons[0].comparator)
        names = [self.tf_name(side) or "" for side in sides]
        return any(isinstance(side, cst.Name) and side.value == "mode" for side in sides) and any(
            name.endswith(keys) for name in names
        )

    def _summary_block(
        self, body: cst.IndentedBlock
    ) -> tuple[cst.IndentedBlock, int | None, list[cst.IndentedBlock], list[int]] | None:
        """Where a model_fn's summaries are: (the block that trains with them, the index of
        the top-level `if` whose body it is or None for the body itself, the blocks of
        top-level `if mode == EVAL/PREDICT:` that hold some, the indices of body summaries
        that come before an `if mode == TRAIN:` block holding the others). None when they
        sit in two blocks that may both train otherwise."""
        training: list[tuple[cst.IndentedBlock, int | None]] = []
        if any(self._summary(st) for st in body.body):
            training.append((body, None))
        eval_only: list[cst.IndentedBlock] = []
        for k, st in enumerate(body.body):
            if not isinstance(st, cst.If) or not isinstance(st.body, cst.IndentedBlock):
                continue
            if self._summary(st):
                continue  # a guarded summary: one of the block's own
            if not any(self._summary(inner) for inner in st.body.body):
                continue
            if self._eval_only(st.test):
                eval_only.append(st.body)
            else:
                training.append((st.body, k))
        early: list[int] = []
        if len(training) == 2 and training[0][1] is None:
            # Every training step runs the body's summaries before the TRAIN branch and the
            # branch's: the host_call is set up in the branch, the body's tensors taken
            # where their summaries were.
            branch_at = training[1][1]
            assert branch_at is not None
            branch = body.body[branch_at]
            assert isinstance(branch, cst.If)
            early = [k for k, st in enumerate(body.body) if self._summary(st)]
            if not self._mode_is(branch.test, ("ModeKeys.TRAIN",)) or early[-1] > branch_at:
                return None
            training = training[1:]
        if len(training) > 1:
            return None
        block, at = training[0] if training else (body, None)
        return block, at, eval_only, early

    def _summaries_to_host_call(self, fn: cst.FunctionDef) -> cst.FunctionDef | None:
        """`summary.scalar/histogram("tag", tensor)` statements of a model_fn, in its body or
        in the body of one top-level `if` -> one host_call_fn writing the same tags with
        tf.compat.v2.summary, passed to every spec after them that has a loss, in TRAIN only
        (where the Estimator wrote them). Those under `if mode == EVAL:` (or PREDICT) are
        deleted: the Estimator never writes them (evaluation saves its metrics only).

        A summary of a metric's update op (`accuracy[1]`) takes its metric along: the metric
        is built again on the host from the tensors it reads, and leaves the model_fn when
        nothing else there reads it. None when nothing moves or anything is unclear (the
        summaries then stay findings)."""
        fn_body = fn.body
        if not isinstance(fn_body, cst.IndentedBlock):
            return None
        where = self._summary_block(fn_body)
        if where is None:
            return None
        body, at, eval_only, early = where
        found = [(i, s) for i, st in enumerate(body.body) if (s := self._summary(st))]
        dead = [s for block in eval_only for st in block.body if (s := self._summary(st))]
        if not found and not dead:
            return None
        if dead:
            # First on their own (the rule runs again on the result): nothing else changes
            # what an evaluation writes, unless hooks of the user's save summaries there.
            if any(
                kwarg(call, "evaluation_hooks") is not None
                for call in iter_calls(fn)
                if (self.tf_name(call.func) or "") in SPEC_NAMES
            ):
                return None
            self.moved_what = "summaries of EVAL/PREDICT-only code deleted (never written)"
            return self._without(
                fn, {id(st) for b in eval_only for st in b.body if self._summary(st)}
            )
        early_found = [(k, s) for k in early if (s := self._summary(fn_body.body[k]))]
        moving = {id(s[1]) for _, s in (*found, *early_found)}
        if not self._others_may_stay(fn, moving):
            return None
        locals_ = assigned_names(fn)
        if "config" in locals_ and not has_param(fn, "config"):
            return None
        if any(n in locals_ for n in ("host_call_fn", "host_call")):
            return None
        last = found[-1][0]
        metric_stmts: dict[str, cst.SimpleStatementLine] = {}
        for st in body.body[:last]:
            if (
                isinstance(st, cst.SimpleStatementLine)
                and len(st.body) == 1
                and isinstance(st.body[0], cst.Assign)
                and len(st.body[0].targets) == 1
                and isinstance(st.body[0].targets[0].target, cst.Name)
                and self._metrics_value(st.body[0].value)
            ):
                metric_stmts[st.body[0].targets[0].target.value] = st

        def bound_once(names: list[cst.Name], since: int = 0) -> bool:
            """The tensors are read at the host_call set-up, after the last summary: the
            names must mean there what they meant where they were read (at `since`)."""
            later = assigned_in(body.body[since + 1 : last + 1])
            return all(
                n.value in NOT_TENSORS
                or n.value not in locals_
                or len(locals_[n.value]) == 1
                or n.value not in later
                for n in names
            )

        params: list[cst.Param] = []
        passed: list[cst.Element] = []
        host: list[cst.BaseStatement] = []
        metric_inputs: dict[str, str] = {}
        used_metrics: list[str] = []
        step = cst.parse_expression("global_step[0]")
        metric_at = {
            name: i for i, st in enumerate(body.body) for name, m in metric_stmts.items() if st is m
        }
        # Summaries whose tensor cannot be read where the host_call is set up (a name read
        # there is bound again before, or the summary is in the body before the TRAIN
        # branch) keep their place: the tensor is taken there, into a local of its own.
        captured: dict[int, cst.BaseStatement] = {}
        statements = [(fn_body.body[k], k, s, True) for k, s in early_found] + [
            (body.body[i], i, s, False) for i, s in found
        ]
        for number, (stmt, index, (kind, call), in_body) in enumerate(statements):
            tag, tensor = call.args[0].value, call.args[1].value
            loop = metrics_loop(stmt)
            guard = summary_guard(stmt)
            if guard is not None:
                # `if hparams.clip_norm is not None:` decides in Python, when the model_fn
                # runs, whether the summary exists; the host decides again, on the same
                # values (read again there, so nothing may rebind them, nor be a tensor).
                test_reads = free_names(guard[0])
                if in_body or not bound_once([*free_names(tensor), *test_reads], index):
                    return None
                if not all(
                    n.value in NOT_TENSORS
                    or n.value not in locals_
                    or (
                        len(locals_[n.value]) == 1
                        and (v := locals_[n.value][0]) is not None
                        and pure_read(v)
                        and {r.value for r in free_names(v)} <= NOT_TENSORS
                    )
                    for n in test_reads
                ):
                    return None  # `hp = params["hp"]` is a Python value; a tensor may be too
            if loop is None and not isinstance(tag, cst.SimpleString):
                return None
            reads = free_names(tensor)
            if loop is not None:
                # the loop reads its dict: rebuilt on the host, and looped over there
                reads = [cst.Name(loop[3])]
                if reads[0].value not in metric_stmts:
                    return None
            metrics = {n.value for n in reads} & set(metric_stmts)
            if in_body or not bound_once(reads, index):
                if loop is not None or guard is not None:
                    return None
                param = f"summary_{number}"
                if param in locals_ or any(
                    isinstance(value, cst.Call)
                    and (self.tf_name(value.func) or "").startswith(METRIC_PREFIXES)
                    for n in reads
                    for value in locals_.get(n.value, ())
                ):
                    # a metric's update op would run on the device at every step
                    return None
                shape = "[1]" if kind == "scalar" else "[-1]"
                local = cst.Assign(
                    [cst.AssignTarget(cst.Name(param))],
                    cst.Call(
                        self.tf("reshape"),
                        [cst.Arg(tensor), cst.Arg(cst.parse_expression(shape))],
                    ),
                )
                assert isinstance(stmt, cst.SimpleStatementLine)
                captured[id(stmt)] = stmt.with_changes(body=[local])
                params.append(cst.Param(cst.Name(param)))
                passed.append(cst.Element(cst.Name(param)))
                value_on_host = (
                    cst.parse_expression(f"{param}[0]") if kind == "scalar" else cst.Name(param)
                )
                metrics = set()
            elif metrics and guard is None:
                # the tensor is read from the metric, rebuilt on the host
                for m in sorted(metrics - set(used_metrics)):
                    metric_assign = metric_stmts[m].body[0]
                    assert isinstance(metric_assign, cst.Assign)
                    inputs = [n for n in free_names(metric_assign.value) if n.value in locals_]
                    if any(
                        isinstance(value, cst.Dict) for n in inputs for value in locals_[n.value]
                    ):
                        return None  # a dict of tensors cannot travel to the host as one
                    if not bound_once(inputs, metric_at[m]):
                        return None
                    for n in inputs:
                        if n.value in NOT_TENSORS:
                            continue  # a Python value (params, mode): closed over
                        if n.value not in metric_inputs:
                            metric_inputs[n.value] = n.value
                            params.append(cst.Param(cst.Name(n.value)))
                            tensor_in: cst.BaseExpression = cst.Name(n.value)
                            if scalar_tensor(locals_[n.value], self.tf_name):
                                # TPUEstimator concatenates host_call tensors on dim 0
                                tensor_in = cst.Call(
                                    self.tf("reshape"),
                                    [cst.Arg(tensor_in), cst.Arg(cst.parse_expression("[1]"))],
                                )
                            passed.append(cst.Element(tensor_in))
                    host.append(metric_stmts[m].with_changes(leading_lines=()))
                    used_metrics.append(m)
                others = [n for n in reads if n.value in locals_ and n.value not in metrics]
                if others:
                    return None
                value_on_host = tensor
            elif metrics:
                return None
            else:
                param = f"summary_{number}"
                params.append(cst.Param(cst.Name(param)))
                shape = "[1]" if kind == "scalar" else "[-1]"
                reshaped: cst.BaseExpression = cst.Call(
                    self.tf("reshape"), [cst.Arg(tensor), cst.Arg(cst.parse_expression(shape))]
                )
                if guard is not None:
                    # without the summary the tensor may not exist: a placeholder travels
                    reshaped = cst.IfExp(
                        test=guard[0],
                        body=reshaped,
                        orelse=cst.Call(self.tf("zeros"), [cst.Arg(cst.parse_expression("[1]"))]),
                    )
                passed.append(cst.Element(reshaped))
                value_on_host = (
                    cst.parse_expression(f"{param}[0]") if kind == "scalar" else cst.Name(param)
                )
            written = cst.SimpleStatementLine(
                [
                    cst.Expr(
                        cst.Call(
                            self.tf(f"compat.v2.summary.{kind}"),
                            [
                                cst.Arg(tag),
                                cst.Arg(value_on_host),
                                cst.Arg(
                                    step,
                                    keyword=cst.Name("step"),
                                    equal=cst.AssignEqual(
                                        whitespace_before=cst.SimpleWhitespace(""),
                                        whitespace_after=cst.SimpleWhitespace(""),
                                    ),
                                ),
                            ],
                        )
                    )
                ]
            )
            if loop is not None:
                assert isinstance(stmt, cst.For) and isinstance(stmt.body, cst.IndentedBlock)
                host.append(
                    stmt.with_changes(body=stmt.body.with_changes(body=[written]), leading_lines=())
                )
            elif guard is not None:
                assert isinstance(stmt, cst.If)
                host.append(
                    stmt.with_changes(
                        body=cst.IndentedBlock([written]),
                        leading_lines=(),
                    )
                )
            else:
                host.append(written)
        code = cst.Module([]).code_for_node

        def tf(name: str) -> str:
            return code(self.tf(name))

        lines = [
            f"def host_call_fn(global_step, {', '.join(p.name.value for p in params)}):",
            f"    summary_writer = {tf('compat.v2.summary.create_file_writer')}(config.model_dir)",
            f"    with summary_writer.as_default(), {tf('compat.v2.summary.record_if')}(True):",
            f"        return {tf('compat.v1.summary.all_v2_summary_ops')}()",
        ]
        host_fn = cst.parse_statement("\n".join(lines) + "\n")
        assert isinstance(host_fn, cst.FunctionDef)
        # The statements go in as nodes: LibCST re-indents their continuation lines.
        writer, with_stmt = host_fn.body.body
        assert isinstance(with_stmt, cst.With) and isinstance(with_stmt.body, cst.IndentedBlock)
        moved = [st.with_changes(leading_lines=()) for st in host]
        with_stmt = with_stmt.with_changes(
            body=with_stmt.body.with_changes(body=[*moved, *with_stmt.body.body])
        )
        host_fn = host_fn.with_changes(body=host_fn.body.with_changes(body=[writer, with_stmt]))
        tensors = [f"{tf('reshape')}({tf('compat.v1.train.get_global_step')}(), [1])"]
        tensors += [code(e.value) for e in passed]
        value = (
            "(\n    host_call_fn,\n    [\n"
            + "".join(f"        {t},\n" for t in tensors)
            + "    ],\n)"
        )
        if has_param(fn, "mode"):
            # The Estimator wrote these summaries while training only.
            train = f"{tf('estimator.ModeKeys')}.TRAIN"
            value_lines = value.replace("\n", "\n    ")
            setup = [
                cst.parse_statement("host_call = None\n"),
                cst.parse_statement(f"if mode == {train}:\n    host_call = {value_lines}\n"),
            ]
        else:
            setup = [cst.parse_statement(f"host_call = {value}\n")]
        if at is not None:
            # In a branch: `host_call = None` first thing, for the paths that skip it; in
            # the training branch itself, set unconditionally.
            branch_test = fn_body.body[at]
            assert isinstance(branch_test, cst.If)
            if self._mode_is(branch_test.test, ("ModeKeys.TRAIN",)):
                setup = [cst.parse_statement(f"host_call = {value}\n")]
            elif len(setup) == 2:
                setup = setup[1:]
        summary_ids = {id(body.body[i]) for i, _ in found}
        # a metric that only the moved summaries read leaves the model_fn
        drop = set(summary_ids)
        for m in used_metrics:
            st = metric_stmts[m]
            reads = [
                n
                for other in body.body
                if id(other) not in summary_ids and other is not st
                for n in names_read(other)
                if n.value == m
            ]
            if not reads:
                drop.add(id(st))
        new_body: list[cst.BaseStatement] = []
        specs = 0
        for i, st in enumerate(body.body):
            if i == last:
                assert isinstance(st, (cst.SimpleStatementLine, cst.For, cst.If))  # a summary
                if id(st) in captured:
                    new_body.append(captured[id(st)])
                    new_body.append(host_fn)
                else:
                    new_body.append(host_fn.with_changes(leading_lines=st.leading_lines))
                new_body.extend(setup)
                continue
            if id(st) in captured:
                new_body.append(captured[id(st)])
                continue
            if id(st) in drop:
                continue
            if i > last:
                st, added = self._add_host_call(st)
                specs += added
            new_body.append(st)
        new_block = body.with_changes(body=new_body)
        if at is None:
            top = list(new_block.body)
        else:
            top = [captured.get(id(st), st) for st in fn_body.body]
            branch = top[at]
            assert isinstance(branch, cst.If)
            top[at] = branch.with_changes(body=new_block)
            for k in range(at + 1, len(top)):
                top[k], added = self._add_host_call(top[k])
                specs += added
            if has_param(fn, "mode"):
                first = 1 if top and docstring(top[0]) else 0
                top.insert(first, cst.parse_statement("host_call = None\n"))
        if not specs:
            return None
        result = keep_config(fn.with_changes(body=fn_body.with_changes(body=top)))
        if result is None:
            return None
        if not has_param(result, "config"):
            result = add_param(result, "config")
        return result

    def _others_may_stay(self, fn: cst.FunctionDef, moving: set[int]) -> bool:
        """Whether the summaries that do not move can stay beside a host_call: each is a
        statement of its own (the Estimator's summary hook writes it, as before, and it stays
        a finding), and nothing reads the summaries collection, which would no longer hold
        the moved ones (a used `merge_all()`, `GraphKeys.SUMMARIES`, a SummarySaverHook)."""
        bare: set[int] = set()
        rule = self
        ok = True

        class V(cst.CSTVisitor):
            def visit_Expr(self, node: cst.Expr) -> None:
                bare.add(id(node.value))

            def visit_Attribute(self, node: cst.Attribute) -> None:
                nonlocal ok
                name = rule.tf_name(node) or ""
                if name.endswith(("GraphKeys.SUMMARIES", "SummarySaverHook")):
                    ok = False

        walk(fn, V())
        for call in iter_calls(fn, into_defs=True):
            name = self.tf_name(call.func) or ""
            if not name.startswith(("summary.", "compat.v1.summary.", "contrib.summary.")):
                continue
            if id(call) in moving:
                continue
            kind = name.rsplit(".", 1)[-1]
            if name.startswith("contrib.") or kind not in STAYING:
                return False
            if kind != "FileWriter" and id(call) not in bare:
                return False
        return ok

    @staticmethod
    def _without(fn: cst.FunctionDef, dropped: set[int]) -> cst.FunctionDef | None:
        """The model_fn without the statements `dropped` (ids); None if a block would empty."""
        emptied = False

        class T(cst.CSTTransformer):
            def leave_IndentedBlock(
                self, o: cst.IndentedBlock, u: cst.IndentedBlock
            ) -> cst.IndentedBlock:
                nonlocal emptied
                kept = [st for st, orig in zip(u.body, o.body) if id(orig) not in dropped]
                if len(kept) == len(u.body):
                    return u
                emptied = emptied or not kept
                return u.with_changes(body=kept)

        result = fn.visit(T())
        assert isinstance(result, cst.FunctionDef)
        return None if emptied else result

    def _add_host_call(self, stmt: cst.BaseStatement) -> tuple[cst.BaseStatement, int]:
        rule = self
        count = 0

        class T(cst.CSTTransformer):
            def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
                return False

            def leave_Call(self, o: cst.Call, u: cst.Call) -> cst.Call:
                nonlocal count
                name = rule.tf_name(o.func) or ""
                keywords = {a.keyword.value for a in u.args if a.keyword is not None}
                if name in SPEC_NAMES and "loss" in keywords and "host_call" not in keywords:
                    count += 1
                    # Laid out like the arguments before it: the separator they use, and
                    # the last one's trailing comma and whitespace before `)` go to it.
                    last = u.args[-1]
                    sep = u.args[-2].comma if len(u.args) > 1 else None
                    if not isinstance(sep, cst.Comma):
                        sep = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
                    return u.with_changes(
                        args=[
                            *u.args[:-1],
                            last.with_changes(
                                comma=sep, whitespace_after_arg=cst.SimpleWhitespace("")
                            ),
                            cst.Arg(
                                cst.Name("host_call"),
                                keyword=cst.Name("host_call"),
                                equal=cst.AssignEqual(
                                    whitespace_before=cst.SimpleWhitespace(""),
                                    whitespace_after=cst.SimpleWhitespace(""),
                                ),
                                comma=last.comma,
                                whitespace_after_arg=last.whitespace_after_arg,
                            ),
                        ]
                    )
                return u

        result = stmt.visit(T())
        assert isinstance(result, cst.BaseStatement)
        return result, count
