"""What `tf.contrib.layers.optimize_loss` decided at graph-build time, for the statements
est2tpu expands it into (TensorFlow imported lazily)."""

from __future__ import annotations

from typing import Any


def optimize_loss_clip_gradients(clip_gradients: Any, grads_and_vars: Any) -> Any:
    """The (gradient, variable) pairs after TF 1.15's optimize_loss clipping step.

    The same dispatch as `contrib/layers/python/layers/optimizers.py`, on the value the
    argument has when the model_fn runs (est2tpu cannot see it in the source): a float clips
    by global norm, a callable is given the pairs and returns new ones, None leaves them as
    they are, and anything else (an int, a tensor) raises the ValueError TensorFlow raised.
    """
    if isinstance(clip_gradients, float):
        import tensorflow as tf

        gradients, variables = zip(*grads_and_vars)
        clipped, _ = tf.clip_by_global_norm(gradients, clip_gradients)
        return list(zip(clipped, variables))
    if callable(clip_gradients):
        return clip_gradients(grads_and_vars)
    if clip_gradients is not None:
        raise ValueError(f"Unknown type {type(clip_gradients)} for clip_gradients")
    return grads_and_vars


def optimize_loss_learning_rate(
    learning_rate_decay_fn: Any, learning_rate: Any, global_step: Any
) -> Any:
    """The learning rate after TF 1.15's optimize_loss decay step.

    `contrib/layers/python/layers/optimizers.py` calls the decay only when there is one
    (`if learning_rate is not None and learning_rate_decay_fn is not None`); est2tpu cannot
    see in the source whether a name or attribute holds a function or None when the model_fn
    runs, so the branch is taken here: the decayed rate, or the rate as it was.
    """
    if learning_rate_decay_fn is None:
        return learning_rate
    return learning_rate_decay_fn(learning_rate, global_step)
