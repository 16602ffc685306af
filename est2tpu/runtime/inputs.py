"""Params-aware ``numpy_input_fn`` / ``pandas_input_fn`` for TPUEstimator.

``tf.compat.v1.estimator.inputs.numpy_input_fn(x, y, batch_size=...)`` bakes
the batch size into the input function; TPUEstimator instead passes it in
``params["batch_size"]`` (the global batch size divided per host).  The
functions here take every argument of the originals except ``batch_size`` and
return ``input_fn(params)``:

- off TPU (``params["use_tpu"]`` false, the CPU/GPU case), ``input_fn`` calls
  the original TensorFlow function with ``batch_size=params["batch_size"]`` and
  returns what it returns, so the semantics and the data order (shuffling,
  epochs, the final partial batch, ``OutOfRange`` at the end) are exactly the
  original's;
- on TPU, where the input must be a ``tf.data.Dataset`` with static shapes,
  ``input_fn`` returns a dataset with the same content and the same epochs:
  ``from_tensor_slices``, shuffled per epoch with a buffer of
  ``max(queue_capacity, len(x))`` elements when ``shuffle`` is true (a
  different order from the queue-based original, which TPU cannot run), and
  batched with ``drop_remainder=True`` (a final partial batch is dropped).

Without ``params["batch_size"]`` (a TPUEstimator built without that batch
size) the batch size is the originals' default, 128.
"""

from __future__ import annotations

from typing import Any

__all__ = ["numpy_input_fn", "pandas_input_fn"]

_DEFAULT_BATCH_SIZE = 128


def _check_shuffle(shuffle: Any) -> None:
    if not isinstance(shuffle, bool):
        raise ValueError(  # noqa: TRY004 - the original raises ValueError
            "shuffle must be provided and explicitly set as boolean (it is "
            f"recommended to set it as True for training); got {shuffle}"
        )


def _batch_size(params: Any) -> int:
    value = (params or {}).get("batch_size")
    return _DEFAULT_BATCH_SIZE if value is None else int(value)


def _on_tpu(params: Any) -> bool:
    return bool((params or {}).get("use_tpu", False))


def _dataset(
    features: Any,
    labels: Any,
    batch_size: int,
    num_epochs: int | None,
    shuffle: bool,
    queue_capacity: int,
    num_rows: int,
) -> Any:
    import tensorflow as tf

    items = features if labels is None else (features, labels)
    dataset = tf.data.Dataset.from_tensor_slices(items)
    if shuffle:
        dataset = dataset.shuffle(max(queue_capacity, num_rows), reshuffle_each_iteration=True)
    dataset = dataset.repeat(num_epochs)
    return dataset.batch(batch_size, drop_remainder=True)


def _num_rows(structure: Any) -> int:
    import numpy as np

    if isinstance(structure, dict):
        lengths = {len(value) for value in structure.values()}
        if len(lengths) != 1:
            raise ValueError(f"features have different lengths: {sorted(lengths)}")
        return lengths.pop()
    return len(np.asarray(structure))


def numpy_input_fn(
    x: Any,
    y: Any = None,
    num_epochs: int | None = 1,
    shuffle: bool | None = None,
    queue_capacity: int = 1000,
    num_threads: int = 1,
) -> Any:
    """``tf.compat.v1.estimator.inputs.numpy_input_fn`` with the batch size from ``params``.

    Returns ``input_fn(params)``; see the module docstring.  ``x`` is a numpy
    array or a dict of them, ``y`` an array, a dict of arrays or ``None``.
    """
    _check_shuffle(shuffle)

    def input_fn(params: Any = None) -> Any:
        import tensorflow as tf

        batch_size = _batch_size(params)
        if not _on_tpu(params):
            original = tf.compat.v1.estimator.inputs.numpy_input_fn(
                x=x,
                y=y,
                batch_size=batch_size,
                num_epochs=num_epochs,
                shuffle=shuffle,
                queue_capacity=queue_capacity,
                num_threads=num_threads,
            )
            return original()
        features = dict(x) if isinstance(x, dict) else x
        labels = dict(y) if isinstance(y, dict) else y
        return _dataset(
            features,
            labels,
            batch_size,
            num_epochs,
            bool(shuffle),
            queue_capacity,
            _num_rows(features),
        )

    return input_fn


def pandas_input_fn(
    x: Any,
    y: Any = None,
    num_epochs: int | None = 1,
    shuffle: bool | None = None,
    queue_capacity: int = 1000,
    num_threads: int = 1,
    target_column: str = "target",
) -> Any:
    """``tf.compat.v1.estimator.inputs.pandas_input_fn`` with the batch size from ``params``.

    Returns ``input_fn(params)``; see the module docstring.  ``x`` is a
    DataFrame, ``y`` a Series, a DataFrame or ``None``; ``target_column`` as in
    the original (the name ``y`` is stored under while batching).
    """
    _check_shuffle(shuffle)

    def input_fn(params: Any = None) -> Any:
        import tensorflow as tf

        batch_size = _batch_size(params)
        if not _on_tpu(params):
            original = tf.compat.v1.estimator.inputs.pandas_input_fn(
                x=x,
                y=y,
                batch_size=batch_size,
                num_epochs=num_epochs,
                shuffle=shuffle,
                queue_capacity=queue_capacity,
                num_threads=num_threads,
                target_column=target_column,
            )
            return original()
        if y is not None and target_column in x.columns:
            raise ValueError(
                f"Cannot use name {target_column} for target column: DataFrame already "
                f"has a column with that name: {list(x.columns)}"
            )
        features = {name: x[name].values for name in x.columns}
        if y is None:
            labels = None
        elif hasattr(y, "columns"):
            labels = {name: y[name].values for name in y.columns}
        else:
            labels = y.values
        return _dataset(
            features, labels, batch_size, num_epochs, bool(shuffle), queue_capacity, len(x)
        )

    return input_fn
