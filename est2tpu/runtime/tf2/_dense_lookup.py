"""Embedding lookups of sparse ids that XLA compiles, for the facade's XLA programs.

A feature column's embedding (`embedding_column`, and `linear_model`'s weights of a
categorical column) is `safe_embedding_lookup_sparse` of a `SparseTensor` of ids: SparseReshape,
SparseFillEmptyRows and SparseSegment* ops, which XLA (like a TPU) does not compile. While the
facade traces an XLA program (`xla_tracing`), TensorFlow's functions are replaced by the same
computation on dense tensors: the ids and weights are scattered into a `[rows, ids per row]`
grid (missing, invalid or, unless the combiner is "sum", non-positive-weight cells weigh 0),
the rows are gathered and combined by the combiner, and a row without ids is the embedding of
`default_id`, or zeros. `sparse_reshape` becomes index arithmetic on the `SparseTensor`'s
indices, a sequence column's length (`sequence_length_from_sparse_tensor`, a SegmentMax) an
unsorted segment maximum over the batch's rows, and the optimizer gets an embedding's
gradient dense (`compilable_gradients`).
Outside an XLA program TensorFlow's own functions run, untouched.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Iterator
from typing import Any

_LOCAL = threading.local()
_INSTALLED: list[dict[str, Any]] = []


def _tracing() -> bool:
    return bool(getattr(_LOCAL, "depth", 0))


@contextlib.contextmanager
def xla_tracing() -> Iterator[None]:
    """While the facade traces an XLA-compiled function (on this thread): embedding lookups
    of sparse ids and `sparse_reshape` are the dense, compilable versions."""
    install()
    _LOCAL.depth = getattr(_LOCAL, "depth", 0) + 1
    try:
        yield
    finally:
        _LOCAL.depth -= 1


def compilable(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn`, traced under `xla_tracing` (what the facade passes to `jit_compile=True`)."""

    @functools.wraps(fn)
    def traced(*args: Any, **kwargs: Any) -> Any:
        with xla_tracing():
            return fn(*args, **kwargs)

    return traced


def compilable_gradients(pairs: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """`(gradient, variable)` pairs an optimizer applies inside an XLA program: a sparse
    gradient (`IndexedSlices`, an embedding's) as the dense tensor it sums to, since no
    sparse update kernel (`ResourceSparseApply*`) compiles. The update is then the dense
    one, as on a TPU: the same for SGD, Adagrad and TF1's Adam; optimizers that also move
    rows with a zero gradient (momentum, RMSProp) move every row. Outside an XLA program,
    `pairs` as they are."""
    if not _tracing():
        return pairs
    import tensorflow as tf

    return [
        (tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g, v) for g, v in pairs
    ]


def install() -> None:
    """Route TensorFlow's `safe_embedding_lookup_sparse`, `embedding_lookup_sparse_v2`,
    `sparse_reshape` and `sequence_length_from_sparse_tensor` (as the feature columns call
    them: module attributes) through the compilable versions while `xla_tracing` is
    active; once per process."""
    if _INSTALLED:
        return
    from tensorflow.python.feature_column import utils as fc_utils
    from tensorflow.python.ops import embedding_ops, sparse_ops

    originals = {
        "safe_embedding_lookup_sparse": embedding_ops.safe_embedding_lookup_sparse,
        "embedding_lookup_sparse_v2": embedding_ops.embedding_lookup_sparse_v2,
        "sparse_reshape": sparse_ops.sparse_reshape,
        "sequence_length_from_sparse_tensor": fc_utils.sequence_length_from_sparse_tensor,
    }

    def safe_lookup(*args: Any, **kwargs: Any) -> Any:
        if not _tracing():
            return originals["safe_embedding_lookup_sparse"](*args, **kwargs)
        return dense_lookup(*args, safe=True, **kwargs)

    def lookup_v2(*args: Any, **kwargs: Any) -> Any:
        if not _tracing():
            return originals["embedding_lookup_sparse_v2"](*args, **kwargs)
        return dense_lookup(*args, safe=False, **kwargs)

    def reshape(*args: Any, **kwargs: Any) -> Any:
        if not _tracing():
            return originals["sparse_reshape"](*args, **kwargs)
        return sparse_reshape(*args, **kwargs)

    def length(*args: Any, **kwargs: Any) -> Any:
        if not _tracing():
            return originals["sequence_length_from_sparse_tensor"](*args, **kwargs)
        return sequence_length(*args, **kwargs)

    embedding_ops.safe_embedding_lookup_sparse = safe_lookup
    embedding_ops.embedding_lookup_sparse_v2 = lookup_v2
    sparse_ops.sparse_reshape = reshape
    fc_utils.sequence_length_from_sparse_tensor = length
    _INSTALLED.append(originals)


def _strides(shape: Any) -> Any:
    """Row-major strides of `shape` (int64)."""
    import tensorflow as tf

    return tf.math.cumprod(shape, exclusive=True, reverse=True)


def sparse_reshape(sp_input: Any, shape: Any, name: str | None = None) -> Any:
    """`tf.sparse.reshape` by index arithmetic: each entry's row-major position is kept."""
    import tensorflow as tf

    old = tf.cast(sp_input.dense_shape, tf.int64)
    new = tf.cast(tf.stack(shape) if isinstance(shape, (list, tuple)) else shape, tf.int64)
    total = tf.reduce_prod(old)
    known = tf.reduce_prod(tf.where(new < 0, tf.ones_like(new), new))
    new = tf.where(new < 0, tf.math.floordiv(total, tf.maximum(known, 1)), new)
    linear = tf.reduce_sum(sp_input.indices * _strides(old)[None, :], axis=1, keepdims=True)
    indices = tf.math.floormod(tf.math.floordiv(linear, _strides(new)[None, :]), new[None, :])
    return tf.SparseTensor(indices, sp_input.values, new)


def sequence_length(sp_input: Any, num_elements: int = 1) -> Any:
    """`sequence_length_from_sparse_tensor`: per row of `sp_input`, one past its last
    column, in groups of `num_elements` (0 for a row without entries), as int64."""
    import tensorflow as tf

    rows = tf.cast(sp_input.dense_shape[0], tf.int32)
    last = tf.math.unsorted_segment_max(
        sp_input.indices[:, 1] + 1, tf.cast(sp_input.indices[:, 0], tf.int32), rows
    )
    last = tf.maximum(last, 0)  # a row without entries gets the dtype's lowest value
    return tf.cast(tf.math.ceil(last / num_elements), tf.int64)


def dense_lookup(
    embedding_weights: Any,
    sparse_ids: Any,
    sparse_weights: Any = None,
    combiner: str | None = None,
    default_id: Any = None,
    name: str | None = None,
    partition_strategy: str = "div",
    max_norm: Any = None,
    allow_fast_lookup: bool = False,
    *,
    safe: bool,
) -> Any:
    """`safe_embedding_lookup_sparse` (`safe`) or `embedding_lookup_sparse_v2` on dense
    tensors: the same combined embeddings, shaped `sparse_ids`' shape without its last
    dimension, plus the embedding's."""
    import tensorflow as tf
    from tensorflow.python.ops import variables

    combiner = combiner or "mean"
    if combiner not in ("mean", "sqrtn", "sum"):
        raise ValueError(f"combiner must be one of 'mean', 'sqrtn' or 'sum', got {combiner}")
    params = embedding_weights
    if isinstance(params, variables.PartitionedVariable):
        params = list(params)
    if not isinstance(params, (list, tuple)):
        params = [params]
    if len(params) > 1 and partition_strategy != "div":
        raise NotImplementedError(
            "est2tpu tf2 facade: under XLA an embedding partitioned with "
            f"partition_strategy={partition_strategy!r} is not supported (only 'div')"
        )
    table = params[0] if len(params) == 1 else tf.concat(list(params), axis=0)
    with tf.name_scope(name or "embedding_lookup"):
        shape = tf.cast(sparse_ids.dense_shape, tf.int64)
        outer, width = shape[:-1], shape[-1]
        rows = tf.reduce_prod(outer)
        row = tf.reduce_sum(sparse_ids.indices[:, :-1] * _strides(outer)[None, :], axis=1)
        cells = tf.stack([row, sparse_ids.indices[:, -1]], axis=1)
        grid = tf.stack([rows, width])
        ids = tf.cast(sparse_ids.values, tf.int64)
        present = tf.scatter_nd(cells, tf.ones_like(ids, tf.bool), grid)
        dense_ids = tf.scatter_nd(cells, ids, grid)
        dtype = table.dtype
        if sparse_weights is not None:
            weights = tf.scatter_nd(cells, tf.cast(sparse_weights.values, dtype), grid)
        else:
            weights = tf.cast(present, dtype)
        valid = present
        if safe:
            valid = tf.logical_and(valid, dense_ids >= 0)
            if combiner != "sum" and sparse_weights is not None:
                valid = tf.logical_and(valid, weights > 0)
        weights = tf.where(valid, weights, tf.zeros_like(weights))
        gathered = tf.nn.embedding_lookup(
            table, tf.where(valid, dense_ids, tf.zeros_like(dense_ids)), max_norm=max_norm
        )
        summed = tf.reduce_sum(gathered * weights[..., None], axis=1)
        if combiner == "mean":
            total = tf.reduce_sum(weights, axis=1, keepdims=True)
            summed = tf.math.divide_no_nan(summed, total)
        elif combiner == "sqrtn":
            total = tf.sqrt(tf.reduce_sum(weights * weights, axis=1, keepdims=True))
            summed = tf.math.divide_no_nan(summed, total)
        if safe:
            empty = tf.logical_not(tf.reduce_any(valid, axis=1))[:, None]
            if default_id is None:
                filler = tf.zeros_like(summed)
            else:
                filler = tf.nn.embedding_lookup(
                    table, tf.fill([rows], tf.cast(default_id, tf.int64)), max_norm=max_norm
                )
            summed = tf.where(empty, filler, summed)
        out_shape = tf.concat([tf.cast(outer, tf.int32), tf.shape(summed)[1:]], axis=0)
        result = tf.reshape(summed, out_shape)
        static = sparse_ids.dense_shape.shape[0]
        if static is not None:
            result.set_shape([None] * (int(static) - 1) + summed.shape[1:].as_list())
        return result
