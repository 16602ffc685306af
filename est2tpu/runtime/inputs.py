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

__all__ = ["eval_steps", "evaluate", "numpy_input_fn", "pandas_input_fn", "sized_input_fn"]

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
    # TPUEstimator passes params["context"] to input_fn only on its TPU path; "use_tpu" is
    # there only when the program's own params hold it.
    params = params or {}
    return "context" in params or bool(params.get("use_tpu", False))


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


def _examples(rows: int | None, num_epochs: int | None) -> int | None:
    """Examples one pass of the input yields; None when it repeats without end."""
    return None if num_epochs is None or rows is None else rows * num_epochs


def _rows_or_none(x: Any) -> int | None:
    # Malformed features fail where the original fails, when the input function runs.
    try:
        return _num_rows(x)
    except (TypeError, ValueError):
        return None


def eval_steps(estimator: Any, input_fn: Any, examples: Any = None) -> int | None:
    """``steps`` for ``estimator.evaluate(input_fn)`` where the original gave none.

    ``None`` (evaluate to the end of the input, the original's behaviour, partial last
    batch included) wherever the TPUEstimator evaluates on CPU/GPU; on a TPU, which
    cannot stop at the end of the input, the number of whole per-host batches in the
    finite input of the shim's ``numpy_input_fn``/``pandas_input_fn`` (each host reads
    all of it; the last partial batch is dropped, as TPU evaluation must).  ``examples``:
    the arrays a ``Dataset.from_tensor_slices`` input function reads once each.  Of any
    other input function, the whole batches its dataset holds (:func:`whole_batches`).
    """
    import tensorflow as tf

    if examples is not None:
        examples = len(tf.nest.flatten(examples)[0])
    else:
        examples = getattr(input_fn, "num_examples", None)
    ctx = getattr(estimator, "_ctx", None)  # TPUEstimator's internal context (TF <= 2.15)
    if ctx is None:
        return None
    with ctx.with_mode(tf.estimator.ModeKeys.EVAL) as eval_ctx:
        if eval_ctx.is_running_on_cpu():
            return None
        batch = int(eval_ctx.batch_size_for_input_fn)
        if examples is None:
            steps = whole_batches(input_fn, batch)
            if steps == 0:
                raise ValueError(
                    f"the evaluation input holds no whole eval batch of {batch}: TPU "
                    "evaluation would see none; pass steps or a smaller eval_batch_size"
                )
            return steps
        if examples < batch:
            raise ValueError(
                f"the evaluation input has {examples} examples, fewer than one eval batch "
                f"of {batch}: TPU evaluation would see none; pass steps or a smaller "
                "eval_batch_size"
            )
        return int(examples) // batch


def whole_batches(input_fn: Any, batch: int) -> int:
    """How many whole batches of ``batch`` examples one pass of an evaluation input holds:
    its dataset, made with ``params={"batch_size": batch}`` in a graph of its own, counted
    on the host once per input function (``tf.data`` cardinality says when it repeats
    without end, which no count can cover).

    Raises:
        TypeError: if the input function returns no ``tf.data.Dataset``.
        ValueError: if its dataset repeats without end.
    """
    import inspect

    import tensorflow as tf

    counted = getattr(input_fn, "_est2tpu_whole_batches", {})
    if batch in counted:
        return int(counted[batch])
    takes_params = "params" in inspect.signature(input_fn).parameters
    with tf.Graph().as_default():
        dataset = input_fn(params={"batch_size": batch}) if takes_params else input_fn()
        if not isinstance(dataset, tf.data.Dataset):
            raise TypeError(
                "evaluate() without steps on a TPU: the evaluation input function returns "
                "no tf.data.Dataset, whose batches the runtime could count; pass steps"
            )
        infinite = tf.data.experimental.INFINITE_CARDINALITY
        whole = (
            dataset.unbatch()
            .batch(batch, drop_remainder=True)
            .reduce(tf.constant(0, tf.int64), lambda count, _: count + 1)
        )
        cardinality = tf.data.experimental.cardinality(dataset)
        with tf.compat.v1.Session() as session:
            if session.run(cardinality) == infinite:
                raise ValueError(
                    "evaluate() without steps on a TPU: the evaluation input repeats without "
                    "end, and so did the original's evaluation; pass steps"
                )
            session.run(tf.compat.v1.tables_initializer())
            steps = int(session.run(whole))
    try:
        input_fn._est2tpu_whole_batches = {**counted, batch: steps}
    except AttributeError:  # a bound method or a builtin: counted again next time
        pass
    return steps


def evaluate(
    estimator: Any,
    input_fn: Any,
    steps: int | None = None,
    hooks: Any = None,
    checkpoint_path: str | None = None,
    name: str | None = None,
    examples: Any = None,
) -> Any:
    """``estimator.evaluate(...)`` whose ``steps``, when not given, come from
    :func:`eval_steps`: the original's on CPU/GPU, a finite count on TPU."""
    if steps is None:
        steps = eval_steps(estimator, input_fn, examples)
    return estimator.evaluate(
        input_fn, steps=steps, hooks=hooks, checkpoint_path=checkpoint_path, name=name
    )


def sized_input_fn(input_fn: Any, examples: Any) -> Any:
    """``input_fn`` itself, marked with how many examples one pass of it reads.

    ``examples``: the arrays a ``Dataset.from_tensor_slices`` input function reads once
    each (the length of the first).  :func:`eval_steps` reads the mark where an evaluation
    has no steps (``EvalSpec(steps=None)`` run by :func:`train_and_evaluate` on a TPU);
    nothing else does, so on CPU/GPU the input function behaves exactly as before.
    """
    import tensorflow as tf

    input_fn.num_examples = len(tf.nest.flatten(examples)[0])
    return input_fn


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

    input_fn.num_examples = _examples(_rows_or_none(x), num_epochs)  # type: ignore[attr-defined]
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

    input_fn.num_examples = _examples(len(x), num_epochs)  # type: ignore[attr-defined]
    return input_fn
