"""Feature columns that turn strings (or hashes) into ids, run on the host when the train
step is compiled, as a TPU input pipeline runs its string lookups in `dataset.map`.

A vocabulary list or file, hash buckets and crossed columns look ids up in hash tables
and hash strings: ops XLA (like a TPU) does not compile, and string tensors cannot enter a
compiled program at all. When the facade compiles the train step (`EST2TPU_JIT_COMPILE=1`,
a TPUStrategy), the columns whose ids the model_fn's build trace asked for are recorded
(`State.host_columns`), and each batch gets their ids before the compiled program
(`with_ids`): in the input pipeline when the step is compiled whole (one device, a
TPUStrategy: `on_host`), or in each replica's step before its compiled program (XLA over
several local replicas, `_xla.replica_step`). The column computes its ids itself
(TensorFlow's own lookup, with its `num_oov_buckets`, `default_value`, vocabulary file and
hash key), and the batch carries them as a dense integer tensor under a key of the
facade's (cells without an id hold `MISSING`). The string features leave the batch. In
the compiled step (`reading`), the column's `transform_feature` returns those ids as the
`SparseTensor` TensorFlow would have made, and everything from the ids on - embedding and
indicator columns, `linear_model`'s weights, weighted columns (their weights stay on the
device, cell for cell) - runs as before. Evaluation and prediction are not compiled: their columns run as written.

The width of a column's dense ids is the width its input has (a `[batch, k]` string
feature, a cross of such features: the product), so a compiled step sees one shape; an
input of unknown width (a `SparseTensor` feature, `tf.io.VarLenFeature`) is as wide as its
batch needs, and each new width compiles the step anew.

The other `[batch, n]` `SparseTensor` features of integers (`VarLenFeature(tf.int64)` under
an identity or sequence column) cross into the compiled step the same way, as a dense grid
(`SPARSE`) the step turns back into the same `SparseTensor`: its indices, values and dense
shape. A `SparseTensor` itself, whose number of values changes from batch to batch, would
compile the step anew at every batch.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Iterator
from typing import Any

# The key a column's ids travel under in the batch (never a user's feature name).
PREFIX = "est2tpu/host-ids/"
# The key an integer `SparseTensor` feature travels under, as a dense grid, before its name.
SPARSE = f"{PREFIX}sparse/"
# A cell without an id (TensorFlow's lookups give -1 for a value out of the vocabulary,
# which stays an id, as in the column's own SparseTensor).
MISSING = -(2**62)

_LOCAL = threading.local()
_INSTALLED: list[bool] = []


def _column_classes() -> tuple[Any, ...]:
    from tensorflow.python.feature_column import feature_column_v2 as fc

    return (
        fc.VocabularyListCategoricalColumn,
        fc.VocabularyFileCategoricalColumn,
        fc.HashedCategoricalColumn,
        fc.CrossedColumn,
    )


def install() -> None:
    """Route the string columns' `transform_feature` (and the `_transform_feature` of the
    TF1 API `input_layer` and `linear_model` call) through `_transform`; once per process."""
    if _INSTALLED:
        return
    for cls in _column_classes():
        for attr in ("transform_feature", "_transform_feature"):
            original = cls.__dict__.get(attr)
            if original is not None:
                setattr(cls, attr, _routed(original))
    _INSTALLED.append(True)


def _routed(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def transform(self: Any, *args: Any, **kwargs: Any) -> Any:
        provided: dict[Any, Any] | None = getattr(_LOCAL, "ids", None)
        if provided is not None:
            ids = provided.get(_key(self))
            if ids is not None:
                return ids
        # Also a column crossed in another: a cache of transformations may hand its ids
        # from the cross's transformation to a later column, which the step's cross,
        # computed on the host, no longer asks for.
        _record(self)
        return original(self, *args, **kwargs)

    return transform


def _key(column: Any) -> Any:
    """A column's identity across traces: the column itself (its fields, by value), or
    None for one that cannot be a dict key."""
    try:
        hash(column)
    except TypeError:
        return None
    return column


def _record(column: Any) -> None:
    """A column asked for its ids in a build trace of a compiled train step."""
    from est2tpu.runtime.tf2._core import ModeKeys, active

    inv = active()
    if inv is None or not inv.building or inv.mode != ModeKeys.TRAIN:
        return
    columns = inv.state.host_columns
    if columns is None:
        return
    key = _key(column)
    if key is not None and key not in columns:
        columns[key] = len(columns)


def _split(element: Any) -> tuple[Any, Any, bool]:
    if isinstance(element, tuple) and len(element) == 2:
        return element[0], element[1], True
    return element, None, False


def _joined(features: Any, labels: Any, pair: bool) -> Any:
    return (features, labels) if pair else features


def _is_string(value: Any) -> bool:
    import tensorflow as tf

    return bool(getattr(value, "dtype", None) == tf.string)


def _width(column: Any, features: dict[str, Any]) -> int | None:
    """How many ids a row of `column` has at most, when the input's shape says so."""
    from tensorflow.python.feature_column import feature_column_v2 as fc

    if isinstance(column, fc.CrossedColumn):
        width = 1
        for key in fc._collect_leaf_level_keys(column):
            part = (
                _width(key, features)
                if not isinstance(key, str)
                else _input_width(features.get(key))
            )
            if part is None:
                return None
            width *= part
        return width
    inner = getattr(column, "categorical_column", None)
    if inner is not None:
        return _width(inner, features)
    key = getattr(column, "key", None)
    return _input_width(features.get(key)) if isinstance(key, str) else None


def _input_width(value: Any) -> int | None:
    import tensorflow as tf

    if not isinstance(value, tf.Tensor) or value.shape.rank is None:
        return None
    if value.shape.rank == 1:
        return 1
    if value.shape.rank == 2:
        width = value.shape[1]
        return int(width) if width is not None else None
    return None


def _ids(column: Any, features: dict[str, Any]) -> Any:
    """The column's ids of one batch, computed by the column (on the host)."""
    import tensorflow as tf
    from tensorflow.python.feature_column import feature_column as fc_old
    from tensorflow.python.feature_column import feature_column_v2 as fc

    if hasattr(column, "transform_feature"):  # the V2 API (also what V1's calls do)
        cache = fc.FeatureTransformationCache(features)
        ids = cache.get(column, None)
    else:
        ids = fc_old._LazyBuilder(features).get(column)
    width = _width(column, features)
    dense = tf.sparse.to_dense(ids, default_value=MISSING)
    if width is not None and dense.shape.rank == 2:
        pad = tf.maximum(width - tf.shape(dense)[1], 0)
        dense = tf.pad(dense, [[0, 0], [0, pad]], constant_values=MISSING)
        dense.set_shape([None, width])
    return dense


def _is_integer_grid(value: Any) -> bool:
    """An integer `SparseTensor` of rank 2 (what `_gridded` carries)."""
    import tensorflow as tf

    return (
        isinstance(value, (tf.SparseTensor, tf.SparseTensorSpec))
        and value.dtype.is_integer
        and value.shape.rank == 2
    )


def _gridded(value: Any) -> Any:
    """An integer `SparseTensor` as a dense int64 grid, `MISSING` where it has no value."""
    import tensorflow as tf

    return tf.sparse.to_dense(tf.cast(value, tf.int64), default_value=MISSING)


def with_ids(element: Any, state: Any) -> Any:
    """A batch with the recorded columns' ids computed, its string features dropped and
    its integer `SparseTensor` features as dense grids."""
    columns = dict(state.host_columns or {})
    features, labels, pair = _split(element)
    if not isinstance(features, dict) or not (
        columns or any(_is_integer_grid(v) for v in features.values())
    ):
        return element
    out = {
        key: value
        for key, value in features.items()
        if not _is_string(value) and not _is_integer_grid(value)
    }
    for key, value in features.items():
        if isinstance(key, str) and _is_integer_grid(value):
            out[f"{SPARSE}{value.dtype.name}/{key}"] = _gridded(value)
        elif _is_integer_grid(value):  # a key the batch cannot carry by name: as it is
            out[key] = value
    for column, index in columns.items():
        out[f"{PREFIX}{index}"] = _ids(column, dict(features))
    return _joined(out, labels, pair)


def _carries(spec: Any, state: Any) -> bool:
    """Whether batches of `spec` (a dataset's element_spec) change under `with_ids`."""
    features, _, _ = _split(spec)
    return bool(state.host_columns) or (
        isinstance(features, dict) and any(_is_integer_grid(v) for v in features.values())
    )


def on_host(dataset: Any, state: Any) -> Any:
    """The train input with the recorded columns' ids computed in the input pipeline, for
    a train step compiled whole (one device, a TPUStrategy), or `dataset` itself when no
    column was recorded. (Over several local replicas each replica's program is compiled
    on its own, and the step computes the ids first, outside it: `_xla.replica_step`.)"""
    if state.host_columns is None or state.replica_programs:
        return dataset
    if not _carries(dataset.element_spec, state):
        return dataset
    return dataset.map(
        lambda *element: with_ids(element[0] if len(element) == 1 else element, state)
    )


def _sparse(dense: Any) -> Any:
    """The ids' `SparseTensor` again (in the compiled step)."""
    import tensorflow as tf

    indices = tf.where(tf.not_equal(dense, MISSING))
    return tf.SparseTensor(
        indices, tf.gather_nd(dense, indices), tf.shape(dense, out_type=tf.int64)
    )


@contextlib.contextmanager
def _providing(ids: dict[Any, Any]) -> Iterator[None]:
    saved = getattr(_LOCAL, "ids", None)
    _LOCAL.ids = ids
    try:
        yield
    finally:
        _LOCAL.ids = saved


def reading(fn: Callable[..., Any], state: Any) -> Callable[..., Any]:
    """`fn(element, ...)` (a replica's train step), taking the columns' ids out of the
    batch: the model_fn sees the features without them, each integer `SparseTensor`
    feature as it was, and each column's ids are those the host computed."""

    import tensorflow as tf

    @functools.wraps(fn)
    def step(element: Any, *args: Any, **kwargs: Any) -> Any:
        features, labels, pair = _split(element)
        if not isinstance(features, dict) or not any(
            isinstance(k, str) and k.startswith(PREFIX) for k in features
        ):
            return fn(element, *args, **kwargs)
        by_index = {index: column for column, index in (state.host_columns or {}).items()}
        ids = {}
        rest = {}
        for key, value in features.items():
            if not (isinstance(key, str) and key.startswith(PREFIX)):
                rest[key] = value
            elif key.startswith(SPARSE):
                dtype, name = key[len(SPARSE) :].split("/", 1)
                grid = _sparse(value)
                rest[name] = tf.SparseTensor(
                    grid.indices, tf.cast(grid.values, dtype), grid.dense_shape
                )
            else:
                ids[by_index[int(key[len(PREFIX) :])]] = _sparse(value)
        with _providing(ids):
            return fn(_joined(rest, labels, pair), *args, **kwargs)

    return step
