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
    key: Any = inv.site_key(depth)
    if inv.mode == "train":
        # TF1's train and eval graphs had their own metric variables.
        key = ("train", *key)
    metric: Metric = stored(
        "metric",
        lambda: Metric(f"{kind}_{len(inv.state.metrics)}", shapes, result_fn),
        key,
        inv.state.metrics,
    )
    value = metric.result()
    # TF1's update_op is a Tensor: the metric's value after this batch's update (so that
    # `tf.compat.v1.summary.scalar(name, update_op)` works).
    if inv.building:
        update = tf.identity(value)
    elif inv.mode == "train":
        # In TF1 a training step ran a metric's update op only when something fetched it:
        # the summary of it, every save_summary_steps steps (the facade records summaries
        # exactly then). Other train steps leave the metric as it is.
        def record() -> Any:
            with tf.control_dependencies([metric.update(**increments())]):
                return metric.result()

        update = tf.cond(tf.summary.should_record_summaries(), record, lambda: value)
    else:
        with tf.control_dependencies([metric.update(**increments())]):
            update = metric.result()
    op = MetricOp((value, update))
    op.metric = metric
    inv.metric_by_op[id(update)] = metric
    inv.metric_value_by_op[id(update)] = value
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


def auc(
    labels: Any,
    predictions: Any,
    weights: Any = None,
    num_thresholds: int = 200,
    metrics_collections: Any = None,
    updates_collections: Any = None,
    curve: str = "ROC",
    name: str | None = None,
    summation_method: str = "trapezoidal",
    thresholds: Any = None,
) -> MetricOp:
    """`tf.compat.v1.metrics.auc`: TF1's confusion counts at the same thresholds (200 by
    default, plus -1e-7 and 1 + 1e-7), summed across replicas, and TF1's formula for each
    curve and summation method."""
    import tensorflow as tf

    if curve not in ("ROC", "PR"):
        raise ValueError(f"Curve must be either ROC or PR. Curve {curve} is unknown.")
    if summation_method not in ("trapezoidal", "careful_interpolation", "minoring", "majoring"):
        raise ValueError(f"Invalid summation_method: {summation_method}")
    kepsilon = 1e-7
    if thresholds is not None:
        cuts = sorted(thresholds)
        num_thresholds = len(cuts) + 2
    else:
        cuts = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
    cuts = [0.0 - kepsilon, *cuts, 1.0 + kepsilon]
    n = num_thresholds

    def inc() -> dict[str, Any]:
        pred = tf.cast(tf.convert_to_tensor(predictions), tf.float32)
        checks = [
            tf.debugging.assert_greater_equal(pred, 0.0, message="predictions must be in [0, 1]"),
            tf.debugging.assert_less_equal(pred, 1.0, message="predictions must be in [0, 1]"),
        ]
        with tf.control_dependencies(checks):
            pred = tf.identity(pred)
        lab, pred = _squeeze(tf.cast(tf.convert_to_tensor(labels), tf.bool), pred)
        pred_row = tf.reshape(pred, [1, -1])
        lab_row = tf.reshape(lab, [1, -1])
        pos = tf.greater(pred_row, tf.constant(cuts, tf.float32)[:, None])  # [n, batch]
        lab_pos = tf.broadcast_to(lab_row, tf.shape(pos))
        if weights is None:
            w = tf.ones_like(pred_row)
        else:
            w = tf.reshape(_float(weights) * tf.ones_like(pred), [1, -1])

        def count(mask: Any) -> Any:
            return tf.reduce_sum(tf.cast(mask, tf.float32) * w, axis=1)

        return {
            "tp": count(tf.logical_and(lab_pos, pos)),
            "fn": count(tf.logical_and(lab_pos, tf.logical_not(pos))),
            "tn": count(tf.logical_and(tf.logical_not(lab_pos), tf.logical_not(pos))),
            "fp": count(tf.logical_and(tf.logical_not(lab_pos), pos)),
        }

    def result(tp: Any, fn: Any, tn: Any, fp: Any) -> Any:
        epsilon = 1.0e-6
        if curve == "PR" and summation_method == "careful_interpolation":
            dtp = tp[: n - 1] - tp[1:]
            p = tp + fp
            slope = tf.math.divide_no_nan(dtp, tf.maximum(p[: n - 1] - p[1:], 0))
            intercept = tp[1:] - slope * p[1:]
            ratio = tf.where(
                tf.logical_and(p[: n - 1] > 0, p[1:] > 0),
                tf.math.divide_no_nan(p[: n - 1], tf.maximum(p[1:], 0)),
                tf.ones_like(p[1:]),
            )
            return tf.reduce_sum(
                tf.math.divide_no_nan(
                    slope * (dtp + intercept * tf.math.log(ratio)),
                    tf.maximum(tp[1:] + fn[1:], 0),
                )
            )
        rec = tf.math.divide(tp + epsilon, tp + fn + epsilon)
        if curve == "ROC":
            x, y = tf.math.divide(fp, fp + tn + epsilon), rec
        else:
            x, y = rec, tf.math.divide(tp + epsilon, tp + fp + epsilon)
        dx = x[: n - 1] - x[1:]
        if summation_method in ("trapezoidal", "careful_interpolation"):
            return tf.reduce_sum(dx * ((y[: n - 1] + y[1:]) / 2.0))
        if summation_method == "minoring":
            return tf.reduce_sum(dx * tf.minimum(y[: n - 1], y[1:]))
        return tf.reduce_sum(dx * tf.maximum(y[: n - 1], y[1:]))

    shapes = {c: [n] for c in ("tp", "fn", "tn", "fp")}
    return _metric("auc", shapes, result, inc)
