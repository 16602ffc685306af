"""A loss and its gradient across replicas: each replica's share of the global-batch loss
(`scaled`), or its loss sum (`local_sum`) whose gradients one all-reduce sums with the
denominator before a TF1 optimizer applies them (TF1's `_distributed_apply`)."""

from __future__ import annotations

from typing import Any

from est2tpu.runtime.tf2._core import Invocation, facade_owned


def apply_summed(strategy: Any, optimizer: Any, grads_and_vars: Any, denominator: Any) -> Any:
    """TF1's `_distributed_apply` (cross-replica, in a merge_call) of gradients of the
    replicas' loss *sums*: one batch all-reduce sums the gradients and the denominators,
    and each device divides its summed gradient by the summed denominator as it updates."""
    import tensorflow as tf

    pairs = list(grads_and_vars)
    reduced = strategy.extended.batch_reduce_to(
        tf.distribute.ReduceOp.SUM, [(denominator, pairs[0][1]), *pairs]
    )
    summed = [(g, v) for g, (_, v) in zip(reduced[1:], pairs)]
    with facade_owned():  # the optimizer's slots are its own (merge_call runs elsewhere)
        return optimizer._distributed_apply(_Summed(strategy, reduced[0]), summed)


def reducible(pairs: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """`pairs` as the replicas' gradients can be summed: over several replicas each sparse
    gradient (an `IndexedSlices`, an embedding's) dense, for a TF1 optimizer as for a Keras
    one (`apply`). The strategy's all-gather of `IndexedSlices` inside the train loop does
    not hold when the replicas' ids differ in number (a hash bucket or a cross over a
    feature with missing values): the replicas' collectives mismatch. A dense all-reduce
    does. TF1's SGD, Adagrad, Adam and Ftrl update the rows a zero gradient leaves as their
    sparse update does; momentum and RMSProp move every row, as on a TPU. With one
    replica, `pairs` as they are."""
    import tensorflow as tf

    ctx = tf.distribute.get_replica_context()
    if ctx is None or ctx.num_replicas_in_sync <= 1:
        return pairs
    return [
        (tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g, v) for g, v in pairs
    ]


def apply(optimizer: Any, pairs: list[tuple[Any, Any]]) -> Any:
    """`optimizer.apply_gradients(pairs)` in a replica. A Keras optimizer over several
    replicas gets each sparse gradient dense: its all-gather of `IndexedSlices` inside the
    train loop does not hold (the replicas' collectives mismatch), an all-reduce of dense
    tensors does. Keras' SGD, Adagrad and Adam update the rows a zero gradient leaves as
    their sparse update does; momentum and RMSprop move every row, as on a TPU."""
    import tensorflow as tf

    ctx = tf.distribute.get_replica_context()
    if (
        ctx is not None
        and ctx.num_replicas_in_sync > 1
        and not isinstance(optimizer, tf.compat.v1.train.Optimizer)
    ):
        pairs = [
            (tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g, v) for g, v in pairs
        ]
    return optimizer.apply_gradients(pairs)


def _divided(grad: Any, total: Any) -> Any:
    import tensorflow as tf

    if isinstance(grad, tf.IndexedSlices):
        return tf.IndexedSlices(_divided(grad.values, total), grad.indices, grad.dense_shape)
    return tf.math.divide_no_nan(grad, tf.cast(total, grad.dtype))


class _SummedExtended:
    """The strategy's `extended` as `_distributed_apply` uses it, for gradients already
    summed: no second reduction, and each update divides by the global denominator."""

    def __init__(self, extended: Any, total: Any) -> None:
        self._extended = extended
        self._total = total

    def batch_reduce_to(
        self, reduce_op: Any, value_destination_pairs: Any, options: Any = None
    ) -> Any:
        return [value for value, _ in value_destination_pairs]

    def update(
        self, var: Any, fn: Any, args: Any = (), kwargs: Any = None, group: bool = True
    ) -> Any:
        (grad,) = args
        return self._extended.update(
            var,
            lambda v, g, total: fn(v, _divided(g, total)),
            args=(grad, self._total),
            kwargs=kwargs,
            group=group,
        )

    def __getattr__(self, name: str) -> Any:
        return getattr(self._extended, name)


class _Summed:
    """The strategy, seen through `_SummedExtended`."""

    def __init__(self, strategy: Any, total: Any) -> None:
        self._strategy = strategy
        self.extended = _SummedExtended(strategy.extended, total)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._strategy, name)


def batch_size(tree: Any) -> Any:
    """The number of examples in a (per-replica) batch: the leading dim of its first tensor."""
    import tensorflow as tf

    first = tf.nest.flatten(tree)[0]
    return tf.cast(tf.shape(first)[0], tf.float32)


def local_sum(loss: Any, inv: Invocation, features: Any) -> tuple[Any, Any] | None:
    """(what to differentiate, this replica's denominator): the replica's sum of a mean
    loss and its denominator, or a SUM loss itself and None (the sums add up). None for
    a `get_total_loss` whose terms have different denominators: no one denominator
    makes its sum (the caller scales each term, `scaled`)."""
    import tensorflow as tf

    record = next((r for r in inv.losses if r.loss is loss), None)
    if record is not None and record.parts is not None:
        if any(r.loss is part for part in record.parts for r in inv.losses):
            return None
        record = None  # batch means and regularizers only: the batch is the denominator
    if record is not None and record.denominator is None:
        return loss, None
    local = record.denominator if record is not None else batch_size(features)
    return loss * tf.cast(local, loss.dtype), tf.cast(local, tf.float32)


def scaled(loss: Any, inv: Invocation, features: Any, ctx: Any) -> Any:
    """This replica's share of the global-batch loss (see `losses`)."""
    import tensorflow as tf

    record = next((r for r in inv.losses if r.loss is loss), None)
    if record is not None and record.parts is not None:
        return tf.add_n(
            [tf.cast(scaled(part, inv, features, ctx), loss.dtype) for part in record.parts]
        )
    if record is not None and record.denominator is None:
        return loss  # a SUM: the replicas' sums add up to the global sum
    local = record.denominator if record is not None else batch_size(features)
    total = ctx.all_reduce(tf.distribute.ReduceOp.SUM, local)
    return loss * tf.cast(tf.math.divide_no_nan(local, total), loss.dtype)
