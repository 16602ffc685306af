"""`tf.compat.v1.losses` with TF1's reductions, and the bookkeeping for cross-replica scaling.

Each function computes exactly what TF1 computes (it calls TF1's own loss with
`reduction=NONE`, then reduces as `compute_weighted_loss` does) and records the loss's
*denominator* (the number of present weights, the weight sum, or the element count). The
facade scales the replica's gradient by `local denominator / global denominator`, so N
replicas train on exactly the global-batch loss that one device would see.
"""

from __future__ import annotations

import inspect
from typing import Any

from est2tpu.runtime.tf2._core import LossRecord, current


class Reduction:
    """`tf.compat.v1.losses.Reduction`."""

    NONE = "none"
    SUM = "weighted_sum"
    SUM_OVER_BATCH_SIZE = "weighted_sum_over_batch_size"
    MEAN = "weighted_mean"
    SUM_BY_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"
    SUM_OVER_NONZERO_WEIGHTS = SUM_BY_NONZERO_WEIGHTS


def _reduce(weighted: Any, weights: Any, reduction: str) -> tuple[Any, Any]:
    """(loss, denominator) as TF1's compute_weighted_loss reduces `losses * weights`."""
    import tensorflow as tf

    input_dtype = weighted.dtype
    weighted = tf.cast(weighted, tf.float32)
    if reduction == Reduction.NONE:
        return tf.cast(weighted, input_dtype), None
    total = tf.reduce_sum(weighted)
    w = tf.cast(weights, tf.float32) * tf.ones_like(weighted)
    if reduction == Reduction.SUM:
        return tf.cast(total, input_dtype), None
    if reduction == Reduction.MEAN:
        den = tf.reduce_sum(w)
    elif reduction == Reduction.SUM_OVER_BATCH_SIZE:
        den = tf.cast(tf.size(weighted), tf.float32)
    else:  # SUM_BY_NONZERO_WEIGHTS
        den = tf.reduce_sum(tf.where(tf.equal(w, 0.0), tf.zeros_like(w), tf.ones_like(w)))
    return tf.cast(tf.math.divide_no_nan(total, den), input_dtype), den


def _v1_loss(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    import tensorflow as tf

    fn = getattr(tf.compat.v1.losses, name)
    bound = inspect.signature(fn).bind(*args, **kwargs)
    bound.apply_defaults()
    reduction = bound.arguments.pop("reduction", Reduction.SUM_BY_NONZERO_WEIGHTS)
    bound.arguments["loss_collection"] = None
    bound.arguments["reduction"] = Reduction.NONE
    weights = bound.arguments.get("weights", 1.0)
    weighted = fn(*bound.args, **bound.kwargs)
    loss, den = _reduce(weighted, weights, reduction)
    if reduction != Reduction.NONE:
        current(f"tf2.losses.{name}").losses.append(LossRecord(loss, den))
    return loss


def _make(name: str) -> Any:
    def loss(*args: Any, **kwargs: Any) -> Any:
        return _v1_loss(name, args, kwargs)

    loss.__name__ = name
    loss.__qualname__ = name
    loss.__doc__ = f"`tf.compat.v1.losses.{name}`, same arguments and reduction."
    return loss


absolute_difference = _make("absolute_difference")
compute_weighted_loss = _make("compute_weighted_loss")
cosine_distance = _make("cosine_distance")
hinge_loss = _make("hinge_loss")
huber_loss = _make("huber_loss")
log_loss = _make("log_loss")
mean_squared_error = _make("mean_squared_error")
sigmoid_cross_entropy = _make("sigmoid_cross_entropy")
softmax_cross_entropy = _make("softmax_cross_entropy")
sparse_softmax_cross_entropy = _make("sparse_softmax_cross_entropy")


def get_regularization_loss(
    scope: str | None = None, name: str = "total_regularization_loss"
) -> Any:
    """`tf.compat.v1.losses.get_regularization_loss`: the regularizers of the layers used so
    far in this model_fn call (0.0 without any)."""
    import tensorflow as tf

    inv = current("tf2.losses.get_regularization_loss")
    terms = [loss for layer in dict.fromkeys(inv.used_layers) for loss in layer.losses]
    return tf.add_n(terms) if terms else tf.constant(0.0)
