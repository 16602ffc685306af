"""The state a facade Estimator keeps across model_fn calls, and the call in progress.

TF1 built a new graph for every `train`/`evaluate`/`predict` and found its variables again
by name. Here the model_fn is traced several times (a build trace per mode, then the step
functions, once per replica under MirroredStrategy), so each stateful object the model_fn
asks for - a layer, a metric, an optimizer - is kept in a store keyed by its *call site*
(file, line, and how many times that line ran in this call, for loops) and handed back on
every later call.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


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

    def site_key(self, depth: int) -> tuple[str, int, int]:
        """(file, line, n-th run of that line in this call) of the user code `depth` up."""
        frame = sys._getframe(depth + 1)
        site = (frame.f_code.co_filename, frame.f_lineno)
        n = self.counts.get(site, 0)
        self.counts[site] = n + 1
        return (site[0], site[1], n)


class State:
    """What one facade Estimator keeps: layers, metrics, optimizers and the global step."""

    def __init__(self, strategy: Any) -> None:
        import tensorflow as tf

        self.strategy = strategy
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
        out: list[Any] = []
        seen: set[int] = set()
        for layer in self.layers.values():
            for v in layer.trainable_weights:
                if id(v) not in seen:
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


def invoke(
    state: State, mode: str, building: bool, fn: Callable[[], Any]
) -> tuple[Any, Invocation]:
    """Run `fn` (the model_fn call) as one invocation on this thread."""
    inv = Invocation(state, mode, building)
    saved = getattr(_LOCAL, "invocation", None)
    _LOCAL.invocation = inv
    try:
        return fn(), inv
    finally:
        _LOCAL.invocation = saved


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

        with tf.init_scope():
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
