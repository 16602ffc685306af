"""`tf.compat.v1.estimator.inputs.numpy_input_fn` / `pandas_input_fn` as `tf.data` pipelines.

TF1's versions feed a queue from Python threads; current TensorFlow has no queues under
`tf.function`. These take the same arguments and return an input function that returns a
`tf.data.Dataset` of `(features, labels)` (or of `features` without `y`) with TF1's content:

- `x` a dict of arrays -> features a dict (TF1 sorts the keys; dicts have no order in a
  dataset either); `x` an array -> features that tensor; `y` an array -> labels that tensor,
  `y` a dict -> labels a dict (keys shared with `x` raise ValueError, as in TF1);
- rows are read in order, epoch after epoch, `num_epochs` times (None: forever), and
  batched with `batch_size` across epoch boundaries, as TF1's FIFO queue did; with
  `num_epochs` set the last batch may be smaller (TF1's `dequeue_up_to`);
- `shuffle=True`: TF1 read the rows in order from a random start into a
  `RandomShuffleQueue` of `queue_capacity` rows and drew each row at random from it. Here
  the rows are read in order from a random start and drawn from a `Dataset.shuffle` buffer
  of `queue_capacity` rows: the same kind of mixing, not the same order (TF1's order depends
  on thread timing and cannot be reproduced at all). `shuffle=False` gives TF1's order exactly.

`num_threads` is accepted and ignored (one reader keeps the order; tf.data prefetches).
"""

from __future__ import annotations

import random
from typing import Any

__all__ = ["numpy_input_fn", "pandas_input_fn"]

_TARGET_KEY = "__target_key__"


def _check_shuffle(shuffle: object) -> bool:
    """`shuffle` itself, when TF1 accepts it (a bool: TF1 has no default)."""
    if not isinstance(shuffle, bool):
        raise ValueError(  # noqa: TRY004 - TF1 raises ValueError
            "shuffle must be provided and explicitly set as boolean "
            f"(it is recommended to set it as True for training); got {shuffle}"
        )
    return shuffle


def _rows(structure: Any) -> int:
    import tensorflow as tf

    return len(tf.nest.flatten(structure)[0])


def _dataset(
    items: Any, batch_size: int, num_epochs: int | None, shuffle: bool, queue_capacity: int
) -> Any:
    import tensorflow as tf

    dataset = tf.data.Dataset.from_tensor_slices(items)
    if shuffle:
        start = random.Random().randrange(_rows(items))
        dataset = dataset.skip(start).concatenate(dataset.take(start))
    dataset = dataset.repeat(num_epochs)
    if shuffle:
        dataset = dataset.shuffle(max(1, int(queue_capacity)))
    return dataset.batch(batch_size, drop_remainder=num_epochs is None)


def numpy_input_fn(
    x: Any,
    y: Any = None,
    batch_size: int = 128,
    num_epochs: int | None = 1,
    shuffle: bool | None = None,
    queue_capacity: int = 1000,
    num_threads: int = 1,
) -> Any:
    """`tf.compat.v1.estimator.inputs.numpy_input_fn`: see the module docstring."""
    import numpy as np

    shuffled = _check_shuffle(shuffle)

    def input_fn() -> Any:
        if isinstance(x, dict):
            if not x:
                raise ValueError("x cannot be an empty dict")
            features: Any = {k: np.asarray(x[k]) for k in sorted(x)}
        elif isinstance(x, np.ndarray):
            if x.size == 0:
                raise ValueError("x cannot be an empty array")
            features = x
        else:
            raise TypeError(f"x must be a dict or array; got {type(x).__name__}")
        labels: Any = None
        if isinstance(y, dict):
            if not y:
                raise ValueError("y cannot be empty dict, use None instead.")
            labels = {k: np.asarray(y[k]) for k in sorted(y)}
            if isinstance(features, dict):
                duplicate = set(features) & set(labels)
                if duplicate:
                    raise ValueError(
                        f"{len(duplicate)} duplicate keys are found in both x and y: {duplicate}"
                    )
        elif y is not None:
            labels = np.asarray(y)
        lengths = {len(v) for v in (features.values() if isinstance(features, dict) else [x])}
        if labels is not None:
            lengths |= {len(v) for v in (labels.values() if isinstance(labels, dict) else [labels])}
        if len(lengths) != 1:
            raise ValueError(
                "Length of tensors in x and y is mismatched. All elements in x and y must "
                "have the same length."
            )
        items = features if labels is None else (features, labels)
        return _dataset(items, batch_size, num_epochs, shuffled, queue_capacity)

    return input_fn


def pandas_input_fn(
    x: Any,
    y: Any = None,
    batch_size: int = 128,
    num_epochs: int | None = 1,
    shuffle: bool | None = None,
    queue_capacity: int = 1000,
    num_threads: int = 1,
    target_column: str = "target",
) -> Any:
    """`tf.compat.v1.estimator.inputs.pandas_input_fn`: features a dict of the DataFrame's
    columns; labels the Series' values (or a dict, for a DataFrame `y`)."""
    _check_shuffle(shuffle)
    if y is not None:
        if target_column in x:
            raise ValueError(
                f"Cannot use name {target_column} for target column: DataFrame already has "
                f"a column with that name: {x.columns}"
            )
        if not (x.index == y.index).all():
            raise ValueError(
                f"Index for x and y are mismatched.\nIndex for x: {x.index}\n"
                f"Index for y: {y.index}\n"
            )
    if queue_capacity is None:
        queue_capacity = 4 * len(x) if shuffle else len(x)

    def input_fn() -> Any:
        features = {name: x[name].values for name in x.columns}
        if y is None:
            return _dataset(features, batch_size, num_epochs, bool(shuffle), queue_capacity)
        if hasattr(y, "columns"):
            labels: Any = {name: y[name].values for name in y.columns}
        else:
            labels = y.values
        return _dataset((features, labels), batch_size, num_epochs, bool(shuffle), queue_capacity)

    return input_fn
