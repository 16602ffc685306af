"""The project index: what each function *is*, judged by how the whole project uses it.

A function becomes a model_fn because an Estimator is built with it, and an input function
because `train`/`evaluate`/`predict`, a `TrainSpec` or an `EvalSpec` is given it, in this
module or in another one (`Estimator(model_fn=model.model_fn)`), through factories that
return closures, lambdas and `functools.partial`. Names never decide.

This module is the model the rules read (`ProjectIndex` and its plans); `est2tpu.project.build`
builds it, `est2tpu.tfapi` names the API it is about.
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Iterable
from dataclasses import dataclass, field

import libcst as cst
from libcst._nodes.internal import CodegenState

from est2tpu.names import ImportTable


class Mode(str, enum.Enum):
    TRAIN = "train"
    EVAL = "eval"
    PREDICT = "predict"


FnKey = tuple[str, str]  # (module path, dotted def path inside the module)


@dataclass
class InputFnPlan:
    """How one input function must change so TPUEstimator can call it."""

    modes: set[Mode] = field(default_factory=set)
    needs_params: bool = False  # TPUEstimator calls it directly: it must accept `params`
    batch_to_params: bool = False  # its `.batch(E)` reads params["batch_size"] instead
    committed: bool = False  # used with an Estimator that becomes a TPUEstimator
    feeds_tpu: bool = False  # used with a TPUEstimator: one made now, or one the project has
    direct: bool = False  # the Estimator calls it itself (so it may take `mode` too)
    problems: list[str] = field(default_factory=list)
    # the batch size it used, valid anywhere (a literal): what the project's own direct
    # calls pass once the function reads params["batch_size"]
    batch_literal: str | None = None
    batch_param: str | None = None  # or the parameter (with that default) it batched by
    # or the expression it batched by, a name bound in its module or in the def around it:
    # (code, module path, the scope it is valid in) for the project's own direct calls there
    batch_code: tuple[str, str, str] | None = None
    # It batches in a project helper it returns the value of (`return make_batches(files,
    # 64)`): that call's code, and the helper parameter that takes params["batch_size"]
    # (`helper_arg`: the index of the argument passing it, None: added by keyword; no
    # parameter: the size reaches the helper as it is).
    helper_call: str | None = None
    helper_param: str | None = None
    helper_arg: int | None = None
    # its dataset comes from project helpers that repeat it (`.repeat()`, or
    # `make(..., repeat=True)`)
    helper_repeats: bool = False
    # `a, b = helper(...)`, `return {"x": a}, b`: the names it maps over the helper's dataset
    helper_unpacked: list[str] | None = None
    # what else receives it that est2tpu leaves as it is and that passes no
    # params["batch_size"] (`adanet.Estimator`, an Evaluator, a train_and_evaluate over an
    # Estimator subclass): its batch then reads params.get("batch_size", <its own size>)
    other_consumers: list[str] = field(default_factory=list)


@dataclass
class BatchHelper:
    """A project function that makes an input function's batches (see InputFnPlan.helper_call):
    the one that batches by its batch-size parameter gets static batches on TPU; the one the
    input function returns the value of returns its dataset, not one-shot iterator tensors."""

    modes: set[Mode] = field(default_factory=set)
    batch: str | None = None  # the code of its call that batches (`.batch(p)`, map_and_batch)
    # (name, default): it batched by a module constant, and batches by this new parameter
    new_param: tuple[str, str] | None = None
    return_dataset: bool = False
    callers: set[FnKey] = field(default_factory=set)  # the input functions that return it


@dataclass
class BatchSize:
    mode: Mode
    code: str  # expression text, valid at the constructor
    portable: bool  # True when `code` is a literal or defined where the constructor is
    # the input function batches by params["batch_size"] already; `code` is the size it had
    from_params: bool = False


@dataclass
class CtorPlan:
    """What one Estimator construction learned from the calls that use it."""

    model_fn: FnKey | None = None
    # the other project defs its model_fn argument may run (`a if flag else b`, a dict of
    # model_fns picked by a flag): each is converted or kept with `model_fn`
    model_fn_choices: list[FnKey] = field(default_factory=list)
    convert: bool = False  # a plain Estimator that becomes a TPUEstimator
    refusal: str | None = None  # why a plain Estimator stays as it is
    tpu: bool = False  # already a TPUEstimator
    batch_sizes: dict[Mode, list[BatchSize]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    model_fn_reads_batch_size: bool = False
    config_is_run_config: bool = False  # its `config` is visibly a RunConfig(...)
    # its `config` argument: a call written there (`config=RunConfig(...)`: "()"), a name
    # (`config=run_config`: that name), or None (no config, or another expression)
    config: str | None = None
    keras: bool = False  # built by model_to_estimator from a compiled Keras model
    # why the runtime cannot map the optimizer that Keras model is compiled with exactly
    # (`keras_models.why_unmappable`; the first such reason), or None
    unmappable_optimizer: str | None = None
    premade: bool = False  # DNNClassifier & co.: the shim's TPUEstimator, or a TPU010 finding
    # modes whose input functions read params["batch_size"] already, of unknown size
    unsized_modes: set[Mode] = field(default_factory=set)
    tpu_batch_sizes: dict[Mode, str] = field(default_factory=dict)  # an existing TPUEstimator's
    # modes an existing TPUEstimator never runs on a TPU (use_tpu=False, eval_on_tpu=False)
    off_tpu: set[Mode] = field(default_factory=set)
    # an existing TPUEstimator as est2tpu writes it (`use_tpu=tpu_runtime.use_tpu()` or its
    # --no-runtime stand-in, or the shim's premade/Keras builders): its input functions and
    # their helpers are planned as those of the Estimator a one-shot run converts, so a
    # partial migration converges
    as_migrated: bool = False
    # `params=<name>`, the name bound once, in the constructor's function, to a dict literal
    # with the reserved key "batch_size" and used nowhere else: (scope, name) of the binding,
    # whose key goes, and the key's value where it is valid at the constructor
    params_binding: tuple[str, str] | None = None
    params_batch: str | None = None
    # `params=<name>` whose dict may hold "batch_size" and stays as it is (read elsewhere, or
    # all the flags): the TPUEstimator gets a copy without the key
    params_copy: str | None = None
    # the params are all the program's flags (`vars(args)`, `FLAGS.flag_values_dict()`),
    # "batch_size" among them, and the model_fn reads params["batch_size"]: the flag's read
    # where the Estimator is built (`args.batch_size`), which every batch size of the
    # TPUEstimator must be for the model_fn to read the value it read before
    flags_batch: str | None = None
    # its model_fn argument is a wrapper (a lambda, or a def that only returns a call) of
    # `model_fn`: the wrapper's key in ProjectIndex.model_fn_wrappers, and whether it must
    # still take and forward TPUEstimator's params
    wrapper: tuple[str, str, str] | None = None
    wrapper_forwards: bool = False
    # the keys of the params the Estimator is given, as the program builds them (none given:
    # empty; a dict literal, in the call or bound once to a name there: its keys), or None
    # when they cannot be read: whether a model_fn that passes its params on with
    # `**params` passes on keys of the program's or TPUEstimator's own
    params_keys: frozenset[str] | None = frozenset()


def model_fns_of(plan: CtorPlan) -> list[FnKey]:
    """Every project def the Estimator may run as its model_fn."""
    return [plan.model_fn, *plan.model_fn_choices] if plan.model_fn is not None else []


def resolved_batch_sizes(plan: CtorPlan, problems: list[str]) -> dict[Mode, str]:
    """One batch size per mode, or a problem when the calls disagree."""
    sizes: dict[Mode, str] = {}
    for mode in Mode:
        codes = list(dict.fromkeys(b.code for b in plan.batch_sizes.get(mode, [])))
        if len(codes) == 1:
            sizes[mode] = codes[0]
        elif len(codes) > 1:
            problems.append(
                f"{mode.value} input functions use different batch sizes "
                f"({', '.join(codes)}); TPUEstimator takes one {mode.value}_batch_size"
            )
    return sizes


@dataclass
class UseSite:
    """A train/evaluate/predict call or a TrainSpec/EvalSpec: its rewrite or its refusal."""

    tpu: bool = False  # the call uses an Estimator that becomes a TPUEstimator
    lambda_params: bool = False  # the input_fn lambda must take `params`
    lambda_batch_arg: int | None = None  # index of the lambda call argument to replace
    lambda_forward_params: bool = False  # the lambda passes params=params to the function
    # its input function reads params["batch_size"] already, and its size is not known
    unsized: bool = False
    lacks_params: bool = False  # the input_fn as passed takes no `params`
    # its input is the shim's numpy/pandas input function, which knows its length
    sized_input: bool = False
    # or the arrays a `from_tensor_slices` input function reads, once each: valid here
    examples_code: str | None = None
    problems: list[str] = field(default_factory=list)

    def joined(self, other: UseSite) -> UseSite:
        """This site and `other`, one call seen two ways (a project function's returned
        spec: by its place in its own scope, and by its text as the function's callers
        reach it), as one site."""
        batch_arg = self.lambda_batch_arg
        return UseSite(
            tpu=self.tpu or other.tpu,
            lambda_params=self.lambda_params or other.lambda_params,
            lambda_batch_arg=batch_arg if batch_arg is not None else other.lambda_batch_arg,
            lambda_forward_params=self.lambda_forward_params or other.lambda_forward_params,
            unsized=self.unsized or other.unsized,
            lacks_params=self.lacks_params or other.lacks_params,
            sized_input=self.sized_input or other.sized_input,
            examples_code=self.examples_code or other.examples_code,
            problems=[*self.problems, *other.problems],
        )


@dataclass
class DirectCall:
    """The project calls an input function itself (`next(iter(input_fn()))`) whose
    signature gains `params`: the call passes them, or a finding says what to pass."""

    batch: str | None = None  # `params={"batch_size": <batch>}` goes into the call
    problem: str | None = None


@dataclass
class SourceModule:
    path: str
    module: cst.Module
    imports: ImportTable
    package: tuple[str, ...]  # dotted package parts of this file, for relative imports
    relative: dict[str, str]  # local name -> absolute dotted target, for relative imports
    text: str = ""
    defs: dict[str, cst.FunctionDef] = field(default_factory=dict)
    constants: dict[str, int] = field(default_factory=dict)
    # names the module itself binds by assignments: how many (a name bound once at module
    # level, `EVAL_SEQUENCES = N // 4`, `FLAGS = flags.FLAGS`, holds one value for the run)
    module_assigns: dict[str, int] = field(default_factory=dict)
    # def paths the module defines more than once (a tutorial's second `def input_fn` for
    # predict, defs in an `if`'s branches): `defs` holds the last, which a use between the
    # defs, or in a branch, may not run
    redefined: set[str] = field(default_factory=set)
    run_config_vars: set[str] = field(default_factory=set)  # names assigned a RunConfig(...)


@dataclass
class TrainOpLink:
    """One def of a train-op chain of a TPU model_fn, as TPU004 rewrites it (the index's
    `est2tpu.project.train_ops` finds the chains)."""

    # the keyword-only flag it takes (or has taken already); None for a model_fn (it passes
    # params["use_tpu"]) and for a def that only has findings
    flag: str | None = None
    # code of a callee it calls (`_optimize`, `self._build_train_op`) -> that link's flag
    passes: dict[str, str] = field(default_factory=dict)
    # local optimizers it hands to a def that applies them: wrapped here, under its flag
    wraps: set[str] = field(default_factory=set)
    # code of a call's callee (or of a `x.minimize` call's callee) -> the finding at it
    unfollowed: dict[str, str] = field(default_factory=dict)
    # code of every callee the index resolved to a project def (followed, so not a finding)
    resolved: set[str] = field(default_factory=set)
    # it applies an optimizer of its own (not only passes the flag on)
    trains: bool = False


@dataclass
class ProjectIndex:
    # model_fns to migrate: every Estimator built with them becomes a TPUEstimator
    model_fns: set[FnKey] = field(default_factory=set)
    # model_fns of Estimators that stay as they are (TPU007 says why) -> the files those
    # Estimators are built in: their EstimatorSpecs are right for them
    kept_model_fns: dict[FnKey, set[str]] = field(default_factory=dict)
    input_fns: dict[FnKey, InputFnPlan] = field(default_factory=dict)
    ctors: dict[tuple[str, str, str], CtorPlan] = field(default_factory=dict)  # (path, scope, code)
    # train_and_evaluate calls -> the constructor key of their estimator, if known
    train_and_evaluate: dict[tuple[str, str, str], tuple[str, str, str] | None] = field(
        default_factory=dict
    )
    # numpy_input_fn/pandas_input_fn calls whose batch size moves to a TPUEstimator
    numpy_inputs: set[tuple[str, str, str]] = field(default_factory=set)
    use_sites: dict[tuple[str, str, str], UseSite] = field(default_factory=dict)
    # (tf2 target) project defs a model_fn calls, directly or through other such defs, in
    # any module: they run inside the model_fn, so their TF1 code must change too
    model_fn_helpers: set[FnKey] = field(default_factory=set)
    # (path, scope, call code) -> a direct call of an input function that gains `params`
    direct_calls: dict[tuple[str, str, str], DirectCall] = field(default_factory=dict)
    # (path, scope, lambda code) -> how an input_fn lambda bound to a name (`train_input =
    # lambda: input_fn(...)`, passed as `TrainSpec(train_input)`) takes params, where it is bound
    bound_lambdas: dict[tuple[str, str, str], UseSite] = field(default_factory=dict)
    # project functions that batch for input functions (TPU005 rewrites them too)
    batch_helpers: dict[FnKey, BatchHelper] = field(default_factory=dict)
    # model_fn wrappers (`lambda features, labels, mode: model_fn(features, labels, mode,
    # FLAGS)`, or a def that only returns such a call) of a model_fn that TPUEstimator runs:
    # (path, scope, lambda code; "" for a def, whose scope is its own key) -> the model_fn.
    # TPU007 makes each take `params` and pass them on: TPUEstimator calls no model_fn
    # without a params argument, and the model_fn's own code reads params["use_tpu"].
    model_fn_wrappers: dict[tuple[str, str, str], FnKey] = field(default_factory=dict)
    # (tpu-estimator) the model_fns TPUEstimator runs and the defs, in any module, of the
    # train-op chains they call: defs that build and apply a TF1 optimizer, or call one that
    # does (TPU004 threads a `use_tpu` flag through them; see est2tpu.project.train_ops)
    train_op_links: dict[FnKey, TrainOpLink] = field(default_factory=dict)


CallKey = tuple[str, str, str]  # (path, scope, "kind#n")


def scopes_in(keys: Iterable[tuple[str, str, str]], path: str) -> frozenset[str]:
    """The scopes of `path` among the keys of a (path, scope, node code) table of the
    index: a rule generates a node's code to look it up only in those."""
    return frozenset(scope for at, scope, _ in keys if at == path)


class CallKeys:
    """Numbers the calls of each kind in each scope, in source order."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.counts: dict[tuple[str, str], int] = {}

    def next(self, scope: str, kind: str) -> CallKey:
        n = self.counts.get((scope, kind), 0)
        self.counts[(scope, kind)] = n + 1
        return (self.path, scope, f"{kind}#{n}")


class _Codegen(CodegenState):
    """LibCST's code generation without its syntactic positions: `CodegenState` records
    none, but enters a generator-based context manager for them at most nodes, which was
    most of the time a node's code took (the index and the rules ask for the code of every
    Estimator call, and the engine for a module's after every pass)."""

    def record_syntactic_position(  # type: ignore[override]
        self,
        node: cst.CSTNode,
        *,
        start_node: cst.CSTNode | None = None,
        end_node: cst.CSTNode | None = None,
    ) -> contextlib.nullcontext[None]:
        return _NO_POSITION


_NO_POSITION: contextlib.nullcontext[None] = contextlib.nullcontext()
_DEFAULTS = cst.Module([])


def node_code(node: cst.CSTNode) -> str:
    """Source text of a node, independent of the module it sits in (a stable key); of a
    module, the module's `code`. `Module.code_for_node`, faster (`_Codegen`), and kept for
    the node: the index asks it of every call an Estimator runs, and the rules ask it again
    in every pass, of the same nodes where a pass changed nothing around them
    (`rulewalk`)."""
    if isinstance(node, cst.Module):
        state = _Codegen(default_indent=node.default_indent, default_newline=node.default_newline)
        node._codegen(state)
        return "".join(state.tokens)
    code = _CODES.get(node)
    if code is None:
        if len(_CODES) >= _CODES_KEPT:
            _CODES.clear()
        state = _Codegen(
            default_indent=_DEFAULTS.default_indent, default_newline=_DEFAULTS.default_newline
        )
        node._codegen(state)
        code = _CODES[node] = "".join(state.tokens)
    return code


def module_code(module: cst.Module, kept: dict[tuple[int, str, str], list[str]]) -> str:
    """`module.code`, with the tokens of each top-level statement kept in `kept` (by id,
    so the caller keeps the trees alive): the code of a tree a rule changed in one def costs
    the code of that def. A statement at the top of a module is generated as in it (no
    indentation around it, the module's defaults)."""
    indent, newline = module.default_indent, module.default_newline

    def tokens_of(node: cst.CSTNode) -> list[str]:
        state = _Codegen(default_indent=indent, default_newline=newline)
        node._codegen(state)
        return state.tokens

    tokens: list[str] = []
    for line in module.header:
        tokens += tokens_of(line)
    for stmt in module.body:
        key = (id(stmt), indent, newline)
        found = kept.get(key)
        if found is None:
            found = kept[key] = tokens_of(stmt)
        tokens += found
    for line in module.footer:
        tokens += tokens_of(line)
    if module.has_trailing_newline:
        if not tokens:
            tokens.append(newline)
    elif tokens:
        tokens.pop()
    return "".join(tokens)


def forget_codes() -> None:
    """Drop the codes `node_code` keeps (the engine does after each module)."""
    _CODES.clear()


# `node_code` by node: LibCST nodes are immutable, hash and compare by identity, and the
# key keeps its node alive (no other node takes its id); cleared when it holds this many.
_CODES: dict[cst.CSTNode, str] = {}
_CODES_KEPT = 65536


def call_arg(call: cst.Call, keyword: str, position: int | None) -> cst.Arg | None:
    """The argument bound to a parameter, by keyword or by position."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg
    if position is not None:
        positional = [a for a in call.args if a.keyword is None and not a.star]
        if len(positional) > position:
            return positional[position]
    return None


def param_names(fn: cst.FunctionDef | cst.Lambda) -> list[str]:
    p = fn.params
    return [x.name.value for x in (*p.posonly_params, *p.params, *p.kwonly_params)]
