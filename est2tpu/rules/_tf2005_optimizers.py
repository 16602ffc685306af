"""TF2005's translation of the TF1 optimizers given to a premade
(`tf.compat.v1.train.*Optimizer`) into the Keras legacy class that makes the same update:
the table, a call's Keras form, and which names bound to such calls may be rewritten."""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from est2tpu.cstutil import descendants, target_names, with_kwarg
from est2tpu.rule import FileState


class TF1Optimizer:
    """A TF1 optimizer class and the Keras legacy class that makes the same update (TF 2.15
    `training/<name>.py` against `keras/src/optimizers/legacy/<name>.py`, same kernels)."""

    def __init__(
        self,
        keras: str,
        params: tuple[str, ...],
        renamed: dict[str, str | None],
        written: dict[str, str] | None = None,
        required: tuple[str, ...] = ("learning_rate",),
    ) -> None:
        self.keras = keras
        self.params = params  # TF1's, in order (positional arguments are matched to them)
        # TF1 name -> Keras name (None: dropped: it does not change the update)
        self.renamed = renamed
        self.written = written or {}  # Keras argument -> TF1's default, when Keras' differs
        self.required = required


_SAME = {"learning_rate": "learning_rate", "name": "name", "use_locking": None}
# `use_locking` only serializes concurrent updates of one variable (the facade applies each
# step once); Ftrl's `accum_name` / `linear_name` only name its slots in a name-based
# checkpoint (the facade's are object-based).
TF1_OPTIMIZERS: dict[str, TF1Optimizer] = {
    "train.AdagradOptimizer": TF1Optimizer(
        "Adagrad",
        ("learning_rate", "initial_accumulator_value", "use_locking", "name"),
        {**_SAME, "initial_accumulator_value": "initial_accumulator_value"},
    ),
    "train.AdamOptimizer": TF1Optimizer(
        "Adam",
        ("learning_rate", "beta1", "beta2", "epsilon", "use_locking", "name"),
        {**_SAME, "beta1": "beta_1", "beta2": "beta_2", "epsilon": "epsilon"},
        {"epsilon": "1e-08"},
        required=(),
    ),
    "train.AdadeltaOptimizer": TF1Optimizer(
        "Adadelta",
        ("learning_rate", "rho", "epsilon", "use_locking", "name"),
        {**_SAME, "rho": "rho", "epsilon": "epsilon"},
        {"epsilon": "1e-08"},
        required=(),
    ),
    "train.FtrlOptimizer": TF1Optimizer(
        "Ftrl",
        (
            "learning_rate",
            "learning_rate_power",
            "initial_accumulator_value",
            "l1_regularization_strength",
            "l2_regularization_strength",
            "use_locking",
            "name",
            "accum_name",
            "linear_name",
            "l2_shrinkage_regularization_strength",
            "beta",
        ),
        {
            **_SAME,
            **{
                n: n
                for n in (
                    "learning_rate_power",
                    "initial_accumulator_value",
                    "l1_regularization_strength",
                    "l2_regularization_strength",
                    "l2_shrinkage_regularization_strength",
                    "beta",
                )
            },
            "accum_name": None,
            "linear_name": None,
        },
    ),
    "train.GradientDescentOptimizer": TF1Optimizer(
        "SGD", ("learning_rate", "use_locking", "name"), dict(_SAME)
    ),
    "train.MomentumOptimizer": TF1Optimizer(
        "SGD",
        ("learning_rate", "momentum", "use_locking", "name", "use_nesterov"),
        {**_SAME, "momentum": "momentum", "use_nesterov": "nesterov"},
        required=("learning_rate", "momentum"),
    ),
}
# TF1 optimizers Keras has no class for that makes the same update.
TF1_NO_KERAS: dict[str, str] = {
    "train.RMSPropOptimizer": (
        "TF1's RMSProp starts its mean square at 1 and divides by sqrt(ms + epsilon); "
        "Keras' starts it at 0 and, without momentum, divides by sqrt(ms) + epsilon"
    ),
    "train.ProximalAdagradOptimizer": "Keras has no proximal Adagrad",
    "train.ProximalGradientDescentOptimizer": "Keras has no proximal gradient descent",
    "train.AdagradDAOptimizer": "Keras has no Adagrad dual averaging",
}
# Adagrad: Keras adds epsilon (1e-7, never 0) to sqrt(accumulator), TF1 adds nothing; the
# accumulator never falls below its initial value, so the step changes by at most
# 1e-7 / sqrt(initial value) relative: 3.2e-7 at TF1's default 0.1, 1e-6 at this floor.
ADAGRAD_MIN_ACCUMULATOR = 0.01


class Plan:
    """A TF1 optimizer call's Keras legacy form: each argument's Keras keyword (None: kept
    positional; absent: dropped) and the arguments written out."""

    def __init__(self, keras: str, keywords: dict[int, str | None], extra: list[str]) -> None:
        self.keras = keras
        self.keywords = keywords
        self.extra = extra


def number(node: cst.BaseExpression) -> float | None:
    if isinstance(node, (cst.Integer, cst.Float)):
        return float(node.value.replace("_", ""))
    return None


def is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


class TF1OptimizerTranslation:
    """How `EstimatorFacade` reads the TF1 optimizers that reach a premade (a mixin)."""

    state: FileState
    tf_name: Callable[[cst.BaseExpression], str | None]

    def _tf1_optimizers(
        self, premade: cst.Call, value: cst.BaseExpression, scope: cst.Module | cst.FunctionDef
    ) -> dict[int, Plan] | str | None:
        """The TF1 optimizer calls that reach a premade's `optimizer=` and their Keras form:
        the call itself, or every value of a name that, in the premade's function, is bound
        only to such calls, is read after them only here (or compared with a string) and
        appears in no nested function. A str: why not; None: no TF1 optimizer."""
        if isinstance(value, cst.Call):
            plan = self._plan_tf1(value)
            return plan if plan is None or isinstance(plan, str) else {id(value): plan}
        if not isinstance(value, cst.Name):
            return None
        name = value.value
        nodes = descendants(scope)
        values: list[cst.Call] = []
        other = False  # bound otherwise than `name = call` in this scope, or in a nested one
        skip: set[int] = set()  # Name nodes that are not the variable
        allowed = {id(value)}  # reads that see a TF1 optimizer harmlessly
        nested: set[int] = set()
        for node in nodes:
            if node is not scope and isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                nested.update(id(n) for n in descendants(node) if n is not node)
                if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
                    skip.add(id(node.name))
                    other = other or node.name.value == name
            elif isinstance(node, cst.Param):
                skip.add(id(node.name))  # the parameters are checked below
            elif isinstance(node, cst.Arg) and node.keyword is not None:
                skip.add(id(node.keyword))
            elif isinstance(node, cst.Attribute):
                skip.add(id(node.attr))
            elif isinstance(node, (cst.Global, cst.Nonlocal)):
                other = other or any(n.name.value == name for n in node.names)
            elif isinstance(node, cst.Assign) and any(
                name in target_names(t.target) for t in node.targets
            ):
                if (
                    len(node.targets) == 1
                    and isinstance(node.targets[0].target, cst.Name)
                    and isinstance(node.value, cst.Call)
                ):
                    values.append(node.value)
                    skip.add(id(node.targets[0].target))
                else:
                    other = True
            elif isinstance(node, cst.Comparison) and len(node.comparisons) == 1:
                target = node.comparisons[0]
                sides = (node.left, target.comparator)
                if isinstance(target.operator, (cst.Equal, cst.NotEqual)) and any(
                    isinstance(s, cst.SimpleString) for s in sides
                ):
                    allowed.update(id(s) for s in sides if isinstance(s, cst.Name))
        tf1 = [c for c in values if self.tf_name(c.func) in (*TF1_OPTIMIZERS, *TF1_NO_KERAS)]
        if not tf1:
            return None
        if isinstance(scope, cst.Module) and not self.state.path.endswith(".ipynb"):
            return (
                f"`{name}` (a module-level name: another module may import it and use it "
                "as a TF1 optimizer; bind it in a function, or write the call here)"
            )
        if other or len(tf1) != len(values):
            return (
                f"`{name}` (bound to a TF1 optimizer and to something else, or in a nested "
                "function)"
            )
        # Its value before the first top-level `name = <TF1 optimizer>` (a parameter's)
        # never reaches the premade, which must come after it.
        body = scope.body if isinstance(scope, cst.Module) else scope.body.body
        statement: dict[int, int] = {}
        for i, stmt in enumerate(body):
            statement.update((id(n), i) for n in descendants(stmt))
        values_at = {statement.get(id(c), -1) for c in values}
        kill = next(
            (
                i
                for i, stmt in enumerate(body)
                if i in values_at
                and isinstance(stmt, cst.SimpleStatementLine)
                and isinstance(stmt.body[0], cst.Assign)
                and isinstance(stmt.body[0].value, cst.Call)
                and id(stmt.body[0].value) in {id(c) for c in values}
            ),
            None,
        )
        params = (
            []
            if isinstance(scope, cst.Module)
            else [
                p.name.value
                for p in (
                    *scope.params.posonly_params,
                    *scope.params.params,
                    *scope.params.kwonly_params,
                    *(
                        [scope.params.star_arg]
                        if isinstance(scope.params.star_arg, cst.Param)
                        else []
                    ),
                    *([scope.params.star_kwarg] if scope.params.star_kwarg else []),
                )
            ]
        )
        if name in params and (kill is None or statement[id(value)] <= kill):
            return f"`{name}` (a parameter that may reach the estimator unchanged)"
        for node in nodes:
            if isinstance(node, cst.Name) and node.value == name and id(node) not in skip:
                if id(node) in nested:
                    return f"`{name}` (also used in a nested function)"
                before = kill is not None and statement.get(id(node), kill) < kill
                if id(node) not in allowed and not before:
                    return (
                        f"`{name}` (a TF1 optimizer that other code uses too: it stays one there)"
                    )
        plans: dict[int, Plan] = {}
        for call in values:
            plan = self._plan_tf1(call)
            if not isinstance(plan, Plan):
                return plan or "?"
            plans[id(call)] = plan
        return plans

    def _plan_tf1(self, call: cst.Call) -> Plan | str | None:
        """How a TF1 optimizer call becomes its Keras legacy class with every argument; a
        str: why it cannot; None: not a TF1 optimizer."""
        canonical = self.tf_name(call.func) or ""
        short = canonical.rsplit(".", 1)[-1]
        if canonical in TF1_NO_KERAS:
            return f"{short} (no exact Keras equivalent: {TF1_NO_KERAS[canonical]})"
        spec = TF1_OPTIMIZERS.get(canonical)
        if spec is None:
            return None
        if self.state.imports.alias_for("tensorflow") is None:
            return f"{short} (the file does not import tensorflow to spell Keras' class)"
        given: dict[str, tuple[int, cst.Arg]] = {}
        for i, arg in enumerate(call.args):
            if arg.star:
                return f"{short}(*args/**kwargs) (its arguments cannot be read)"
            kw = arg.keyword.value if arg.keyword is not None else None
            if kw is None and i < len(spec.params):
                kw = spec.params[i]
            if kw is None or kw not in spec.params:
                return f"{short} (an argument TF1's {short} does not take)"
            given[kw] = (i, arg)
        missing = [r for r in spec.required if r not in given]
        if missing:
            return f"{short} without {', '.join(missing)} (TF1 raises a TypeError)"
        rate = given.get("learning_rate")
        if rate is not None and isinstance(rate[1].value, cst.Lambda):
            return f"{short} with a callable learning rate (called at other times by Keras)"
        epsilon = given.get("epsilon")
        if epsilon is not None and number(epsilon[1].value) == 0:
            return f"{short}(epsilon=0) (Keras takes an epsilon of 0 as 1e-7)"
        if spec.keras == "Adagrad" and "initial_accumulator_value" in given:
            start = number(given["initial_accumulator_value"][1].value)
            if start is None or start < ADAGRAD_MIN_ACCUMULATOR:
                return (
                    f"{short} with an initial_accumulator_value other than a number >= "
                    f"{ADAGRAD_MIN_ACCUMULATOR} (Keras adds epsilon 1e-7 to the square "
                    "root of the accumulator, TF1 adds nothing: negligible only above it)"
                )
        keywords: dict[int, str | None] = {}
        for kw, (i, arg) in given.items():
            new = spec.renamed[kw]
            if kw == "beta" and is_none(arg.value):
                new = None  # TF1 takes None as 0.0, Keras' default
            if new is None:
                continue
            keywords[i] = None if i == 0 and arg.keyword is None else new
        extra = [f"{k}={v}" for k, v in spec.written.items() if k not in given]
        return Plan(spec.keras, keywords, extra)

    @staticmethod
    def _keras_optimizer(call: cst.Call, plan: Plan, alias: str) -> cst.Call:
        args: list[cst.Arg] = []
        for i, arg in enumerate(call.args):
            if i not in plan.keywords:
                continue
            keyword = plan.keywords[i]
            if keyword is None:
                args.append(arg)
            elif arg.keyword is None:
                args.append(
                    arg.with_changes(
                        keyword=cst.Name(keyword),
                        equal=cst.AssignEqual(
                            whitespace_before=cst.SimpleWhitespace(""),
                            whitespace_after=cst.SimpleWhitespace(""),
                        ),
                    )
                )
            else:
                args.append(arg.with_changes(keyword=cst.Name(keyword)))
        if args and len(args) < len(call.args):
            # The last argument ends as the call's last did (a trailing comma, a line break).
            last = call.args[-1]
            args[-1] = args[-1].with_changes(
                comma=last.comma, whitespace_after_arg=last.whitespace_after_arg
            )
        new = call.with_changes(
            func=cst.parse_expression(f"{alias}.keras.optimizers.legacy.{plan.keras}"),
            args=args,
        )
        for item in plan.extra:
            keyword, _, value = item.partition("=")
            new = with_kwarg(new, keyword, cst.parse_expression(value))
        return new
