"""Premade estimators as TPUEstimators: `DNNClassifier(...)` and friends, built from
TensorFlow 2.15's own canned model function and head.

Each function takes exactly the arguments of its ``tf.estimator`` class (TF 2.15's V2 class
builds the head and the model function, and validates the arguments, as it always does)
plus TPUEstimator's batch sizes, and returns a ``tf.compat.v1.estimator.tpu.TPUEstimator``
whose model function is that canned one. The one change: the canned head answers
``create_estimator_spec`` with its ``_create_tpu_estimator_spec`` (the spec the canned
code itself builds first and converts). TPUEstimator converts it back on CPU, so with
``use_tpu=False`` the variables, initial values, loss, metrics and predictions are the
canned estimator's own, bit for bit. On a TPU the gradients are averaged across cores
before the optimizer applies them (the canned Keras optimizers do not do it themselves).

Feature columns that TPU cannot take (strings, sparse categorical and embedding columns)
are refused on a TPU with the fix; on CPU they run as before.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

__all__ = [
    "DNNClassifier",
    "DNNLinearCombinedClassifier",
    "DNNLinearCombinedRegressor",
    "DNNRegressor",
    "LinearClassifier",
    "LinearRegressor",
]

# Dense on the host and on the TPU: these columns produce dense float tensors from dense
# numeric inputs. Anything else (vocabulary, hash, identity, crossed, embedding, sequence)
# reads string or sparse tensors, which a TPU cannot take.
_TPU_COLUMNS = ("NumericColumn", "BucketizedColumn")


def _canned(name: str) -> Any:
    from tensorflow_estimator.python.estimator.canned import dnn, dnn_linear_combined, linear

    return {
        "DNNClassifier": dnn.DNNClassifierV2,
        "DNNRegressor": dnn.DNNRegressorV2,
        "LinearClassifier": linear.LinearClassifierV2,
        "LinearRegressor": linear.LinearRegressorV2,
        "DNNLinearCombinedClassifier": dnn_linear_combined.DNNLinearCombinedClassifierV2,
        "DNNLinearCombinedRegressor": dnn_linear_combined.DNNLinearCombinedRegressorV2,
    }[name]


def _head_of(model_fn: Any) -> Any:
    """The head the canned ``_model_fn`` closes over (one per estimator)."""
    from tensorflow_estimator.python.estimator.head import base_head

    heads = [
        cell.cell_contents
        for cell in model_fn.__closure__ or ()
        if isinstance(cell.cell_contents, base_head.Head)
    ]
    if len(heads) != 1:
        raise TypeError("est2tpu.runtime.premade: cannot find the canned estimator's head")
    return heads[0]


def _cross_shard_gradients(optimizer: Any) -> Any:
    """A canned Keras optimizer that averages gradients across TPU cores before applying
    them, as ``CrossShardOptimizer`` does for TF1 optimizers."""
    import tensorflow as tf
    from tensorflow.python.tpu import tpu_function

    get_gradients = optimizer.get_gradients

    def averaged(loss: Any, params: Any) -> Any:
        grads = get_gradients(loss, params)
        shards = tpu_function.get_tpu_context().number_of_shards or 1
        return [
            None if g is None else tf.compat.v1.tpu.cross_replica_sum(g) / shards for g in grads
        ]

    optimizer.get_gradients = averaged
    return optimizer


def _tpu_spec(head: Any, on_tpu: bool, **kwargs: Any) -> Any:
    if on_tpu and kwargs.get("optimizer") is not None:
        kwargs["optimizer"] = _cross_shard_gradients(kwargs["optimizer"])
    return head._create_tpu_estimator_spec(**kwargs)


def _check_columns(name: str, columns: Any) -> None:
    for column in columns or ():
        kind = type(column).__name__
        if kind not in _TPU_COLUMNS:
            raise ValueError(
                f"{name} on TPU: feature column {getattr(column, 'name', column)!r} ({kind}) "
                "reads string or sparse features, which a TPU cannot take; turn them into "
                "dense numeric features in the input function (a lookup to ids and a "
                "numeric_column), or train this estimator off TPU"
            )


def _premade(
    name: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    train_batch_size: int | None,
    eval_batch_size: int | None,
    predict_batch_size: int | None,
) -> Any:
    import tensorflow as tf

    from est2tpu.runtime._tpu import ensure_tpu_run_config, use_tpu

    cls = _canned(name)
    canned = cls(*args, **kwargs)
    on_tpu = use_tpu()
    if on_tpu:
        bound = inspect.signature(cls.__init__).bind(None, *args, **kwargs).arguments
        for key in ("feature_columns", "linear_feature_columns", "dnn_feature_columns"):
            _check_columns(name, bound.get(key))
    canned_model_fn = canned._model_fn
    head = _head_of(canned_model_fn)
    # Shadows the method on this one head object: the canned model function asks it for an
    # EstimatorSpec and gets the TPU spec that the method would have converted.
    head.create_estimator_spec = functools.partial(_tpu_spec, head, on_tpu)

    # TPUEstimator requires a `params` argument (it passes the batch size in it); the canned
    # model function reads the batch size from the features.
    def model_fn(features: Any, labels: Any, mode: Any, config: Any, params: Any) -> Any:
        del params
        return canned_model_fn(features, labels, mode, config)

    return tf.compat.v1.estimator.tpu.TPUEstimator(
        model_fn=model_fn,
        config=ensure_tpu_run_config(canned.config),
        use_tpu=on_tpu,
        train_batch_size=train_batch_size,
        eval_batch_size=eval_batch_size,
        predict_batch_size=predict_batch_size,
        warm_start_from=canned._warm_start_settings,
        # The canned estimator exports a CPU serving graph; so does this one.
        export_to_tpu=False,
    )


def _make(name: str) -> Any:
    def build(
        *args: Any,
        train_batch_size: int | None = None,
        eval_batch_size: int | None = None,
        predict_batch_size: int | None = None,
        **kwargs: Any,
    ) -> Any:
        return _premade(name, args, kwargs, train_batch_size, eval_batch_size, predict_batch_size)

    build.__name__ = build.__qualname__ = name
    build.__doc__ = (
        f"``tf.estimator.{name}(...)`` as a ``TPUEstimator``: the same arguments, plus "
        "TPUEstimator's ``train_batch_size``/``eval_batch_size``/``predict_batch_size``."
    )
    return build


DNNClassifier = _make("DNNClassifier")
DNNRegressor = _make("DNNRegressor")
LinearClassifier = _make("LinearClassifier")
LinearRegressor = _make("LinearRegressor")
DNNLinearCombinedClassifier = _make("DNNLinearCombinedClassifier")
DNNLinearCombinedRegressor = _make("DNNLinearCombinedRegressor")
