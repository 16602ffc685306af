"""`tf.estimator.add_metrics` for the tf2 facade (TensorFlow's estimator/extenders.py)."""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from est2tpu.runtime.tf2.model_fn import EstimatorSpec

if TYPE_CHECKING:
    from est2tpu.runtime.tf2._estimator import Estimator


_METRIC_FN_ARGS = frozenset({"features", "labels", "predictions", "config"})


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


def add_metrics(estimator: Estimator, metric_fn: Callable[..., Any]) -> Estimator:
    """`tf.estimator.add_metrics` (`tf.contrib.estimator.add_metrics`): a new Estimator
    whose evaluation also reports `metric_fn`'s metrics, built with
    `est2tpu.runtime.tf2.metrics`.

    `metric_fn` may take `features`, `labels`, `predictions` (what the model_fn returns in
    EVAL mode) and `config`, and returns `{name: metric}`. The new Estimator shares the
    model_dir, config and params (its checkpoints are the old one's); a premade keeps its
    predict.
    """
    from est2tpu.runtime.tf2._estimator import Estimator

    if not isinstance(estimator, Estimator):
        raise TypeError(
            "est2tpu tf2 facade: add_metrics takes an est2tpu.runtime.tf2 Estimator, got "
            f"{type(estimator).__name__}"
        )
    invalid = list(set(inspect.signature(metric_fn).parameters) - _METRIC_FN_ARGS)
    if invalid:
        raise ValueError(f"metric_fn ({metric_fn}) has following not expected args: {invalid}")
    new = copy.copy(estimator)
    new._init_state()
    new._metric_fns = (*estimator._metric_fns, metric_fn)
    return new
