"""The state a facade Estimator keeps across model_fn calls, and the call in progress.

TF1 built a new graph for every `train`/`evaluate`/`predict` and found its variables again
by name. Here the model_fn is traced several times (a build trace per mode, then the step
functions, once per replica under MirroredStrategy), so each stateful object the model_fn
asks for - a layer, a metric, an optimizer - is kept in a store keyed by its *call site*
(file, line, and how many times that line ran in this call, for loops) and handed back on
every later call.
"""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast


class ModeKeys:
    """The mode strings `tf.estimator.ModeKeys` uses (PREDICT is "infer")."""

    TRAIN = "train"
    EVAL = "eval"
    PREDICT = "infer"


class GraphKeys:
    """The graph collections the facade understands: UPDATE_OPS (empty, see
    `get_collection`) and LOSSES, TF1's default `loss_collection` (see `losses.add_loss`)."""

    UPDATE_OPS = "update_ops"
    LOSSES = "losses"


def get_collection(key: str, scope: str | None = None) -> list[Any]:
    """`tf.compat.v1.get_collection(UPDATE_OPS)`: always empty under the facade.

    The facade's layers apply their own updates (batch-norm moving averages) when they run
    in training mode, so `with tf.control_dependencies(update_ops):` has nothing to wait for.
    """
    if key != GraphKeys.UPDATE_OPS:
        raise NotImplementedError(
            f"est2tpu tf2 facade: collection {key!r} has no TF2 equivalent; only "
            "UPDATE_OPS is supported"
        )
    return []


@dataclass
class TrainOpRecord:
    """One `optimizer.minimize(loss, ...)` call seen in the model_fn."""

    optimizer: Any  # est2tpu.runtime.tf2.train._Optimizer
    loss: Any
    var_list: Any
    # `apply_gradients(grads_and_vars)`: the gradients the model_fn computed (loss is None)
    grads_and_vars: Any = None


@dataclass
class LossRecord:
    """A loss built by the facade's `losses`: its per-replica denominator (or None for SUM).

    `get_total_loss`'s sum has `parts` instead: its terms, each scaled to the global batch
    by its own denominator (a mean over the batch, a weighted mean, a SUM)."""

    loss: Any
    denominator: Any
    parts: tuple[Any, ...] | None = None


@dataclass
class Invocation:
    """One call of the model_fn (per replica thread)."""

    state: State
    mode: str
    building: bool  # the build trace: create state, update nothing
    counts: dict[tuple[str, int], int] = field(default_factory=dict)
    train_ops: list[TrainOpRecord] = field(default_factory=list)
    losses: list[LossRecord] = field(default_factory=list)
    metric_by_op: dict[int, Any] = field(default_factory=dict)
    # id(update_op) -> the value tensor returned with it: an entry is reported by its
    # update op's metric, so any other value (computed from it) must not pass silently.
    metric_value_by_op: dict[int, Any] = field(default_factory=dict)
    used_layers: list[Any] = field(default_factory=list)
    # TF1's LOSSES collection of this call's graph: `add_loss` and the losses built with the
    # default `loss_collection`, in order (what `get_losses`/`get_total_loss` read).
    collected_losses: list[Any] = field(default_factory=list)
    # This replica's share of a loss, as the facade scales a minimized loss (TRAIN only):
    # what `compute_gradients` differentiates, as TF1's scaled it under a strategy.
    scale_loss: Callable[[Any], Any] | None = None
    graph: Any = None  # the graph the model_fn is traced in (not a tf.cond branch's)
    created: list[Any] = field(default_factory=list)  # the variables `variable_store` gave
    # TF1 optimizers the facade did not build, met in this call (see train.route_tf1_optimizers)
    raw_optimizers: list[Any] = field(default_factory=list)

    def site_key(self, depth: int) -> tuple[str, int, int]:
        """(file, line, n-th run of that line in this call) of the user code `depth` up."""
        frame = sys._getframe(depth + 1)
        site = (frame.f_code.co_filename, frame.f_lineno)
        n = self.counts.get(site, 0)
        self.counts[site] = n + 1
        return (site[0], site[1], n)


class State:
    """What one facade Estimator keeps: layers, metrics, optimizers, the variables the
    model_fn creates itself, and the global step."""

    def __init__(
        self, strategy: Any, replica_programs: bool = False, compiled: bool = False
    ) -> None:
        import tensorflow as tf

        self.strategy = strategy
        # The train step is compiled: the feature columns of strings its build trace
        # asks for (-> their index), whose ids the host computes (see `_host_columns`).
        self.host_columns: dict[Any, int] | None = {} if compiled else None
        # Each replica computes in an XLA program of its own (see `_xla`): no collective
        # runs inside the model_fn, as on a TPU core under TPUEstimator.
        self.replica_programs = replica_programs
        # Variables the model_fn creates (a Keras layer or model built in it, a tf.layers
        # class, tf.compat.v1.get_variable, a feature-column model): (n-th creation in the
        # call, its name without TensorFlow's uniquifying suffixes) -> the variable made in
        # the build trace, handed back on every later call (see `variable_store`).
        self.variables: dict[tuple[int, str], Any] = {}
        self.layers: dict[Any, Any] = {}
        self.layer_names: dict[str, int] = {}
        self.metrics: dict[Any, Any] = {}
        self.optimizers: dict[Any, Any] = {}
        with strategy.scope():
            self.global_step = tf.Variable(
                0,
                dtype=tf.int64,
                trainable=False,
                name="global_step",
                aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA,
            )

    def unique_name(self, base: str) -> str:
        """TF1's layer naming: dense, dense_1, dense_2, ..."""
        n = self.layer_names.get(base, 0)
        self.layer_names[base] = n + 1
        return base if n == 0 else f"{base}_{n}"

    def trainable_variables(self) -> list[Any]:
        """The model's trainable variables: the facade's layers', then the model_fn's own."""
        out: list[Any] = []
        seen: set[int] = set()
        for layer in self.layers.values():
            for v in layer.trainable_weights:
                if id(v) not in seen:
                    seen.add(id(v))
                    out.append(v)
        for v in self.variables.values():
            if v.trainable and id(v) not in seen:
                seen.add(id(v))
                out.append(v)
        return out

    def trackables(self) -> dict[str, Any]:
        """What a checkpoint holds: the step, every layer and optimizer, by stable names."""
        out: dict[str, Any] = {"global_step": self.global_step}
        for layer in self.layers.values():
            out[f"layer/{layer.name}"] = layer
        for opt in self.optimizers.values():
            out[f"optimizer/{opt.checkpoint_name}"] = opt.inner
        for (n, name), variable in self.variables.items():
            out[f"variable/{n}/{name}"] = variable
        return out


_LOCAL = threading.local()


def current(what: str) -> Invocation:
    """The model_fn call in progress on this thread, or a clear error outside one."""
    inv: Invocation | None = getattr(_LOCAL, "invocation", None)
    if inv is None:
        raise RuntimeError(
            f"est2tpu tf2 facade: {what} must be called inside a model_fn run by "
            "est2tpu.runtime.tf2.Estimator"
        )
    return inv


def active() -> Invocation | None:
    """The model_fn call in progress on this thread, if any."""
    inv: Invocation | None = getattr(_LOCAL, "invocation", None)
    return inv


def invoke(
    state: State, mode: str, building: bool, fn: Callable[[], Any]
) -> tuple[Any, Invocation]:
    """Run `fn` (the model_fn call) as one invocation on this thread, the variables it
    creates kept by `variable_store`."""
    import tensorflow as tf
    from tensorflow.python.ops.variable_scope import _VariableStore as VariableStore
    from tensorflow.python.ops.variable_scope import with_variable_store

    inv = Invocation(state, mode, building)
    saved = getattr(_LOCAL, "invocation", None)
    _LOCAL.invocation = inv
    creator = variable_store(inv)
    # Keras builds a layer's weights under `init_scope`, where the creators of the trace's
    # graph do not apply: the store is entered outside the trace too.
    with tf.init_scope():
        outer = tf.variable_creator_scope(creator)
        outer.__enter__()
    try:
        # TF1 gave each model_fn call a graph of its own, so `get_variable` of a name
        # found no earlier variable of that name: each call gets its own variable store
        # (the replicas of one step share a graph here), and the creator above hands
        # back the model's variable.
        # AUTO_REUSE: a MirroredStrategy replica other than the first runs under a reusing
        # variable scope (TF1's replicas shared one graph's store); here its store is new.
        with (
            with_variable_store(VariableStore()),
            tf.compat.v1.variable_scope(
                tf.compat.v1.get_variable_scope(),
                reuse=tf.compat.v1.AUTO_REUSE,
                auxiliary_name_scope=False,
            ),
            tf.variable_creator_scope(creator),
        ):
            return fn(), inv
    finally:
        outer.__exit__(None, None, None)
        _LOCAL.invocation = saved


class facade_owned:
    """Variables created inside belong to an object the facade keeps itself (a layer of
    `layers`, a metric, an optimizer): the store leaves them alone."""

    def __enter__(self) -> None:
        _LOCAL.owned = getattr(_LOCAL, "owned", 0) + 1

    def __exit__(self, *exc: object) -> None:
        _LOCAL.owned -= 1


_UNIQUIFIED = re.compile(r"_\d+(?=/|$)")
_REPLICA = re.compile(r"^replica_\d+/")


def _variable_name(kwargs: dict[str, Any]) -> str:
    """The name a variable is created with, under the current name scope, without the
    `_1`, `_2` suffixes TensorFlow adds to a name already taken in the graph (a Keras
    layer built again in the next trace is `dense_1` there)."""
    import tensorflow as tf

    name = kwargs.get("name") or "Variable"
    name = getattr(name, "name", name)  # a name given as a string or a NameAttr
    scope = tf.get_current_name_scope()
    full = f"{scope}/{name}" if scope else str(name)
    return _UNIQUIFIED.sub("", _REPLICA.sub("", full.split(":")[0]))


def variable_store(inv: Invocation) -> Callable[..., Any]:
    """The variable creator a model_fn call runs under: TF1's variable reuse for a model_fn
    traced many times.

    TF1 built the model_fn once per graph; here it is traced once per mode to build, then
    in every step function and replica. The n-th variable the call creates is made once,
    in the build trace, under the strategy's scope and outside the trace (`init_scope`),
    and every later call gets that variable back instead of a new one: a Keras model or
    layer built in the model_fn, a `tf.keras.Model` subclass, `tf.compat.v1.get_variable`
    and feature-column models all use the same variables on every call. Each variable
    handed out joins the trace's GLOBAL_VARIABLES and TRAINABLE_VARIABLES collections, so
    `tf.compat.v1.trainable_variables()` and a TF1 optimizer's `compute_gradients`
    without var_list find it, as in TF1's graph.
    """
    import tensorflow as tf

    def creator(next_creator: Callable[..., Any], **kwargs: Any) -> Any:
        # Owned by the facade, or this creator already runs (it is on the stack of the trace
        # and of the outer context, and a creator may call the next one in either).
        if getattr(_LOCAL, "owned", 0):
            return next_creator(**kwargs)
        with facade_owned():
            return _create(next_creator, kwargs)

    def _create(next_creator: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
        key = (len(inv.created), _variable_name(kwargs))
        variable = inv.state.variables.get(key)
        if variable is None:
            if not inv.building:
                raise RuntimeError(
                    "est2tpu tf2 facade: the model_fn created a variable "
                    f"{key[1]!r} (the {key[0] + 1}-th of the call) after the model was "
                    "built; create the same variables, in the same order, on every call "
                    "of the model_fn in a given mode"
                )
            initial = kwargs.get("initial_value")
            if isinstance(initial, tf.Tensor) and not callable(initial):
                value = tf.get_static_value(initial)
                if value is None:
                    raise NotImplementedError(
                        f"est2tpu tf2 facade: variable {key[1]!r} starts from a tensor "
                        "computed in the model_fn; give it an initializer (a callable or "
                        "a constant) instead"
                    )
                kwargs["initial_value"] = value
            with tf.init_scope():
                variable = next_creator(**kwargs)
            inv.state.variables[key] = variable
        inv.created.append(variable)
        collect(inv, [variable])
        return variable

    return creator


def collect(inv: Invocation, variables: Any) -> None:
    """Put `variables` in the GLOBAL_VARIABLES (and, when trainable, TRAINABLE_VARIABLES)
    collections of the model_fn's graph, once each."""
    import tensorflow as tf

    # The model_fn's graph (a Keras layer builds its weights under init_scope)
    graph = inv.graph or tf.compat.v1.get_default_graph()
    for variable in variables:
        keys = [tf.compat.v1.GraphKeys.GLOBAL_VARIABLES]
        if variable.trainable:
            keys.append(tf.compat.v1.GraphKeys.TRAINABLE_VARIABLES)
        for collection in keys:
            if not any(v is variable for v in graph.get_collection(collection)):
                graph.add_to_collection(collection, variable)


def stored(kind: str, factory: Callable[[], Any], key: Any, store: dict[Any, Any]) -> Any:
    """The object stored under `key`, created by `factory` in the build trace."""
    inv = current(kind)
    obj = store.get(key)
    if obj is None:
        if not inv.building:
            raise RuntimeError(
                f"est2tpu tf2 facade: a new {kind} appeared after the model was built "
                f"(at {key}); create every layer, metric and optimizer on every call of "
                "the model_fn in a given mode"
            )
        import tensorflow as tf

        with tf.init_scope(), facade_owned():
            obj = factory()
        store[key] = obj
    return obj


def scalar_summary(name: str, value: Any, step: int) -> None:
    """A TensorBoard scalar without needing the tensorboard package (tf.summary.write)."""
    import tensorflow as tf
    from tensorflow.core.framework import summary_pb2

    metadata = summary_pb2.SummaryMetadata()
    metadata.plugin_data.plugin_name = "scalars"
    tf.summary.write(name, tf.cast(value, tf.float32), step=step, metadata=metadata)


_F = TypeVar("_F", bound=Callable[..., Any])


def tf_function(fn: _F) -> _F:
    """`tf.function`, typed: TensorFlow ships no type information."""
    import tensorflow as tf

    return cast(_F, tf.function(fn))


ITERATOR_TENSORS = (
    "the input function returned tensors from a tf.data iterator it made: TF1's Estimator "
    "pulled a new batch from that iterator at each step, while here they are its first batch "
    "only; return the tf.data.Dataset itself (mapped as needed) instead"
)


def input_dataset(input_fn: Callable[..., Any], arguments: dict[str, Any]) -> Any:
    """What the facade iterates for an input function: the tf.data.Dataset it returns, or the
    (features, labels) tensors it builds, one batch repeated (TF1 fed them at every step).

    `arguments` are what the Estimator may pass (`params`, `mode`, `config`): the input
    function gets those it names. Tensors from an iterator the input function made are
    refused (ValueError): they would be one batch where TF1 gave a new one at each step."""
    import inspect

    import tensorflow as tf
    from tensorflow.python.data.ops import iterator_ops

    names = inspect.signature(input_fn).parameters
    made: list[object] = []
    init = iterator_ops.OwnedIterator.__init__

    def counted(self: object, *args: Any, **kwargs: Any) -> None:
        made.append(self)
        init(self, *args, **kwargs)

    iterator_ops.OwnedIterator.__init__ = counted
    try:
        result = input_fn(**{k: v for k, v in arguments.items() if k in names})
    finally:
        iterator_ops.OwnedIterator.__init__ = init
    if isinstance(result, tf.data.Dataset):
        return result
    if made:
        raise ValueError(ITERATOR_TENSORS)
    return tf.data.Dataset.from_tensors(result).repeat()
