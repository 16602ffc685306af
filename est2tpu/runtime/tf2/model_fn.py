"""`tf.estimator.EstimatorSpec` for the tf2 facade (TensorFlow's estimator/model_fn.py)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, NamedTuple


class EstimatorSpec(NamedTuple):
    """`tf.estimator.EstimatorSpec`; hooks and scaffolds have no facade equivalent."""

    mode: str
    predictions: Any = None
    loss: Any = None
    train_op: Any = None
    eval_metric_ops: Any = None
    export_outputs: Any = None
    training_chief_hooks: Any = None
    training_hooks: Any = None
    scaffold: Any = None
    evaluation_hooks: Any = None
    prediction_hooks: Any = None


def _check_spec(spec: Any, mode: str) -> EstimatorSpec:
    if not isinstance(spec, EstimatorSpec):
        raise TypeError(
            "est2tpu tf2 facade: the model_fn must return est2tpu.runtime.tf2.EstimatorSpec, "
            f"got {type(spec).__name__}"
        )
    from est2tpu.runtime.tf2.hooks import FacadeHook

    hooks = list(spec.training_hooks or ())
    if not all(isinstance(hook, FacadeHook) for hook in hooks):
        raise NotImplementedError(
            "est2tpu tf2 facade: EstimatorSpec(training_hooks=...) takes the hooks of "
            "est2tpu.runtime.tf2.hooks only (a SessionRunHook needs a session)"
        )
    for hook_field in (
        "training_chief_hooks",
        "scaffold",
        "evaluation_hooks",
        "prediction_hooks",
    ):
        if getattr(spec, hook_field):
            raise NotImplementedError(
                f"est2tpu tf2 facade: EstimatorSpec({hook_field}=...) is not supported"
            )
    return spec._replace(loss=_scalar_loss(spec.loss))


def _scalar_loss(loss: Any) -> Any:
    """TF1's EstimatorSpec check: a loss of one element (shape [1], or unknown) is reshaped
    to a scalar; a loss of several elements is refused."""
    import tensorflow as tf

    if loss is None or not tf.is_tensor(loss) or loss.shape.rank == 0:
        return loss
    if loss.shape.num_elements() not in (None, 1):
        raise ValueError(f"Loss must be scalar, given: {loss}")
    return tf.reshape(loss, [])


def _with_metrics(
    spec: EstimatorSpec, metric_fn: Callable[..., Any], features: Any, labels: Any, config: Any
) -> EstimatorSpec:
    """The EVAL spec with `metric_fn`'s metrics added (they win a name clash), as TF1's
    `add_metrics` model_fn: the metric_fn gets those of features, labels, predictions and
    config it names."""
    import tensorflow as tf

    names = inspect.signature(metric_fn).parameters
    given = {"features": features, "labels": labels, "predictions": spec.predictions}
    kwargs = {k: v for k, v in {**given, "config": config}.items() if k in names}
    metrics = dict(spec.eval_metric_ops or {})
    # Not converted by AutoGraph, as the model_fn (its metrics are keyed by call site).
    metrics.update(tf.autograph.experimental.do_not_convert(metric_fn)(**kwargs))
    return spec._replace(eval_metric_ops=metrics)
