"""TensorFlow 2.15's premade estimators (`tf.estimator.DNNClassifier` & co., the V2 classes) as
facade Estimators: the same network, head, default optimizer, predictions and metrics.

Each class takes TF 2.15's constructor arguments and builds the model_fn TF 2.15 builds
(`canned/dnn.py`, `canned/linear.py`, `head/*_head.py` of tensorflow_estimator 2.15):

- DNN: `DenseFeatures(feature_columns)`, then per hidden layer a `Dense(units,
  activation_fn)` with a glorot-uniform kernel and a zero bias, `Dropout(dropout)` in
  training, `BatchNormalization(momentum=0.999)` (synchronized across replicas, so N replicas
  see the statistics of the global batch one device saw; under XLA over local replicas,
  each replica's own, see `layers.batch_normalization`), then a linear `Dense` logits layer.
  Default optimizer `'Adagrad'`: Keras' legacy Adagrad with *its* default learning rate
  (0.001); a name gets the class default (TF 2.15's `get_optimizer_instance_v2`).
- Linear: `sum_c x_c @ W_c + b` with zero-initialized weights and bias, computed as
  `DenseFeatures` (the columns sorted by name, as LinearModel sorts them) times one zero
  kernel: the same function and, with an element-wise optimizer, the same updates. Default
  optimizer `'Ftrl'` with learning rate 0.2 (a name gets 0.2; `optimizer=None` gets
  `min(0.2, 1 / sqrt(len(feature_columns)))`, as in TF 2.15).
- Heads: binary (sigmoid cross entropy), multi-class (sparse softmax cross entropy),
  regression (squared error); weighted by `weight_column`, reduced with `loss_reduction`
  (`SUM_OVER_BATCH_SIZE`: the sum over the global batch divided by its size, exactly as one
  device computed it; or `SUM`); the same prediction keys and the same evaluation metrics,
  computed with the same Keras metric classes TF 2.15's V2 heads use.

Only numeric feature columns are supported (anything else raises at construction; a DNN also
takes indicator and embedding columns of categorical columns, which its `DenseFeatures`
layer reads as TF 2.15's does), and no `label_vocabulary` (string labels cannot reach a TPU); an optimizer is a name or a
`tf.keras.optimizers.legacy` instance (rebuilt from its config inside the strategy's scope).
The string predictions (`classes`, `all_classes`) are made on the host from `class_ids`;
`export_saved_model` serves the numeric predictions dict.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from est2tpu.runtime.tf2._core import (
    LossRecord,
    ModeKeys,
    TrainOpRecord,
    current,
    facade_owned,
    stored,
)
from est2tpu.runtime.tf2._estimator import Estimator
from est2tpu.runtime.tf2._keras import keras
from est2tpu.runtime.tf2.metrics import MetricOp
from est2tpu.runtime.tf2.model_fn import EstimatorSpec
from est2tpu.runtime.tf2.run_config import RunConfig

SUM_OVER_BATCH_SIZE = "sum_over_batch_size"
SUM = "sum"
# TF 2.15's optimizer names (canned/optimizers.py) -> the Keras legacy class.
OPTIMIZER_NAMES = {
    "Adagrad": "Adagrad",
    "Adam": "Adam",
    "Ftrl": "Ftrl",
    "RMSProp": "RMSprop",
    "SGD": "SGD",
}
LINEAR_LEARNING_RATE = 0.2  # canned/linear.py _LEARNING_RATE


def _relu() -> Any:
    import tensorflow as tf

    return tf.nn.relu


def _numeric_columns(feature_columns: Any, what: str) -> tuple[Any, ...]:
    """The columns, checked: only numeric columns map exactly here."""
    from tensorflow.python.feature_column import feature_column_v2 as fc

    columns = tuple(feature_columns or ())
    if not columns:
        raise ValueError(f"{what}: feature_columns must not be empty")
    for column in columns:
        if not isinstance(column, fc.NumericColumn):
            raise NotImplementedError(
                f"est2tpu tf2 facade: {what} supports numeric feature columns only; got "
                f"{type(column).__name__} ({getattr(column, 'name', column)!r})"
            )
    return columns


def _dnn_columns(feature_columns: Any, what: str) -> tuple[Any, ...]:
    """The columns, checked: numeric ones, and dense columns over ids (TF 2.15's DNN feeds
    them through the same `DenseFeatures` layer), integer ids or ids looked up from
    strings (a vocabulary, hash buckets, a cross: on the host when the step is compiled,
    see `_host_columns`)."""
    from tensorflow.python.feature_column import feature_column_v2 as fc

    def exact(column: Any) -> bool:
        if isinstance(
            column,
            (
                fc.NumericColumn,
                fc.IdentityCategoricalColumn,
                fc.VocabularyListCategoricalColumn,
                fc.VocabularyFileCategoricalColumn,
                fc.HashedCategoricalColumn,
                fc.CrossedColumn,
            ),
        ):
            return True
        if isinstance(column, fc.BucketizedColumn):
            return exact(column.source_column)
        if isinstance(
            column, (fc.WeightedCategoricalColumn, fc.IndicatorColumn, fc.EmbeddingColumn)
        ):
            return exact(column.categorical_column)
        return False

    columns = tuple(feature_columns or ())
    if not columns:
        raise ValueError(f"{what}: feature_columns must not be empty")
    for column in columns:
        if not exact(column):
            raise NotImplementedError(
                f"est2tpu tf2 facade: {what} supports numeric columns and indicator or "
                "embedding columns of categorical columns only; got "
                f"{type(column).__name__} ({getattr(column, 'name', column)!r})"
            )
    return columns


def _check_reduction(loss_reduction: Any) -> str:
    value = str(loss_reduction)
    if value not in (SUM_OVER_BATCH_SIZE, SUM):
        raise NotImplementedError(
            "est2tpu tf2 facade: premade estimators support loss_reduction "
            f"SUM_OVER_BATCH_SIZE or SUM, got {loss_reduction!r}"
        )
    return value


class _Optimizer:
    """A Keras legacy optimizer kept by the facade (checkpointed as `optimizer/<name>`)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.checkpoint_name = "premade"


def _make_optimizer(spec: Any, learning_rate: float | None) -> Any:
    """TF 2.15's `get_optimizer_instance_v2(spec, learning_rate)`, built under the scope."""
    legacy = keras().optimizers.legacy
    if isinstance(spec, str):
        if spec not in OPTIMIZER_NAMES:
            raise ValueError(
                f"Unsupported optimizer name: {spec}. Supported names are: "
                f"{tuple(sorted(OPTIMIZER_NAMES))}"
            )
        cls = getattr(legacy, OPTIMIZER_NAMES[spec])
        return cls(learning_rate=learning_rate) if learning_rate else cls()
    if callable(spec) and not isinstance(spec, legacy.Optimizer):
        spec = spec()
    if not isinstance(spec, legacy.Optimizer):
        raise NotImplementedError(
            "est2tpu tf2 facade: a premade estimator's optimizer must be a name "
            f"{tuple(sorted(OPTIMIZER_NAMES))} or a tf.keras.optimizers.legacy optimizer; "
            f"got {type(spec).__name__}"
        )
    # Built again inside the strategy's scope (its variables must be distributed), from
    # the same class and hyperparameters, with fresh state as in a new Estimator.
    return type(spec).from_config(spec.get_config())


class _KerasMetric:
    """A Keras metric object behind an eval_metric_ops entry (see `_estimator._replica_eval`)."""

    def __init__(self, metric: Any, result_fn: Callable[[], Any] | None = None) -> None:
        self.metric = metric
        self._result_fn = result_fn

    def result(self) -> Any:
        return self._result_fn() if self._result_fn is not None else self.metric.result()

    def reset(self) -> None:
        if self._result_fn is None:
            self.metric.reset_state()


class _Head:
    """TF 2.15's BinaryClassHead / MultiClassHead / RegressionHead (V2), without a name."""

    def __init__(
        self,
        kind: str,
        n: int,
        weight_column: Any,
        label_vocabulary: Any,
        loss_reduction: Any,
    ) -> None:
        self.kind = kind  # "binary" | "multi" | "regression"
        self.n = n  # n_classes, or label_dimension
        if label_vocabulary is not None:
            raise NotImplementedError(
                "est2tpu tf2 facade: label_vocabulary is not supported (string labels cannot "
                "reach a TPU or an XLA-compiled step); map the labels to class ids in the "
                "input_fn"
            )
        self.reduction = _check_reduction(loss_reduction)
        if isinstance(weight_column, str):
            import tensorflow as tf

            weight_column = tf.feature_column.numeric_column(key=weight_column, shape=(1,))
        if weight_column is not None:
            _numeric_columns([weight_column], "weight_column")
        self.weight_column = weight_column

    @property
    def logits_dimension(self) -> int:
        return 1 if self.kind == "binary" else self.n

    # -- labels and weights -------------------------------------------------------------

    def _labels(self, labels: Any, logits: Any) -> Any:
        """base_head.check_dense_labels_match_logits_and_reshape, then the head's own steps."""
        import tensorflow as tf

        if labels is None:
            raise ValueError("You must provide a labels Tensor. Given: None.")
        labels = tf.convert_to_tensor(labels)
        if isinstance(labels, tf.SparseTensor):
            raise TypeError("SparseTensor labels are not supported.")
        if labels.shape.rank is not None and labels.shape.rank == logits.shape.rank - 1:
            labels = tf.expand_dims(labels, -1)
        expected = self.n if self.kind == "regression" else 1
        if labels.shape.rank is not None and labels.shape[-1] not in (None, expected):
            raise ValueError(
                f"Mismatched label shape. Expected labels dimension={expected}.  "
                f"Received {labels.shape[-1]}."
            )
        tf.debugging.assert_equal(
            tf.concat([tf.shape(logits)[:-1], [expected]], axis=0),
            tf.shape(labels),
            message=f"labels shape must be [D0, D1, ... DN, {expected}]",
        )
        if self.kind == "regression":
            return tf.cast(labels, tf.float32)
        if self.kind == "multi" and not labels.dtype.is_integer:
            raise ValueError(f"Labels dtype should be integer. Instead got {labels.dtype}.")
        n_classes = 2 if self.kind == "binary" else self.n
        checks = [
            tf.debugging.assert_less_equal(
                labels, tf.cast(n_classes - 1, labels.dtype), message="Labels must <= n_classes - 1"
            ),
            tf.debugging.assert_non_negative(labels, message="Labels must >= 0"),
        ]
        with tf.control_dependencies(checks):
            labels = tf.identity(labels)
        return tf.cast(labels, tf.float32) if self.kind == "binary" else labels

    def _weights(self, features: Any, logits: Any) -> Any:
        """base_head.get_weights_and_check_match_logits."""
        import tensorflow as tf

        if self.weight_column is None:
            return 1.0
        cache = tf.__internal__.feature_column.FeatureTransformationCache(features)
        weights = self.weight_column.get_dense_tensor(cache, None)
        if not (weights.dtype.is_floating or weights.dtype.is_integer):
            raise ValueError(
                f"Weight column should be castable to float. Given dtype: {weights.dtype}"
            )
        weights = tf.cast(weights, tf.float32)
        if weights.shape.rank is not None and weights.shape.rank == logits.shape.rank - 1:
            weights = tf.expand_dims(weights, -1)
        return weights

    def _unweighted_loss(self, labels: Any, logits: Any) -> Any:
        import tensorflow as tf

        if self.kind == "binary":
            return tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)
        if self.kind == "multi":
            loss = tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=tf.reshape(labels, [-1]), logits=logits
            )
            return tf.expand_dims(loss, -1)
        return tf.math.squared_difference(logits, labels)

    # -- the head's outputs -------------------------------------------------------------

    def loss(self, labels: Any, logits: Any, features: Any) -> Any:
        """Keras' compute_weighted_loss(unweighted, weights, reduction), recorded so the
        facade scales each replica's share to the global batch."""
        import tensorflow as tf

        labels = self._labels(labels, logits)
        weighted = self._unweighted_loss(labels, logits) * self._weights(features, logits)
        total = tf.reduce_sum(weighted)
        if self.reduction == SUM:
            loss, denominator = total, None
        else:
            denominator = tf.cast(tf.size(weighted), tf.float32)
            loss = tf.math.divide_no_nan(total, denominator)
        current("a premade head").losses.append(LossRecord(loss, denominator))
        return loss

    def predictions(self, logits: Any) -> dict[str, Any]:
        import tensorflow as tf

        if self.kind == "regression":
            return {"predictions": logits}
        out: dict[str, Any] = {"logits": logits}
        n_classes = 2 if self.kind == "binary" else self.n
        if self.kind == "binary":
            out["logistic"] = tf.math.sigmoid(logits)
            two_class = tf.concat((tf.zeros_like(logits), logits), axis=-1)
        else:
            two_class = logits
        out["probabilities"] = tf.nn.softmax(two_class)
        out["class_ids"] = tf.expand_dims(tf.math.argmax(two_class, axis=-1), axis=-1)
        batch = tf.shape(logits)[0]
        out["all_class_ids"] = tf.tile(tf.expand_dims(tf.range(n_classes), 0), [batch, 1])
        return out

    def host_predictions(self, batch: dict[str, Any]) -> dict[str, Any]:
        """Add the string predictions to a batch of numeric ones, on the host.

        TF 2.15's `classes` (`tf.strings.as_string(class_ids)`) and `all_classes` are string
        tensors, which neither a TPU nor an XLA-compiled step can hold, nor a multi-replica
        gather carry: they are made here from `class_ids` with the same values (bytes).
        """
        import numpy as np

        if self.kind == "regression":
            return batch
        n_classes = 2 if self.kind == "binary" else self.n
        out = dict(batch)
        ids = np.asarray(batch["class_ids"])
        out["classes"] = np.vectorize(lambda i: str(i).encode(), otypes=[object])(ids)
        names = np.array([str(i).encode() for i in range(n_classes)], dtype=object)
        out["all_classes"] = np.tile(names[None, :], [ids.shape[0], 1])
        return out

    def _metric_keys(self) -> tuple[str, ...]:
        if self.kind == "multi":
            return ("average_loss", "accuracy")
        if self.kind == "regression":
            return ("average_loss", "prediction/mean", "label/mean")
        return (
            "average_loss",
            "accuracy",
            "precision",
            "recall",
            "prediction/mean",
            "label/mean",
            "auc",
            "auc_precision_recall",
        )

    @staticmethod
    def _new_metric(key: str) -> Any:
        """The Keras metric TF 2.15's V2 head uses for `key`."""
        k = keras().metrics
        if key == "accuracy":
            return k.Accuracy(name=key)
        if key == "precision":
            return k.Precision(name=key)
        if key == "recall":
            return k.Recall(name=key)
        if key == "auc":
            return k.AUC(name=key)
        if key == "auc_precision_recall":
            return k.AUC(curve="PR", name=key)
        return k.Mean(name=key)

    def _keras_metric(self, key: str) -> _KerasMetric:
        return _KerasMetric(self._new_metric(key))

    def eval_metric_ops(self, labels: Any, logits: Any, features: Any) -> dict[str, MetricOp]:
        """The head's metrics (TF 2.15's `update_metrics`), created once and updated here."""
        import tensorflow as tf

        inv = current("a premade head")
        metrics: dict[str, _KerasMetric] = {
            key: stored(
                "metric",
                functools.partial(self._keras_metric, key),
                ("premade", key),
                inv.state.metrics,
            )
            for key in self._metric_keys()
        }
        if self.kind == "binary":
            # TF 2.15 derives it from label/mean's sums: max(positives, negatives) / count.
            label_mean = metrics["label/mean"].metric

            def baseline() -> Any:
                total, count = label_mean.total, label_mean.count
                return tf.math.divide_no_nan(tf.maximum(total, count - total), count)

            metrics["accuracy_baseline"] = stored(
                "metric",
                lambda: _KerasMetric(None, baseline),
                ("premade", "accuracy_baseline"),
                inv.state.metrics,
            )
        if inv.building:
            update: Any = tf.no_op()
        else:
            update = self._update(metrics, labels, logits, features)
        ops: dict[str, MetricOp] = {}
        for key, adapter in metrics.items():
            # The value is read after the evaluation, through `.metric` (the facade's way).
            op = MetricOp((update, update))
            op.metric = adapter  # type: ignore[assignment]
            ops[key] = op
        return ops

    def _update(
        self, metrics: dict[str, _KerasMetric], labels: Any, logits: Any, features: Any
    ) -> Any:
        import tensorflow as tf

        def broadcast(weights: Any, values: Any) -> Any:
            if isinstance(weights, float):
                return None
            return tf.__internal__.ops.broadcast_weights(weights, values)

        label_ids = self._labels(labels, logits)
        weights = self._weights(features, logits)
        unweighted = self._unweighted_loss(label_ids, logits)
        sample_weight = None if isinstance(weights, float) else weights
        m = {key: adapter.metric for key, adapter in metrics.items() if adapter.metric is not None}
        ops = [m["average_loss"].update_state(unweighted, sample_weight=sample_weight)]
        preds = self.predictions(logits)
        if self.kind == "regression":
            values = tf.cast(preds["predictions"], tf.float32)
            ops.append(m["label/mean"].update_state(label_ids, sample_weight=sample_weight))
            ops.append(m["prediction/mean"].update_state(values, broadcast(weights, values)))
            return tf.group(*ops)
        class_ids = preds["class_ids"]
        ops.append(m["accuracy"].update_state(label_ids, class_ids, sample_weight=sample_weight))
        if self.kind == "multi":
            return tf.group(*ops)
        logistic = tf.cast(preds["logistic"], tf.float32)
        ops.append(m["precision"].update_state(label_ids, class_ids, sample_weight=sample_weight))
        ops.append(m["recall"].update_state(label_ids, class_ids, sample_weight=sample_weight))
        ops.append(m["prediction/mean"].update_state(logistic, broadcast(weights, logistic)))
        ops.append(m["label/mean"].update_state(label_ids, broadcast(weights, label_ids)))
        ops.append(m["auc"].update_state(label_ids, logistic, broadcast(weights, logistic)))
        ops.append(
            m["auc_precision_recall"].update_state(
                label_ids, logistic, broadcast(weights, logistic)
            )
        )
        return tf.group(*ops)

    def spec(
        self,
        mode: str,
        features: Any,
        labels: Any,
        logits: Any,
        make_optimizer: Callable[[], Any],
    ) -> EstimatorSpec:
        """TF 2.15's `head.create_estimator_spec` for the facade."""
        import tensorflow as tf

        predictions = self.predictions(logits)
        if mode == ModeKeys.PREDICT:
            return EstimatorSpec(mode=mode, predictions=predictions)
        loss = self.loss(labels, logits, features)
        if mode == ModeKeys.EVAL:
            return EstimatorSpec(
                mode=mode,
                predictions=predictions,
                loss=loss,
                eval_metric_ops=self.eval_metric_ops(labels, logits, features),
            )
        inv = current("a premade head")
        optimizer: _Optimizer = stored(
            "optimizer", lambda: _Optimizer(make_optimizer()), ("premade",), inv.state.optimizers
        )
        if inv.building:
            # Iterations, hyperparameters and slots, created here under the strategy's
            # scope rather than lazily inside a replica; they are the optimizer's own, not
            # variables of the model_fn's (the variable store leaves them to it).
            with tf.init_scope(), facade_owned():
                optimizer.inner._create_all_weights(inv.state.trainable_variables())
        inv.train_ops.append(TrainOpRecord(optimizer, loss, None))
        return EstimatorSpec(mode=mode, predictions=predictions, loss=loss, train_op=tf.no_op())


def _layer(name: str, make: Callable[[], Any]) -> Any:
    """A Keras layer of the premade network, created once (in the build trace)."""
    inv = current("a premade estimator's layer")
    layer = stored("layer", make, ("premade", name), inv.state.layers)
    inv.used_layers.append(layer)

    def call(*args: Any, **kwargs: Any) -> Any:
        with facade_owned():  # its weights are the layer's, kept with it
            return layer(*args, **kwargs)

    return call


def _check_features(features: Any) -> None:
    if not isinstance(features, dict):
        raise TypeError(
            f"features should be a dictionary of `Tensor`s. Given type: {type(features)}"
        )


def _dnn_logits(
    features: Any,
    mode: str,
    units: int,
    hidden_units: Iterable[int],
    columns: tuple[Any, ...],
    activation_fn: Any,
    dropout: float | None,
    batch_norm: bool,
) -> Any:
    """canned/dnn.py `_DNNModelV2.call`."""
    k = keras()
    inv = current("a premade estimator")
    is_training = mode == ModeKeys.TRAIN and not inv.building
    net = _layer("input_layer", lambda: k.layers.DenseFeatures(list(columns), name="input_layer"))(
        features, training=is_training
    )
    for i, width in enumerate(hidden_units):

        def dense(width: int = width, i: int = i) -> Any:
            return k.layers.Dense(
                units=width,
                activation=activation_fn,
                kernel_initializer=k.initializers.GlorotUniform(),
                name=f"hiddenlayer_{i}",
            )

        net = _layer(f"hiddenlayer_{i}", dense)(net)
        if dropout is not None and mode == ModeKeys.TRAIN:
            net = _layer(f"dropout_{i}", lambda: k.layers.Dropout(rate=dropout))(
                net, training=is_training
            )
        if batch_norm:

            def batch_norm_layer(i: int = i) -> Any:
                return k.layers.BatchNormalization(
                    momentum=0.999,
                    trainable=True,
                    synchronized=not current("a layer").state.replica_programs,
                    name=f"batchnorm_{i}",
                )

            net = _layer(f"batchnorm_{i}", batch_norm_layer)(net, training=is_training)
    return _layer(
        "logits",
        lambda: k.layers.Dense(
            units=units,
            activation=None,
            kernel_initializer=k.initializers.GlorotUniform(),
            name="logits",
        ),
    )(net)


def _linear_logits(features: Any, units: int, columns: tuple[Any, ...]) -> Any:
    """canned/linear.py LinearModel on numeric columns: sum_c x_c W_c + b, all zeros at first."""
    k = keras()
    net = _layer(
        "linear_input", lambda: k.layers.DenseFeatures(list(columns), name="linear_input")
    )(features)
    return _layer(
        "linear_model",
        lambda: k.layers.Dense(
            units, kernel_initializer="zeros", bias_initializer="zeros", name="linear_model"
        ),
    )(net)


class _Premade(Estimator):
    def __init__(
        self,
        head: _Head,
        logits_fn: Callable[[Any, str, int], Any],
        make_optimizer: Callable[[], Any],
        model_dir: Any,
        config: RunConfig | None,
        warm_start_from: Any,
    ) -> None:
        def model_fn(features: Any, labels: Any, mode: str, config: Any) -> EstimatorSpec:
            _check_features(features)
            logits = logits_fn(features, mode, head.logits_dimension)
            return head.spec(mode, features, labels, logits, make_optimizer)

        super().__init__(
            model_fn, model_dir=model_dir, config=config, warm_start_from=warm_start_from
        )
        self._head = head

    def predict(
        self,
        input_fn: Callable[..., Any],
        predict_keys: Any = None,
        hooks: Any = None,
        checkpoint_path: str | None = None,
        yield_single_examples: bool = True,
    ) -> Iterator[Any]:
        """Estimator's predict, with the head's string predictions made on the host."""
        batches = super().predict(
            input_fn, hooks=hooks, checkpoint_path=checkpoint_path, yield_single_examples=False
        )
        for numeric in batches:
            batch = self._head.host_predictions(numeric)
            if predict_keys is not None:
                keys = [predict_keys] if isinstance(predict_keys, str) else list(predict_keys)
                batch = {k: batch[k] for k in keys}
            if not yield_single_examples:
                yield batch
                continue
            size = len(next(iter(batch.values())))
            for i in range(size):
                yield {k: v[i] for k, v in batch.items()}


def _classification_head(
    n_classes: int, weight_column: Any, label_vocabulary: Any, loss_reduction: Any
) -> _Head:
    """head_utils.binary_or_multi_class_head."""
    if n_classes is None or n_classes < 2:
        raise ValueError(f"n_classes must be > 1: {n_classes}")
    kind = "binary" if n_classes == 2 else "multi"
    return _Head(kind, n_classes, weight_column, label_vocabulary, loss_reduction)


class DNNClassifier(_Premade):
    """`tf.estimator.DNNClassifier` (TF 2.15, V2)."""

    def __init__(
        self,
        hidden_units: Iterable[int],
        feature_columns: Any,
        model_dir: Any = None,
        n_classes: int = 2,
        weight_column: Any = None,
        label_vocabulary: Any = None,
        optimizer: Any = "Adagrad",
        activation_fn: Any = None,
        dropout: float | None = None,
        config: RunConfig | None = None,
        warm_start_from: Any = None,
        loss_reduction: Any = SUM_OVER_BATCH_SIZE,
        batch_norm: bool = False,
    ) -> None:
        columns = _dnn_columns(feature_columns, "DNNClassifier")
        head = _classification_head(n_classes, weight_column, label_vocabulary, loss_reduction)
        activation = activation_fn or _relu()
        hidden = list(hidden_units)
        super().__init__(
            head,
            lambda f, mode, units: _dnn_logits(
                f, mode, units, hidden, columns, activation, dropout, batch_norm
            ),
            lambda: _make_optimizer(optimizer, None),
            model_dir,
            config,
            warm_start_from,
        )


class DNNRegressor(_Premade):
    """`tf.estimator.DNNRegressor` (TF 2.15, V2)."""

    def __init__(
        self,
        hidden_units: Iterable[int],
        feature_columns: Any,
        model_dir: Any = None,
        label_dimension: int = 1,
        weight_column: Any = None,
        optimizer: Any = "Adagrad",
        activation_fn: Any = None,
        dropout: float | None = None,
        config: RunConfig | None = None,
        warm_start_from: Any = None,
        loss_reduction: Any = SUM_OVER_BATCH_SIZE,
        batch_norm: bool = False,
    ) -> None:
        columns = _dnn_columns(feature_columns, "DNNRegressor")
        if label_dimension < 1:
            raise ValueError(f"Invalid label_dimension {label_dimension}.")
        head = _Head("regression", label_dimension, weight_column, None, loss_reduction)
        activation = activation_fn or _relu()
        hidden = list(hidden_units)
        super().__init__(
            head,
            lambda f, mode, units: _dnn_logits(
                f, mode, units, hidden, columns, activation, dropout, batch_norm
            ),
            lambda: _make_optimizer(optimizer, None),
            model_dir,
            config,
            warm_start_from,
        )


def _linear_optimizer(optimizer: Any, columns: tuple[Any, ...]) -> Any:
    """canned/linear.py: `get_optimizer_instance_v2(optimizer or default, 0.2)`."""
    if optimizer is None:
        rate = min(LINEAR_LEARNING_RATE, 1.0 / math.sqrt(len(columns)))
        return keras().optimizers.legacy.Ftrl(learning_rate=rate)
    return _make_optimizer(optimizer, LINEAR_LEARNING_RATE)


def _check_combiner(sparse_combiner: str) -> None:
    # With numeric columns only the combiner has nothing to combine; TF 2.15 took these three.
    if sparse_combiner not in ("sum", "mean", "sqrtn"):
        raise ValueError(f"Invalid sparse_combiner: {sparse_combiner}")


class LinearClassifier(_Premade):
    """`tf.estimator.LinearClassifier` (TF 2.15, V2), numeric columns."""

    def __init__(
        self,
        feature_columns: Any,
        model_dir: Any = None,
        n_classes: int = 2,
        weight_column: Any = None,
        label_vocabulary: Any = None,
        optimizer: Any = "Ftrl",
        config: RunConfig | None = None,
        warm_start_from: Any = None,
        loss_reduction: Any = SUM_OVER_BATCH_SIZE,
        sparse_combiner: str = "sum",
    ) -> None:
        columns = _numeric_columns(feature_columns, "LinearClassifier")
        _check_combiner(sparse_combiner)
        head = _classification_head(n_classes, weight_column, label_vocabulary, loss_reduction)
        super().__init__(
            head,
            lambda f, mode, units: _linear_logits(f, units, columns),
            lambda: _linear_optimizer(optimizer, columns),
            model_dir,
            config,
            warm_start_from,
        )


class LinearRegressor(_Premade):
    """`tf.estimator.LinearRegressor` (TF 2.15, V2), numeric columns."""

    def __init__(
        self,
        feature_columns: Any,
        model_dir: Any = None,
        label_dimension: int = 1,
        weight_column: Any = None,
        optimizer: Any = "Ftrl",
        config: RunConfig | None = None,
        warm_start_from: Any = None,
        loss_reduction: Any = SUM_OVER_BATCH_SIZE,
        sparse_combiner: str = "sum",
    ) -> None:
        columns = _numeric_columns(feature_columns, "LinearRegressor")
        _check_combiner(sparse_combiner)
        if label_dimension < 1:
            raise ValueError(f"Invalid label_dimension {label_dimension}.")
        head = _Head("regression", label_dimension, weight_column, None, loss_reduction)
        super().__init__(
            head,
            lambda f, mode, units: _linear_logits(f, units, columns),
            lambda: _linear_optimizer(optimizer, columns),
            model_dir,
            config,
            warm_start_from,
        )
