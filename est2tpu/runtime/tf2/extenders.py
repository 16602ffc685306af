"""`tf.estimator.add_metrics` for the tf2 facade (TensorFlow's estimator/extenders.py)."""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from est2tpu.runtime.tf2._estimator import Estimator


_METRIC_FN_ARGS = frozenset({"features", "labels", "predictions", "config"})


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
