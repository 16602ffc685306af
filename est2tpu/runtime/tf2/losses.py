"""`tf.compat.v1.losses` with TF1's reductions, and the bookkeeping for cross-replica scaling.

Each function computes exactly what TF1 computes (it calls TF1's own loss with
`reduction=NONE`, then reduces as `compute_weighted_loss` does) and records the loss's
*denominator* (the number of present weights, the weight sum, or the element count). The
facade scales the replica's gradient by `local denominator / global denominator`, so N
replicas train on exactly the global-batch loss that one device would see.

TF1's LOSSES collection is kept per model_fn call (and replica): `add_loss` and every loss
built with the default `loss_collection` join it, and `get_losses` / `get_total_loss` read
it, as TF1 read the collection of the graph the Estimator built for that call.
"""

from __future__ import annotations

import inspect
from typing import Any

from est2tpu.runtime.tf2._core import GraphKeys, LossRecord, current


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
    collection = bound.arguments.get("loss_collection")
    bound.arguments["loss_collection"] = None
    bound.arguments["reduction"] = Reduction.NONE
    weights = bound.arguments.get("weights", 1.0)
    weighted = fn(*bound.args, **bound.kwargs)
    loss, den = _reduce(weighted, weights, reduction)
    if reduction != Reduction.NONE:
        current(f"tf2.losses.{name}").losses.append(LossRecord(loss, den))
    _collect(loss, collection, f"tf2.losses.{name}")
    return loss


def _collect(loss: Any, collection: Any, what: str) -> None:
    """TF1's `util.add_loss`: into this call's LOSSES collection unless `collection` is
    falsy (None); any other collection has no facade equivalent."""
    inv = current(what)
    if not collection:
        return
    if collection != GraphKeys.LOSSES:
        raise NotImplementedError(
            f"est2tpu tf2 facade: {what}(loss_collection={collection!r}): only TF1's default "
            "collection (GraphKeys.LOSSES) or None is kept (TF2003)"
        )
    inv.collected_losses.append(loss)


def _no_scope(scope: Any, what: str) -> None:
    if scope is not None:
        raise NotImplementedError(
            f"est2tpu tf2 facade: {what}(scope={scope!r}): TF2 has no graph name scopes to "
            "filter the collection by (TF2003)"
        )


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


def add_loss(loss: Any, loss_collection: Any = GraphKeys.LOSSES) -> None:
    """`tf.compat.v1.losses.add_loss`: `loss` joins this model_fn call's LOSSES collection
    (nothing happens with `loss_collection=None`)."""
    _collect(loss, loss_collection, "tf2.losses.add_loss")


def get_losses(scope: str | None = None, loss_collection: Any = GraphKeys.LOSSES) -> list[Any]:
    """`tf.compat.v1.losses.get_losses`: the losses this model_fn call collected so far."""
    _no_scope(scope, "tf2.losses.get_losses")
    inv = current("tf2.losses.get_losses")
    if loss_collection != GraphKeys.LOSSES:
        raise NotImplementedError(
            f"est2tpu tf2 facade: get_losses(loss_collection={loss_collection!r}): only TF1's "
            "default collection (GraphKeys.LOSSES) is kept (TF2003)"
        )
    return list(inv.collected_losses)


def get_regularization_losses(scope: str | None = None) -> list[Any]:
    """`tf.compat.v1.losses.get_regularization_losses`: the regularizers of the layers used
    so far in this model_fn call, each layer once, as TF1 collected them when the layer
    created its variables in the call's graph."""
    _no_scope(scope, "tf2.losses.get_regularization_losses")
    inv = current("tf2.losses.get_regularization_losses")
    return [loss for layer in dict.fromkeys(inv.used_layers) for loss in layer.losses]


def get_regularization_loss(
    scope: str | None = None, name: str = "total_regularization_loss"
) -> Any:
    """`tf.compat.v1.losses.get_regularization_loss`: the regularizers of the layers used so
    far in this model_fn call (0.0 without any)."""
    import tensorflow as tf

    _no_scope(scope, "tf2.losses.get_regularization_loss")
    terms = get_regularization_losses()
    return tf.add_n(terms, name=name) if terms else tf.constant(0.0)


def get_total_loss(
    add_regularization_losses: bool = True, name: str = "total_loss", scope: str | None = None
) -> Any:
    """`tf.compat.v1.losses.get_total_loss`: `tf.add_n` of this model_fn call's collected
    losses and (by default) its regularization losses; ValueError without any, as TF1.

    Under several replicas each term is scaled to the global batch by its own denominator:
    a facade loss by its recorded one, a SUM not at all, anything else (an `add_loss` of a
    batch mean, a regularizer) by the replica's share of the batch, which adds up to the
    term once for a regularizer every replica computes alike."""
    import tensorflow as tf

    _no_scope(scope, "tf2.losses.get_total_loss")
    terms = get_losses()
    if add_regularization_losses:
        terms += get_regularization_losses()
    total = tf.add_n(terms, name=name)
    current("tf2.losses.get_total_loss").losses.append(LossRecord(total, None, tuple(terms)))
    return total
