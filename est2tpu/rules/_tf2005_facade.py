"""TF2005's plan and rewrite of premade calls (`PremadeFacadeBase`), apart from the rule's
module so that TF2001 can ask it which premade calls map without importing another rule."""

from __future__ import annotations

import libcst as cst

from est2tpu.cstutil import (
    descendants,
    ending_as,
    explode,
    is_multiline,
    iter_calls,
    too_long,
    with_kwarg,
)
from est2tpu.cstutil import kwarg as cst_kwarg
from est2tpu.names import canonical_tf
from est2tpu.rule import FileState, Rule
from est2tpu.rules._tf2 import FACADE_MODULE, drop_estimator_import, facade
from est2tpu.rules._tf2005_optimizers import (
    TF1_OPTIMIZERS,
    Plan,
    TF1OptimizerTranslation,
    is_none,
)
from est2tpu.rules._tf2005_premade import (
    DNN_EXACT_COLUMNS,
    EXACT_COLUMNS,
    OPTIMIZER_NAMES,
    PREMADE_FACADE,
    V1_COMMON_PREFIX,
    PremadeChecks,
    builds_other_estimator,
)
from est2tpu.tfapi import V1_PARTITIONER

PREMADE_RULE = "TF2005"  # the rule `PremadeFacadeBase` is (rules/TF2005.md)


def why_not(short: str) -> str:
    """The finding for a premade estimator the facade does not reproduce."""
    return (
        f"premade {short} has no exact tf2 mapping (the facade reproduces "
        f"{', '.join(PREMADE_FACADE)} only): write its model_fn (or a Keras model under "
        "`est2tpu.runtime.tf2.strategy().scope()`) by hand"
    )


def is_premade(canonical: str | None) -> bool:
    """A premade estimator's name (the facade's four and those it does not reproduce)."""
    return canonical is not None and builds_other_estimator(canonical)


class PremadeFacadeBase(Rule, PremadeChecks, TF1OptimizerTranslation):
    """Premade calls whose every argument maps exactly become the facade's; TF2001 leaves
    them (and, unless this rule maps them, their arguments) alone."""

    @classmethod
    def applies(cls, state: FileState) -> bool:
        """The file names the Estimator API (where the premades live) in its code or
        imports a name from it."""
        for target in state.imports.bindings.values():
            if target == FACADE_MODULE:
                return True  # a first run's output: its refusals must survive
            name = canonical_tf(target)
            if name is not None and (name == "estimator" or name.startswith("estimator.")):
                return True
        return state.imports.uses(state.original, "estimator")

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.inner: set[int] = set()  # Attribute/Name nodes that head a longer chain
        self.keep: set[int] = set()  # nodes of refused premade calls: left as they are
        self.attrs: set[int] = set()  # the Name after a dot: no name of its own
        self.premade_ok: set[int] = set()  # funcs of premade calls that map exactly
        self._columns: list[str] | None = None  # feature-column kinds this module builds
        self._module: cst.Module = cst.Module(body=[])
        # premade calls (by id) -> why they stay (None: they map), decided before the walk
        # since a TF1 optimizer they are given may be built (and rewritten) before them
        self.premade_why: dict[int, str | None] = {}
        self.tf1_optimizers: dict[int, Plan] = {}  # TF1 optimizer calls -> their Keras form
        self.v1_premades: set[int] = set()  # premades given one: TF 1.x's V1 classes
        # V1 premade calls (by id) -> the partitioner argument they drop ("" for none)
        self.v1_partitioned: dict[int, str] = {}
        # V1 premade calls (by id) -> the Keras legacy optimizer their name or default is
        # (`Adagrad(learning_rate=0.05)`), when the V2 facade's would differ
        self.v1_optimizer: dict[int, str] = {}

    def visit_Module(self, node: cst.Module) -> None:
        self._module = node
        self._plan_premades(node)

    def maps(self, call: cst.Call) -> bool:
        """Does this premade call of the module `visit_Module` planned become the facade's?
        (What TF2001 asks, to rewrite the call's arguments or leave them.)"""
        short = (self.tf_name(call.func) or "").rsplit(".", 1)[-1]
        if short not in PREMADE_FACADE:
            return False
        why = self.premade_why.get(id(call), "")
        if why == "":  # not seen before the walk (never: every call is)
            why = self.premade_refusal(call, short, self._module, {})
        return why is None

    def _plan_premades(self, module: cst.Module) -> None:
        """Decide every premade call of the module, with the TF1 optimizers it is given."""
        scopes: list[cst.Module | cst.FunctionDef] = [module]
        scopes += [n for n in descendants(module) if isinstance(n, cst.FunctionDef)]
        for scope in scopes:
            for call in iter_calls(scope):
                canonical = self.tf_name(call.func) or ""
                short = canonical.rsplit(".", 1)[-1]
                if canonical != f"estimator.{short}" or short not in PREMADE_FACADE:
                    continue
                plans: dict[int, Plan] = {}
                why = self.premade_refusal(call, short, scope, plans)
                self.premade_why[id(call)] = why
                if why is None and (plans or id(call) in self.v1_partitioned):
                    self.tf1_optimizers.update(plans)
                    self.v1_premades.add(id(call))

    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.inner.add(id(node.value))
        self.attrs.add(id(node.attr))

    def visit_Call(self, node: cst.Call) -> None:
        canonical = self.tf_name(node.func)
        if not is_premade(canonical):
            return
        assert canonical is not None
        short = canonical.rsplit(".", 1)[-1]
        if short in PREMADE_FACADE and canonical == f"estimator.{short}":
            why = self.premade_why.get(id(node), "")
            if why == "":  # not seen before the walk (never: every call is)
                why = self.premade_refusal(node, short, self._module, {})
            if why is None:
                self.premade_ok.add(id(node.func))
                return
        else:
            why = why_not(short)
        # A refused premade keeps its arguments too (its RunConfig stays a
        # tf.estimator.RunConfig, TF2001 sees to that): never half a migration.
        self.refuse(node.func, why)
        self.keep.update(id(n) for n in descendants(node))

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        alias = self.state.imports.alias_for("tensorflow")
        plan = self.tf1_optimizers.get(id(original_node))
        if plan is not None:
            canonical = self.tf_name(original_node.func)
            self.record(
                original_node,
                f"tf.{canonical} given to a premade estimator -> "
                f"tf.keras.optimizers.legacy.{plan.keras} (the same update)",
            )
            keras_call = self._keras_optimizer(updated_node, plan, f"{alias}")
            if self._explode(original_node, keras_call):
                keras_call = explode(keras_call, self.call_depth())
            return keras_call
        if id(original_node) not in self.v1_premades:
            return updated_node
        updated_node = self._v1_arguments(original_node, updated_node, f"{alias}")
        if cst_kwarg(original_node, "loss_reduction") is None:
            self.record(
                original_node,
                "a premade given a TF1 optimizer is TF 1.x's V1 class, whose loss_reduction "
                "defaults to SUM -> loss_reduction=tf.keras.losses.Reduction.SUM",
            )
            updated_node = with_kwarg(
                updated_node,
                "loss_reduction",
                cst.parse_expression(f"{alias}.keras.losses.Reduction.SUM"),
            )
            if self._explode(original_node, updated_node):
                updated_node = explode(updated_node, self.call_depth())
        return self._relaid(original_node, updated_node)

    def _explode(self, original: cst.Call, new: cst.Call) -> bool:
        """Lay a call that grew too long out one argument per line; only outside other
        multi-line calls (inside them, a dict or list would need a deeper indent)."""
        return not is_multiline(original) and too_long(new) and self.call_depth() == 1

    def premade_refusal(
        self,
        node: cst.Call,
        short: str,
        scope: cst.Module | cst.FunctionDef,
        plans: dict[int, Plan],
    ) -> str | None:
        """Why this premade call cannot become the facade's (None: it maps exactly). The
        TF1 optimizers it is given, and how each maps, go into `plans`."""
        manual = (
            "write its model_fn (or a Keras model under "
            "`est2tpu.runtime.tf2.strategy().scope()`) by hand"
        )
        qualified = self.state.imports.qualify(node.func) or ""
        if ".compat.v1." in qualified:
            return (
                f"tf.compat.v1.estimator.{short} is the V1 premade (TF1 optimizers, heads and "
                f"metrics), which the facade does not reproduce; use tf.estimator.{short} "
                f"(V2) if its behaviour is acceptable, or {manual}"
            )
        if any(a.star for a in node.args):
            return (
                f"{short}(*args/**kwargs): the arguments cannot be checked; spell them out, "
                "then re-run"
            )
        params = PREMADE_FACADE[short]
        args: dict[str, cst.BaseExpression] = {}
        for i, arg in enumerate(node.args):
            if arg.keyword is not None:
                args[arg.keyword.value] = arg.value
            elif i < len(params):
                args[params[i]] = arg.value
        bad: list[str] = []
        partitioner = V1_PARTITIONER[short]
        partitioned = cst_kwarg(node, partitioner) is not None
        # Only TF 1.x's V1 class takes it (TF 2.15's V2 raises a TypeError); it is dropped
        # (see V1_PARTITIONER), so its value must be one whose evaluation does nothing else.
        if partitioned and not self._plain_partitioner(args.pop(partitioner)):
            bad.append(
                f"{partitioner}= (an expression whose evaluation may do more than build "
                "a partitioner, which dropping the argument would drop: bind it to a name "
                "before the call)"
            )
        unknown = sorted(set(args) - set(params))
        if unknown:
            return f"{short}({', '.join(unknown)}): not an argument of tf.estimator.{short}"
        optimizer = args.get("optimizer")
        tf1 = None if optimizer is None else self._tf1_optimizers(node, optimizer, scope)
        if isinstance(tf1, str):
            bad.append(f"optimizer {tf1}")
        elif tf1 is not None or partitioned:
            if tf1 is not None:
                plans.update(tf1)
            else:
                named = self._v1_named_optimizer(short, optimizer)
                if named.startswith("("):
                    bad.append(f"optimizer {named}")
                elif named:
                    self.v1_optimizer[id(node)] = named
            self.v1_partitioned[id(node)] = partitioner if partitioned else ""
            # A TF1 optimizer makes this TF 1.x's V1 class (TF 2.15's V2 raises a
            # ValueError for one), as a partitioner does; V1's positional order differs
            # after these.
            common = V1_COMMON_PREFIX[short]
            if any(a.keyword is None for a in node.args[common:]):
                bad.append(
                    f"positional arguments after {PREMADE_FACADE[short][common - 1]} (TF 1.x's "
                    f"{short} orders its parameters differently from TF 2.15's)"
                )
        elif optimizer is not None and not self._exact_optimizer(optimizer):
            bad.append(
                "optimizer (only a name "
                f"{', '.join(repr(n) for n in OPTIMIZER_NAMES)}, a "
                "`tf.keras.optimizers.legacy.*(...)` call, or a TF1 "
                f"{', '.join(sorted({n[6:-9] for n in TF1_OPTIMIZERS}))} optimizer written "
                "here or bound only to such calls in the same function maps exactly)"
            )
        if "label_vocabulary" in args and not is_none(args["label_vocabulary"]):
            bad.append(
                "label_vocabulary (string labels cannot reach a TPU: map them to class ids "
                "in the input_fn)"
            )
        if "warm_start_from" in args and not is_none(args["warm_start_from"]):
            bad.append(
                "warm_start_from (an Estimator checkpoint is name-based; the facade's are "
                "object-based)"
            )
        reduction = args.get("loss_reduction")
        if reduction is not None and not self._exact_reduction(reduction):
            bad.append(
                "loss_reduction (only tf.losses.Reduction.SUM_OVER_BATCH_SIZE or SUM, written "
                "here or the only value of a name in the module)"
            )
        dnn = short.startswith("DNN")
        kinds = self.column_kinds(DNN_EXACT_COLUMNS if dnn else EXACT_COLUMNS)
        if kinds:
            exact = (
                "only numeric, bucketized and categorical (identity, weighted, vocabulary, "
                "hash bucket, crossed) columns through indicator_column or embedding_column "
                "are mapped exactly"
                if dnn
                else "only numeric_column is mapped exactly"
            )
            bad.append(f"feature columns {', '.join(kinds)} ({exact})")
        if not bad:
            return None
        return (
            f"premade {short} left as it is: {'; '.join(bad)} has no exact equivalent in the "
            f"tf2 facade's {short}; change {'it' if len(bad) == 1 else 'them'} and re-run, "
            f"or {manual}"
        )

    def _v1_arguments(self, original: cst.Call, updated: cst.Call, alias: str) -> cst.Call:
        """A V1 premade's partitioner dropped and its optimizer name (or default) written as
        the Keras legacy optimizer that makes V1's update."""
        partitioner = self.v1_partitioned.get(id(original), "")
        if partitioner:
            self.record(
                original,
                f"{partitioner}= of TF 1.x's V1 premade dropped: partitioning shards the "
                "variables over parameter servers and leaves the model's function and updates "
                "as they are",
            )
            args = [a for a in updated.args if a.keyword is None or a.keyword.value != partitioner]
            updated = updated.with_changes(args=ending_as(args, updated.args))
        keras = self.v1_optimizer.get(id(original))
        if keras is not None:
            value = cst.parse_expression(f"{alias}.keras.optimizers.legacy.{keras}")
            self.record(
                original,
                "TF 1.x's V1 premade builds a named (or its default) optimizer as TF1's class at "
                f"its own learning rate -> optimizer=tf.keras.optimizers.legacy.{keras}",
            )
            short = (self.tf_name(original.func) or "").rsplit(".", 1)[-1]
            params = PREMADE_FACADE[short]  # V1's order up to `optimizer` (V1_COMMON_PREFIX)
            given = [
                i
                for i, a in enumerate(updated.args)
                if (a.keyword.value if a.keyword is not None else params[i]) == "optimizer"
            ]
            if given:
                args = list(updated.args)
                args[given[0]] = args[given[0]].with_changes(value=value)
                updated = updated.with_changes(args=args)
            else:
                updated = with_kwarg(updated, "optimizer", value)
        return updated

    def leave_Attribute(
        self, original_node: cst.Attribute, updated_node: cst.Attribute
    ) -> cst.BaseExpression:
        return self._rewrite(original_node, updated_node)

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        return self._rewrite(original_node, updated_node)

    def _rewrite(
        self, original: cst.Name | cst.Attribute, updated: cst.BaseExpression
    ) -> cst.BaseExpression:
        if id(original) in self.keep or id(original) in self.attrs:
            return updated
        canonical = self.tf_name(original)
        if canonical is None or self.state.imports.qualify(original) is None:
            return updated
        short = canonical.rsplit(".", 1)[-1]
        if id(original) in self.premade_ok:
            drop_estimator_import(self, original)
            self.record(original, f"tf.{canonical} -> {FACADE_MODULE}.{short}")
            return facade(self, short)
        if id(original) not in self.inner and is_premade(canonical):
            self.refuse(original, why_not(short))
        return updated
