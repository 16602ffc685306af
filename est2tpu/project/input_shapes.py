"""What an input function's data pipeline does: whether it batches, by what, whether it
repeats, and whether it hands out a one-shot iterator."""

from __future__ import annotations

import dataclasses

import libcst as cst

from est2tpu.batching import (
    batch_calls,
    batch_size_arg,
    is_params_batch_size,
    is_structure,
    last_block,
    returned_value,
    returns_names,
    unpack_target,
)
from est2tpu.cstutil import (
    iter_calls,
    name_count,
    names_read,
    params_subscript,
    walk,
)
from est2tpu.index import (
    FnKey,
    SourceModule,
    call_arg,
    node_code,
    param_names,
)
from est2tpu.names import dotted
from est2tpu.project.calls import (
    assigned_in,
    bind_call,
    default_of,
    names_in,
    returned_call,
    returns,
)
from est2tpu.project.facts import ProjectFacts
from est2tpu.tfapi import (
    call_kind,
)

# Dataset methods that neither drop, add nor repeat examples (a `.repeat(1)` aside).
ONE_PASS_METHODS = frozenset(
    {"map", "batch", "shuffle", "prefetch", "cache", "make_one_shot_iterator", "get_next"}
)


def one_pass_over(src: SourceModule, fn: cst.FunctionDef) -> str | None:
    """The code of the arrays an input function yields each example of exactly once
    (`Dataset.from_tensor_slices(EVAL)...batch(...)`, EVAL bound once at module level), or
    None: then nothing tells how many examples an evaluation reads."""
    source: cst.BaseExpression | None = None
    for call in iter_calls(fn, into_defs=False):
        name = src.imports.tf_name(call.func) or ""
        if name == "data.Dataset.from_tensor_slices" and source is None and call.args:
            source = call.args[0].value
            continue
        if name == "data.make_one_shot_iterator":
            continue
        if not isinstance(call.func, cst.Attribute):
            return None
        method = call.func.attr.value
        once = (
            method == "repeat"
            and len(call.args) == 1
            and isinstance(call.args[0].value, cst.Integer)
            and call.args[0].value.value == "1"
        )
        if method not in ONE_PASS_METHODS and not once:
            return None
    if source is None:
        return None
    names: list[str] = []

    class V(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            names.append(node.value)

        def visit_Attribute(self, node: cst.Attribute) -> bool:
            return False

    walk(source, V())
    # read again at the call site: no call there (`np.random.rand(n)` would draw anew)
    plain = isinstance(source, (cst.Name, cst.Tuple, cst.Dict)) and not any(
        True for _ in iter_calls(source)
    )
    locals_ = assigned_in(fn) | set(param_names(fn))
    if not plain or not names or any(n in locals_ or src.module_assigns.get(n) != 1 for n in names):
        return None
    return node_code(source)


def is_get_next(call: cst.Call) -> bool:
    return isinstance(call.func, cst.Attribute) and call.func.attr.value == "get_next"


# Dataset methods that keep a repeated dataset endless.
KEEPS_REPEATING = frozenset({"map", "batch", "prefetch", "shuffle", "cache"})


def repeats_in_helper(ix: ProjectFacts, key: FnKey) -> bool:
    """Whether the input function's dataset is made by a project helper that repeats it.

    `dataset = make(..., shuffle_and_repeat=True)` (the input function's first statement,
    and its only `.repeat` nowhere else) where `make` ends in `return D`, and its body is
    statements `D = ...`, one `if shuffle_and_repeat: D = D.<...>.repeat()` and then only
    `D = D.map/batch/prefetch/shuffle/cache(...)`, with the flag a literal True here.
    """
    fn = ix.fn(key)
    src = ix.modules[key[0]]
    body = fn.body.body if isinstance(fn.body, cst.IndentedBlock) else []
    first = body[0] if body else None
    if not isinstance(first, cst.SimpleStatementLine) or len(first.body) != 1:
        return False
    made = first.body[0]
    if not (isinstance(made, cst.Assign) and isinstance(made.value, cst.Call)):
        return False
    helper_key = ix.resolve_fn(src, key[1], made.value.func)
    if helper_key is None or helper_key == key:
        return False
    helper = ix.fn(helper_key)
    steps = helper.body.body if isinstance(helper.body, cst.IndentedBlock) else []
    last = steps[-1] if steps else None
    if not (
        isinstance(last, cst.SimpleStatementLine)
        and isinstance(last.body[0], cst.Return)
        and isinstance(last.body[0].value, cst.Name)
    ):
        return False
    name = last.body[0].value.value
    flags = bind_call(helper, made.value)
    repeated = False
    for stmt in steps[:-1]:
        if repeated:
            # a nested def (the map function) leaves the dataset as it is
            if isinstance(stmt, cst.FunctionDef):
                continue
            if kept_chain(stmt, name) not in KEEPS_REPEATING:
                return False
            continue
        if isinstance(stmt, cst.If) and repeats_when(stmt, name, flags):
            repeated = True
        elif any(method_name(c) == "repeat" for c in iter_calls(stmt, into_defs=True)):
            return False
    return repeated


def repeats_when(stmt: cst.If, name: str, flags: dict[str, cst.BaseExpression]) -> bool:
    """`if flag: D = D.<...>.repeat()` with `flag` passed as True."""
    flag = stmt.test
    passed = flags.get(flag.value) if isinstance(flag, cst.Name) else None
    if stmt.orelse is not None or not isinstance(stmt.body, cst.IndentedBlock):
        return False
    inner = stmt.body.body
    return (
        isinstance(passed, cst.Name)
        and passed.value == "True"
        and len(inner) == 1
        and kept_chain(inner[0], name) == "repeat"
    )


def method_name(call: cst.Call) -> str:
    return call.func.attr.value if isinstance(call.func, cst.Attribute) else ""


def kept_chain(stmt: cst.BaseStatement, name: str) -> str | None:
    """`D = D.a(...).b(...)` -> "b" when every method of the chain keeps an endless dataset
    endless (or is the last, returned for the caller to judge); None otherwise."""
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1):
        return None
    assign = stmt.body[0]
    if not (
        isinstance(assign, cst.Assign)
        and len(assign.targets) == 1
        and isinstance(assign.targets[0].target, cst.Name)
        and assign.targets[0].target.value == name
    ):
        return None
    expr: cst.BaseExpression = assign.value
    methods: list[str] = []
    while isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
        methods.append(expr.func.attr.value)
        expr = expr.func.value
    if not methods or not (isinstance(expr, cst.Name) and expr.value == name):
        return None
    if any(m not in KEEPS_REPEATING for m in methods[1:]):
        return None
    return methods[0]


DATASET_METHODS = frozenset(
    ("batch", "padded_batch", "repeat", "shuffle", "map", "prefetch", "cache", "filter", "take")
)


def is_dataset_chain(values: list[cst.BaseExpression]) -> bool:
    """A value made by a tf.data.Dataset method (`....batch(n)`, `.shuffle(k).repeat()`)."""
    return bool(values) and (
        isinstance(values[0], cst.Call)
        and isinstance(values[0].func, cst.Attribute)
        and values[0].func.attr.value in DATASET_METHODS
    )


def lambda_over_local(fn: cst.FunctionDef, index: int) -> str | None:
    """The name a factory binds (not a parameter) that the lambda it returns as element
    `index` reads: `dataset = ....batch(n)`, `return lambda: iterator(dataset), ...`."""
    returned, bound = returns(fn)
    if len(returned) != 1 or not isinstance(returned[0], cst.Tuple):
        return None
    elements = returned[0].elements
    value = elements[index].value if index < len(elements) else None
    if isinstance(value, cst.Name) and len(bound.get(value.value, [])) == 1:
        value = bound[value.value][0]
    if not isinstance(value, cst.Lambda) or param_names(value):
        return None
    read = [
        n.value
        for n in names_read(value.body)
        if n.value not in param_names(fn) and is_dataset_chain(bound.get(n.value, [])[-1:])
    ]
    return read[0] if read else None


def returned_numpy_call(ix: ProjectFacts, factory: FnKey) -> cst.Call | None:
    """The numpy_input_fn/pandas_input_fn call a factory returns, directly or through a
    local name bound only to it: its one return."""
    returned, bound = returns(ix.fn(factory))
    if len(returned) != 1:
        return None
    value = returned[0]
    if isinstance(value, cst.Name) and len(bound.get(value.value, [])) == 1:
        value = bound[value.value][0]
    imports = ix.modules[factory[0]].imports
    if isinstance(value, cst.Call) and call_kind(imports, value.func) == "numpy":
        return value
    return None


@dataclasses.dataclass
class HelperChain:
    """An input function's `return helper(...)`, where the helper (or one it calls, passing
    its parameter on) batches by a parameter of its own."""

    call: cst.Call
    param: str  # the parameter of the first helper that carries the batch size
    size: cst.BaseExpression | None  # what the call passes for it (None: its default)
    helpers: list[FnKey]  # the helper called first ... the one that batches
    one_shot: bool  # the first returns <one-shot iterator over its dataset>.get_next()
    repeats: bool
    batch: cst.Call  # the call that makes the batches, in the last helper
    # the first helper batches by a module constant: it gains `param`, defaulting to it
    new_default: cst.Name | None = None
    # the input function unpacks the first helper's tensors into these names and returns a
    # structure of them: it maps that structure over the helper's dataset instead
    unpacked: list[str] | None = None
    # `param` is the params dict the helper batches by (`.batch(p["batch_size"])`), and
    # the input function passes it its own `params`, the ones the Estimator hands it
    passes_params: bool = False


ITERATOR_METHODS = frozenset(
    {"make_one_shot_iterator", "make_initializable_iterator", "get_next", "__iter__"}
)


def is_iterator_call(src: SourceModule, call: cst.Call) -> bool:
    name = src.imports.tf_name(call.func) or ""
    if name.startswith("data.") and name[5:] in ITERATOR_METHODS:
        return True
    return isinstance(call.func, cst.Attribute) and call.func.attr.value in ITERATOR_METHODS


def makes_one_shot(src: SourceModule, expr: cst.BaseExpression) -> bool:
    """`E.make_one_shot_iterator()` or `tf.compat.v1.data.make_one_shot_iterator(E)`."""
    if not isinstance(expr, cst.Call):
        return False
    if src.imports.tf_name(expr.func) == "data.make_one_shot_iterator":
        return len(expr.args) == 1 and expr.args[0].keyword is None and not expr.args[0].star
    func = expr.func
    return (
        isinstance(func, cst.Attribute)
        and func.attr.value == "make_one_shot_iterator"
        and not expr.args
        and src.imports.tf_name(func) is None
    )


def returns_one_shot(src: SourceModule, fn: cst.FunctionDef) -> bool:
    """The function ends in its one return, `return <one-shot iterator over E>.get_next()`
    (the iterator made in that return, or right before it in a name used nowhere else),
    and makes no other iterator: the form TPU005 turns into `return E`."""
    body = fn.body.body if isinstance(fn.body, cst.IndentedBlock) else []
    returned, _ = returns(fn)
    iterators = [c for c in iter_calls(fn) if is_iterator_call(src, c)]
    if len(returned) != 1 or not body or len(iterators) != 2:
        return False
    last = body[-1]
    if not (
        isinstance(last, cst.SimpleStatementLine)
        and len(last.body) == 1
        and isinstance(last.body[0], cst.Return)
    ):
        return False
    value = last.body[0].value
    if not (
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Attribute)
        and value.func.attr.value == "get_next"
        and not value.args
    ):
        return False
    held = value.func.value
    if makes_one_shot(src, held):
        return True
    if not isinstance(held, cst.Name) or len(body) < 2:
        return False
    made = body[-2]
    return (
        isinstance(made, cst.SimpleStatementLine)
        and len(made.body) == 1
        and isinstance(made.body[0], cst.Assign)
        and len(made.body[0].targets) == 1
        and isinstance(made.body[0].targets[0].target, cst.Name)
        and made.body[0].targets[0].target.value == held.value
        and makes_one_shot(src, made.body[0].value)
        and name_count(fn, held.value) == 2
    )


def returns_unpacked_one_shot(src: SourceModule, fn: cst.FunctionDef) -> bool:
    """The function ends `a, b = <one-shot iterator over E>.get_next()`, `return a, b` (the
    iterator made there, or right before in a name used nowhere else), its one return, and
    makes no other iterator: it returns E's elements, as TPU005 makes it do."""
    body = list(fn.body.body) if isinstance(fn.body, cst.IndentedBlock) else []
    returned, _ = returns(fn)
    iterators = [c for c in iter_calls(fn) if is_iterator_call(src, c)]
    if len(returned) != 1 or len(body) < 2 or len(iterators) != 2:
        return False
    unpacked = unpack_target(body[-2])
    if unpacked is None or not returns_names(body[-1], unpacked[0]):
        return False
    names, value = unpacked
    if any(name_count(fn, name) != 2 for name in names):
        return False
    if not (
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Attribute)
        and value.func.attr.value == "get_next"
        and not value.args
    ):
        return False
    held = value.func.value
    if makes_one_shot(src, held):
        return True
    made = unpack_target(body[-3]) if len(body) >= 3 else None
    return (
        isinstance(held, cst.Name)
        and made is not None
        and made[0] == [held.value]
        and makes_one_shot(src, made[1])
        and name_count(fn, held.value) == 2
    )


def unpacks_helper(fn: cst.FunctionDef) -> tuple[cst.Call, list[str]] | None:
    """The input function ends `a, b = helper(...)`, `return <a tuple or dict of a, b and
    module names>`: the call and the names."""
    block = last_block(fn)
    if block is None or len(block.body) < 2:
        return None
    unpacked = unpack_target(block.body[-2])
    value = returned_value(block.body[-1])
    if unpacked is None or value is None:
        return None
    names, call = unpacked
    if not isinstance(call, cst.Call) or len(names) < 2 or not is_structure(value):
        return None
    locals_ = (assigned_in(fn) | set(param_names(fn))) - set(names)
    if names_in(node_code(value)) & locals_:
        return None
    # the names hold the helper's tensors only for the return
    if any(name_count(fn, n) != 1 + name_count(value, n) for n in names):
        return None
    return call, names


def returns_batched_dataset(ix: ProjectFacts, helpers: list[FnKey], batch: cst.Call) -> bool:
    """The first helper ends `return D`, `D` bound from the dataset its chain batches (`D =
    D.shuffle(n).batch(b)` in it, or `D = <the next helper>(...)`), then only `D =
    D.<method>(...)`: it returns that tf.data.Dataset, as TPU005 makes a helper that ended
    `a, b = <one-shot iterator>.get_next()`, `return a, b` return it. An input function
    that unpacks it (`a, b = helper(...)`) unpacks a Dataset, which no Estimator's graph
    can iterate: that helper was migrated before its input function (a partial run, or a
    user's first module), which maps over the dataset as a one-shot run makes it do."""
    key = helpers[0]
    fn, src = ix.fn(key), ix.modules[key[0]]
    body = list(fn.body.body) if isinstance(fn.body, cst.IndentedBlock) else []
    value = returned_value(body[-1]) if body else None
    if not isinstance(value, cst.Name) or src.imports.tf_name(batch.func) is not None:
        return False
    name = value.value
    for stmt in reversed(body[:-1]):
        bound = unpack_target(stmt)
        if bound is None or bound[0] != [name]:
            return False
        made = bound[1]
        if len(helpers) == 1 and any(c is batch for c in iter_calls(made)):
            return True
        if (
            len(helpers) > 1
            and isinstance(made, cst.Call)
            and ix.resolve_fn(src, key[1], made.func) == helpers[1]
        ):
            return True
        root = made
        while isinstance(root, cst.Call) and isinstance(root.func, cst.Attribute):
            root = root.func.value
        if not (isinstance(root, cst.Name) and root.value == name and root is not made):
            return False
    return False


def has_repeat(fn: cst.FunctionDef) -> bool:
    return any(
        isinstance(c.func, cst.Attribute) and c.func.attr.value == "repeat" for c in iter_calls(fn)
    )


def helper_chain(ix: ProjectFacts, key: FnKey) -> HelperChain | None:
    """How an input function without `.batch(...)` of its own batches in a project helper
    whose value it returns, if a reader sees it at once: see `HelperChain`."""
    fn = ix.fn(key)
    src = ix.modules[key[0]]
    returned, bound = returns(fn)
    call = returned[0] if len(returned) == 1 else None
    if isinstance(call, cst.Name) and len(bound.get(call.value, [])) == 1:
        call = bound[call.value][0]  # `dataset = helper(...)`, `return dataset`
    unpacked = unpacks_helper(fn) if len(returned) == 1 else None
    if unpacked is not None:
        call = unpacked[0]
    elif (
        isinstance(call, cst.Call)
        and isinstance(call.func, cst.Attribute)
        and call.func.attr.value == "map"
        and isinstance(call.func.value, cst.Call)
        and len(call.args) == 1
        and isinstance(call.args[0].value, cst.Lambda)
        and is_structure(call.args[0].value.body)
    ):
        # `helper(...).map(lambda a, b: ({"x": a}, b))`, as TPU005 writes the unpacking
        call = call.func.value
    if not isinstance(call, cst.Call) or any(a.star for a in call.args):
        return None
    first = ix.resolve_fn(src, key[1], call.func)
    if first is None or first == key:
        return None
    found = batch_param_of(ix, first, 0)
    if found is None:
        return None
    param, helpers, one_shot, repeats, batch, new_default = found
    if unpacked is not None and not (one_shot or returns_batched_dataset(ix, helpers, batch)):
        return None
    size = bind_call(ix.fn(first), call).get(param) if new_default is None else None
    if batches_by_params_of(ix, helpers, batch):
        # The helper batches by the dict it is given: only the input function's own
        # `params`, passed on as they came, are what TPUEstimator fills with its batch size.
        if not (
            isinstance(size, cst.Name)
            and size.value == "params"
            and "params" in param_names(fn)
            and "params" not in assigned_in(fn)
        ):
            return None
        return HelperChain(
            call,
            param,
            params_subscript(),
            helpers,
            one_shot,
            repeats or has_repeat(fn),
            batch,
            None,
            unpacked[1] if unpacked is not None else None,
            passes_params=True,
        )
    if size is None and new_default is None and default_of(ix.fn(first), param) is None:
        return None
    return HelperChain(
        call,
        param,
        size,
        helpers,
        one_shot,
        repeats or has_repeat(fn),
        batch,
        new_default,
        unpacked[1] if unpacked is not None else None,
    )


# tf.data transformations that map and batch in one, by their `batch_size` argument
FUSED_BATCHING = frozenset({"data.experimental.map_and_batch", "contrib.data.map_and_batch"})


def batch_param_of(
    ix: ProjectFacts, key: FnKey, depth: int
) -> tuple[str, list[FnKey], bool, bool, cst.Call, cst.Name | None] | None:
    """The parameter a project function batches by (its one `.batch(p)` or
    `map_and_batch(f, p)`, or p passed on for the batch-size parameter of the one project
    function it calls that batches), the chain of functions down to that batch, whether it
    returns one-shot iterator tensors over its dataset, whether the chain repeats, the
    batching call, and (the first helper, batching by a module constant) that constant:
    the helper gains a `batch_size` parameter that defaults to it."""
    fn = ix.fn(key)
    src = ix.modules[key[0]]
    if isinstance(fn.params.star_arg, cst.Param) or fn.params.star_kwarg is not None:
        return None
    one_shot = False
    if any(is_iterator_call(src, c) for c in iter_calls(fn)):
        # a dataset must come out of every helper but the first, which may return the
        # one-shot iterator's tensors over it (it returns the dataset itself then)
        if depth > 0 or not (returns_one_shot(src, fn) or returns_unpacked_one_shot(src, fn)):
            return None
        one_shot = True
    repeats = has_repeat(fn)
    own = set(param_names(fn)) - assigned_in(fn)
    calls = batch_calls(fn)
    fused = [c for c in iter_calls(fn) if src.imports.tf_name(c.func) in FUSED_BATCHING]
    if len(calls) + len(fused) > 1:
        return None
    if calls or fused:
        batch = (calls or fused)[0]
        arg = batch_size_arg(batch) if calls else call_arg(batch, "batch_size", 1)
        if arg is not None and params_subscript_of(arg.value) in own:
            # `.batch(p["batch_size"])`: `p` carries the batch size (see HelperChain)
            return params_subscript_of(arg.value) or "", [key], one_shot, repeats, batch, None
        if arg is None or not isinstance(arg.value, cst.Name):
            return None
        if arg.value.value in own:
            return arg.value.value, [key], one_shot, repeats, batch, None
        name = arg.value.value
        if (
            depth == 0
            and name in src.constants
            and name not in assigned_in(fn)
            and "batch_size" not in param_names(fn)
            and not fn.params.kwonly_params
            and not isinstance(fn.params.star_arg, cst.ParamStar)
        ):
            return "batch_size", [key], one_shot, repeats, batch, arg.value
        return None
    if depth >= 2:
        return None
    found: list[tuple[str, list[FnKey], bool, bool, cst.Call, cst.Name | None]] = []
    for call in iter_calls(fn):
        callee = ix.resolve_fn(src, key[1], call.func)
        if callee is None or callee == key:
            continue
        inner = batch_param_of(ix, callee, depth + 1)
        if inner is None:
            continue
        passed = bind_call(ix.fn(callee), call).get(inner[0])
        if not isinstance(passed, cst.Name) or passed.value not in own:
            return None  # batched by something the caller computes: not one parameter
        found.append(
            (passed.value, [key, *inner[1]], one_shot, repeats or inner[3], inner[4], None)
        )
    return found[0] if len(found) == 1 else None


def params_subscript_of(expr: cst.BaseExpression) -> str | None:
    """`p` of `p["batch_size"]`."""
    if not (isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Name)):
        return None
    renamed = expr.with_changes(value=cst.Name("params"))
    return expr.value.value if is_params_batch_size(renamed) else None


def batches_by_params_of(ix: ProjectFacts, helpers: list[FnKey], batch: cst.Call) -> bool:
    """Whether the helper chain's batch (in its last helper) reads `<a parameter>
    ["batch_size"]`: what the first helper passes on down is a params dict, not a size."""
    last = ix.fn(helpers[-1])
    arg = batch_size_arg(batch) if batch in batch_calls(last) else call_arg(batch, "batch_size", 1)
    return arg is not None and params_subscript_of(arg.value) is not None


# Batching outside `.batch(...)`: TF1 queue readers (they return tensors, and TPUEstimator
# on TPU takes a tf.data.Dataset) and tf.data helpers that batch by an argument of their own.
QUEUE_BATCHING = frozenset(
    {
        "train.batch",
        "train.shuffle_batch",
        "train.batch_join",
        "train.shuffle_batch_join",
        "train.maybe_batch",
        "train.maybe_shuffle_batch",
        "contrib.learn.io.read_batch_features",
        "contrib.learn.io.read_batch_examples",
        "contrib.learn.read_batch_features",
        "contrib.learn.read_batch_examples",
    }
)
QUEUE_METHODS = frozenset({"dequeue_many", "dequeue_up_to"})
DATASET_BATCHING = frozenset(
    {
        "data.experimental.make_csv_dataset",
        "data.experimental.make_batched_features_dataset",
        "data.experimental.map_and_batch",
        "data.experimental.group_by_window",
        "data.experimental.bucket_by_sequence_length",
        "contrib.data.make_csv_dataset",
        "contrib.data.make_batched_features_dataset",
        "contrib.data.map_and_batch",
        "contrib.data.group_by_window",
        "contrib.data.bucket_by_sequence_length",
        "contrib.data.sliding_window_batch",
    }
)
GROUPED_BATCHING = frozenset({"group_by_window", "bucket_by_sequence_length"})
NO_BATCH = (
    "TPUEstimator needs the input function to return a tf.data.Dataset batched by "
    "params['batch_size'] (drop_remainder on TPU)"
)
NOT_FOUND = (
    "no `.batch(...)` call found in the input function; TPUEstimator needs "
    "a static batch of params['batch_size']"
)


def why_unbatched(ix: ProjectFacts, key: FnKey, depth: int = 0, via: str | None = None) -> str:
    """The refusal for an input function without `.batch(...)`: what it batches with."""
    src = ix.modules[key[0]]
    fn = ix.fn(key)
    where = "the input function" if via is None else f"`{via}`, which the input function calls,"
    iterator = False
    for call in iter_calls(fn, into_defs=False):
        name = src.imports.tf_name(call.func) or ""
        method = call.func.attr.value if isinstance(call.func, cst.Attribute) else ""
        if name in QUEUE_BATCHING or method in QUEUE_METHODS:
            return (
                f"{where} batches with the queue-based `{name or method}`: {NO_BATCH}; "
                "rewrite it with tf.data by hand"
            )
        if name.rpartition(".")[2] in GROUPED_BATCHING:
            # Each group's batches hold its own element shapes, and its last one is partial:
            # no one batch size and shape to give the TPU, which compiles for one.
            return (
                f"{where} batches with `{name.rpartition('.')[2]}(...)`, whose batches vary "
                "in size and shape from group to group (each group's last batch is partial): "
                f"{NO_BATCH}, with one static shape; pad the elements to fixed lengths and "
                "batch by params['batch_size'] with drop_remainder on TPU by hand"
            )
        if name in DATASET_BATCHING:
            return (
                f"{where} batches with `{name.rpartition('.')[2]}(...)`: {NO_BATCH}; give "
                "it params['batch_size'] and static batches on TPU by hand"
            )
        iterator = iterator or method == "get_next"
        callee = ix.resolve_fn(src, key[1], call.func) if depth < 2 else None
        if callee is not None and callee != key:
            if batch_calls(ix.fn(callee)):
                held = batch_size_of_parameter(ix.fn(callee))
                if held is not None:
                    # `.batch(params.batch_size)`: the helper reads the batch size from an
                    # object it is passed, which TPUEstimator's params can only be if the
                    # Estimator's own params stop holding it (the key is reserved).
                    return (
                        f"{where} batches inside `{callee[1]}`, a helper it calls, by "
                        f"`{held}` of an object it is passed: {NO_BATCH}; pass the helper "
                        "the params TPUEstimator hands the input function (TPUEstimator sets "
                        "their batch_size: the key of a dict, the attribute of an HParams), "
                        "and build the TPUEstimator with params without batch_size (a key it "
                        "reserves: ValueError) and that size as its train/eval_batch_size, by "
                        "hand"
                    )
                return (
                    f"{where} batches inside `{callee[1]}`, a helper it calls: {NO_BATCH}; "
                    "give the helper the batch size from params by hand"
                )
            why = why_unbatched(ix, callee, depth + 1, via or callee[1])
            if why != NOT_FOUND:
                return why
    if iterator:
        return (
            f"{where} returns tensors from an iterator (`get_next()`), with no `.batch(...)` "
            f"of its own: {NO_BATCH}; return the dataset itself"
        )
    returned = returned_call(fn)
    head = (dotted(returned.func) or "").partition(".")[0] if returned is not None else ""
    # An imported function, or an object the input function does not make itself (a closure
    # over a project object, `data.input_fn("train")`); never a dataset built in the body.
    followable = head in src.imports.bindings or head in src.relative
    outside = bool(head) and head not in assigned_in(fn) and head not in param_names(fn)
    if (
        via is None
        and returned is not None
        and (followable or outside)
        and not src.imports.tf_name(returned.func)
    ):
        return (
            f"the input function has no `.batch(...)` of its own and returns what "
            f"`{node_code(returned.func)}(...)` makes: {NO_BATCH}; make that batch by "
            "params['batch_size'] by hand"
        )
    return NOT_FOUND


def batched_by_a_parameter(ix: ProjectFacts, key: FnKey) -> tuple[str, str] | None:
    """The def (the input function, or a project helper it calls) and the batch size, when
    it batches by `p.batch_size` / `p["batch_size"]` of a parameter `p` of its own."""
    fn = ix.fn(key)
    if batch_calls(fn):
        held = batch_size_of_parameter(fn)
        return (key[1], held) if held is not None else None
    src = ix.modules[key[0]]
    for call in iter_calls(fn, into_defs=False):
        callee = ix.resolve_fn(src, key[1], call.func)
        if callee is not None and callee != key and batch_calls(ix.fn(callee)):
            held = batch_size_of_parameter(ix.fn(callee))
            if held is not None:
                return callee[1], held
    return None


def batch_size_of_parameter(fn: cst.FunctionDef) -> str | None:
    """`p.batch_size` / `p["batch_size"]`, `p` a parameter `fn` never rebinds, when that is
    what its one `.batch(...)` batches by."""
    calls = batch_calls(fn)
    arg = batch_size_arg(calls[0]) if len(calls) == 1 else None
    if arg is None:
        return None
    size = arg.value
    own = set(param_names(fn)) - assigned_in(fn)
    if params_subscript_of(size) in own:
        return node_code(size)
    if (
        isinstance(size, cst.Attribute)
        and size.attr.value == "batch_size"
        and isinstance(size.value, cst.Name)
        and size.value.value in own
    ):
        return node_code(size)
    return None
