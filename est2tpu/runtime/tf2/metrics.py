"""`tf.compat.v1.metrics` as stateful objects reduced across replicas.

Each call returns TF1's `(value, update_op)` pair. The metric behind it is created once per
call site; its state is a few sums held in sync-on-read variables, so each replica adds its
own batch and reading the result after evaluation sums over every replica (and worker) -
exactly the totals TF1 accumulated over the whole evaluation on one device.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from est2tpu.runtime.tf2._core import current, stored


class Metric:
    """Named sums and a function of them (TF1's metric variables and value)."""

    def __init__(self, name: str, shapes: dict[str, Any], result_fn: Callable[..., Any]) -> None:
        import tensorflow as tf

        self.name = name
        self.result_fn = result_fn
        self.sums = {
            key: tf.Variable(
                tf.zeros(shape, tf.float32),
                trainable=False,
                name=f"{name}/{key}",
                synchronization=tf.VariableSynchronization.ON_READ,
                aggregation=tf.VariableAggregation.SUM,
            )
            for key, shape in shapes.items()
        }

    def update(self, **increments: Any) -> Any:
        import tensorflow as tf

        ops = [self.sums[k].assign_add(tf.cast(v, tf.float32)) for k, v in increments.items()]
        return tf.group(*ops)

    def result(self) -> Any:
        return self.result_fn(**{k: v.read_value() for k, v in self.sums.items()})

    def reset(self) -> None:
        import tensorflow as tf

        for v in self.sums.values():
            v.assign(tf.zeros_like(v))


class MetricOp(tuple):  # type: ignore[type-arg]
    """TF1's `(value, update_op)`, remembering the metric it came from."""

    metric: Metric


def _metric(
    kind: str,
    shapes: dict[str, Any],
    result_fn: Callable[..., Any],
    increments: Callable[[], dict[str, Any]],
    depth: int = 2,
) -> MetricOp:
    import tensorflow as tf

    inv = current(f"tf2.metrics.{kind}")
    key = inv.site_key(depth)
    metric: Metric = stored(
        "metric",
        lambda: Metric(f"{kind}_{len(inv.state.metrics)}", shapes, result_fn),
        key,
        inv.state.metrics,
    )
    if inv.building:
        update = tf.no_op()
    else:
        update = metric.update(**increments())
    value = metric.result()
    op = MetricOp((value, update))
    op.metric = metric
    inv.metric_by_op[id(update)] = metric
    return op


def _float(x: Any) -> Any:
    import tensorflow as tf

    return tf.cast(tf.convert_to_tensor(x), tf.float32)


def _squeeze(labels: Any, predictions: Any) -> tuple[Any, Any]:
    """TF1's remove_squeezable_dimensions: drop a trailing 1 where the ranks differ by one."""
    import tensorflow as tf

    labels = tf.convert_to_tensor(labels)
    predictions = tf.convert_to_tensor(predictions)
    lr, pr = labels.shape.rank, predictions.shape.rank
    if lr is not None and pr is not None:
        if pr - lr == 1 and predictions.shape[-1] == 1:
            predictions = tf.squeeze(predictions, [-1])
        elif lr - pr == 1 and labels.shape[-1] == 1:
            labels = tf.squeeze(labels, [-1])
    return labels, predictions


def _weighted(values: Any, weights: Any) -> tuple[Any, Any]:
    """(sum of weighted values, sum of weights) as TF1's `mean` adds them."""
    import tensorflow as tf

    values = _float(values)
    if weights is None:
        return tf.reduce_sum(values), tf.cast(tf.size(values), tf.float32)
    w = _float(weights) * tf.ones_like(values)
    return tf.reduce_sum(values * w), tf.reduce_sum(w)


def _div(total: Any, count: Any) -> Any:
    import tensorflow as tf

    return tf.math.divide_no_nan(total, count)


def mean(
    values: Any,
    weights: Any = None,
    metrics_collections: Any = None,
    updates_collections: Any = None,
    name: str | None = None,
) -> MetricOp:
    """`tf.compat.v1.metrics.mean`."""

    def inc() -> dict[str, Any]:
        total, count = _weighted(values, weights)
        return {"total": total, "count": count}

    return _metric("mean", {"total": [], "count": []}, _div, inc)


def accuracy(
    labels: Any,
    predictions: Any,
    weights: Any = None,
    metrics_collections: Any = None,
    updates_collections: Any = None,
    name: str | None = None,
) -> MetricOp:
    """`tf.compat.v1.metrics.accuracy`."""
    import tensorflow as tf

    def inc() -> dict[str, Any]:
        lab, pred = _squeeze(labels, predictions)
        if lab.dtype != pred.dtype:
            pred = tf.cast(pred, lab.dtype)
        total, count = _weighted(tf.equal(pred, lab), weights)
        return {"total": total, "count": count}

    return _metric("accuracy", {"total": [], "count": []}, _div, inc)


def _error_metric(
    kind: str,
    fn: Callable[[Any, Any], Any],
    labels: Any,
    predictions: Any,
    weights: Any,
    result: Callable[..., Any] = _div,
) -> MetricOp:
    def inc() -> dict[str, Any]:
        lab, pred = _squeeze(labels, predictions)
        total, count = _weighted(fn(_float(lab), _float(pred)), weights)
        return {"total": total, "count": count}

    return _metric(kind, {"total": [], "count": []}, result, inc, depth=3)


def mean_absolute_error(
    labels: Any,
    predictions: Any,
    weights: Any = None,
    metrics_collections: Any = None,
    updates_collections: Any = None,
    name: str | None = None,
) -> MetricOp:
    """`tf.compat.v1.metrics.mean_absolute_error`."""
    import tensorflow as tf

    return _error_metric(
        "mean_absolute_error", lambda l, p: tf.abs(p - l), labels, predictions, weights
    )


def mean_squared_error(
    labels: Any,
    predictions: Any,
    weights: Any = None,
    metrics_collections: Any = None,
    updates_collections: Any = None,
    name: str | None = None,
) -> MetricOp:
    """`tf.compat.v1.metrics.mean_squared_error`."""
    import tensorflow as tf

    return _error_metric(
        "mean_squared_error",
        lambda l, p: tf.math.squared_difference(l, p),
        labels,
        predictions,
        weights,
    )


def root_mean_squared_error(
    labels: Any,
    predictions: Any,
    weights: Any = None,
    metrics_collections: Any = None,
    updates_collections: Any = None,
    name: str | None = None,
) -> MetricOp:
    """`tf.compat.v1.metrics.root_mean_squared_error`."""
    import tensorflow as tf

    return _error_metric(
        "root_mean_squared_error",
        lambda l, p: tf.math.squared_difference(l, p),
        labels,
        predictions,
        weights,
        result=lambda total, count: tf.sqrt(_div(total, count)),
    )


def mean_per_class_accuracy(
    labels: Any,
    predictions: Any,
    num_classes: int,
    weights: Any = None,
    metrics_collections: Any = None,
    updates_collections: Any = None,
    name: str | None = None,
) -> MetricOp:
    """`tf.compat.v1.metrics.mean_per_class_accuracy` (classes never seen count as 0)."""
    import tensorflow as tf

    def inc() -> dict[str, Any]:
        lab = tf.reshape(tf.convert_to_tensor(labels), [-1])
        pred = tf.reshape(tf.convert_to_tensor(predictions), [-1])
        if lab.dtype != pred.dtype:
            pred = tf.cast(pred, lab.dtype)
        ones = tf.ones_like(lab, tf.float32)
        correct = tf.cast(tf.equal(pred, lab), tf.float32)
        if weights is not None:
            w = tf.reshape(_float(weights) * tf.ones_like(_float(labels)), [-1])
            ones, correct = ones * w, correct * w
        ids = tf.cast(lab, tf.int32)
        return {
            "total": tf.math.unsorted_segment_sum(ones, ids, num_classes),
            "count": tf.math.unsorted_segment_sum(correct, ids, num_classes),
        }

    def result(total: Any, count: Any) -> Any:
        return tf.reduce_mean(tf.math.divide_no_nan(count, tf.maximum(total, 0)))

    return _metric(
        "mean_per_class_accuracy", {"total": [num_classes], "count": [num_classes]}, result, inc
    )


def _confusion(
    kind: str,
    labels: Any,
    predictions: Any,
    weights: Any,
    cells: tuple[str, ...],
    result: Callable[..., Any],
) -> MetricOp:
    import tensorflow as tf

    def inc() -> dict[str, Any]:
        lab, pred = _squeeze(labels, predictions)
        lab, pred = tf.cast(lab, tf.bool), tf.cast(pred, tf.bool)
        masks = {
            "tp": tf.logical_and(lab, pred),
            "fp": tf.logical_and(tf.logical_not(lab), pred),
            "fn": tf.logical_and(lab, tf.logical_not(pred)),
            "tn": tf.logical_and(tf.logical_not(lab), tf.logical_not(pred)),
        }
        return {c: _weighted(masks[c], weights)[0] for c in cells}

    return _metric(kind, {c: [] for c in cells}, result, inc, depth=3)


def precision(
    labels: Any,
    predictions: Any,
    weights: Any = None,
    metrics_collections: Any = None,
    updates_collections: Any = None,
    name: str | None = None,
) -> MetricOp:
    """`tf.compat.v1.metrics.precision`: tp / (tp + fp), 0 when there are none."""
    return _confusion(
        "precision", labels, predictions, weights, ("tp", "fp"), lambda tp, fp: _div(tp, tp + fp)
    )


def recall(
    labels: Any,
    predictions: Any,
    weights: Any = None,
    metrics_collections: Any = None,
    updates_collections: Any = None,
    name: str | None = None,
) -> MetricOp:
    """`tf.compat.v1.metrics.recall`: tp / (tp + fn), 0 when there are none."""
    return _confusion(
        "recall", labels, predictions, weights, ("tp", "fn"), lambda tp, fn: _div(tp, tp + fn)
    )


def _count(cell: str) -> Callable[..., MetricOp]:
    def metric(
        labels: Any,
        predictions: Any,
        weights: Any = None,
        metrics_collections: Any = None,
        updates_collections: Any = None,
        name: str | None = None,
    ) -> MetricOp:
        return _confusion(cell, labels, predictions, weights, (cell,), lambda **kw: kw[cell])

    return metric


true_positives = _count("tp")
false_positives = _count("fp")
false_negatives = _count("fn")
true_negatives = _count("tn")
