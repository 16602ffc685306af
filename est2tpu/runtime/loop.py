"""``tf.estimator.train_and_evaluate`` for a TPUEstimator, on CPU/GPU and on TPU.

:func:`train_and_evaluate` has ``tf.estimator.train_and_evaluate``'s arguments,
return value and termination, and picks how to run from the estimator itself:

- **No TPU** (a plain Estimator, or a TPUEstimator built with ``use_tpu=False``,
  which is what the migrated code builds where no TPU is found): it *is*
  ``tf.estimator.train_and_evaluate``.  One ``train()`` call reads the input
  pipeline once, from start to end, and evaluates and exports from a
  checkpoint-saving listener, throttled by ``eval_spec.throttle_secs``, exactly
  as the original program did: same batches in the same order, same
  evaluations, same exports, same distributed behaviour under ``TF_CONFIG``.
- **TPU**: evaluation cannot run inside the training session (the TPU is busy
  with the training loop), which is why the TPU guides replace
  ``train_and_evaluate`` with an explicit loop.  :func:`train_in_stretches`
  is that loop: train to each checkpoint boundary (``save_checkpoints_steps``,
  else every 1000 steps), evaluate the new checkpoint, call the exporters,
  repeat.  The input pipeline **continues** across stretches: the iterator
  state is saved next to each model checkpoint (``input.ckpt-N`` in
  ``model_dir``, by ``tf.data.experimental.CheckpointInputPipelineHook``) and
  restored by the next stretch, so the batches are the ones one uninterrupted
  ``train()`` would read, and a re-run resumes the input where it stopped.

Differences of the TPU loop from the original, all inherent in running on TPU:
evaluation happens at every checkpoint boundary instead of at the first
checkpoint after ``throttle_secs``; the input pipeline's state must be
checkpointable (``tf.data`` transformations are; a ``py_function`` or other
external state is not restored, and TensorFlow logs a warning); and with
``max_steps=None`` training still ends when the input ends (one pass over a
finite input), then evaluates the last checkpoint.  ``EvalSpec(steps=None)`` (to the
end of the input, which a TPU cannot detect) evaluates the whole batches of an input of
known length (the shim's ``numpy_input_fn``/``pandas_input_fn``, or one marked by
``sized_input_fn``), and fails as TPUEstimator does for any other.
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["train_and_evaluate", "train_in_stretches"]

# Stretch length when the RunConfig saves checkpoints by time (or not at all).
DEFAULT_STEPS_PER_EVAL = 1000


def _global_step(model_dir: str) -> int:
    """The global step of the latest checkpoint in ``model_dir`` (0 when there is none)."""
    import tensorflow as tf

    checkpoint = tf.train.latest_checkpoint(model_dir)
    if not checkpoint:
        return 0
    return int(tf.train.load_variable(checkpoint, tf.compat.v1.GraphKeys.GLOBAL_STEP))


def _steps_per_eval(estimator: Any) -> int:
    steps = getattr(estimator.config, "save_checkpoints_steps", None)
    return int(steps) if steps else DEFAULT_STEPS_PER_EVAL


def _runs_on_tpu(estimator: Any) -> bool:
    """Whether ``estimator`` trains on a TPU: a TPUEstimator built with ``use_tpu=True``."""
    import tensorflow as tf

    if not isinstance(estimator, tf.compat.v1.estimator.tpu.TPUEstimator):
        return False
    # TPUEstimator keeps its use_tpu argument only in its internal context (TF 1.15-2.15).
    return bool(getattr(estimator._ctx, "_use_tpu", True))


def train_and_evaluate(estimator: Any, train_spec: Any, eval_spec: Any) -> Any:
    """Train and evaluate ``estimator`` as ``tf.estimator.train_and_evaluate`` does.

    Without a TPU this calls ``tf.estimator.train_and_evaluate`` itself; on a
    TPU it runs :func:`train_in_stretches`.  See the module docstring.
    """
    import tensorflow as tf

    if not _runs_on_tpu(estimator):
        return tf.estimator.train_and_evaluate(estimator, train_spec, eval_spec)
    return train_in_stretches(estimator, train_spec, eval_spec)


def _evaluate_and_export(
    estimator: Any, eval_spec: Any, checkpoint: str, max_steps: int | None
) -> tuple[Any, list[Any]]:
    import tensorflow as tf

    from est2tpu.runtime.inputs import eval_steps

    steps = eval_spec.steps
    if steps is None:
        # EvalSpec(steps=None) evaluates to the end of the input, which a TPU cannot
        # detect: the whole batches of an input of known length (elsewhere still None)
        steps = eval_steps(estimator, eval_spec.input_fn)
    eval_result = estimator.evaluate(
        input_fn=eval_spec.input_fn,
        steps=steps,
        name=eval_spec.name,
        checkpoint_path=checkpoint,
        hooks=list(eval_spec.hooks),
    )
    step = eval_result[tf.compat.v1.GraphKeys.GLOBAL_STEP]
    # train_and_evaluate's rule: with max_steps=None no export is the final one.
    is_the_final_export = bool(max_steps is not None and step >= max_steps)
    export_dir_base = os.path.join(tf.compat.as_str_any(estimator.model_dir), "export")
    export_results = [
        exporter.export(
            estimator=estimator,
            export_path=os.path.join(export_dir_base, tf.compat.as_str_any(exporter.name)),
            checkpoint_path=checkpoint,
            eval_result=eval_result,
            is_the_final_export=is_the_final_export,
        )
        for exporter in eval_spec.exporters
    ]
    return eval_result, export_results


def train_in_stretches(estimator: Any, train_spec: Any, eval_spec: Any) -> tuple[Any, list[Any]]:
    """Train ``estimator`` stretch by stretch, evaluating each new checkpoint.

    The loop :func:`train_and_evaluate` runs on a TPU (it runs on CPU too, which
    is how its input continuation is tested).  Each stretch is one
    ``estimator.train(max_steps=boundary)`` call with
    ``CheckpointInputPipelineHook``, so the input continues where the previous
    stretch left it.  It starts from the latest checkpoint in ``model_dir``
    (a re-run resumes; a finished one trains and evaluates nothing) and ends
    at ``train_spec.max_steps`` or, when the input ends first, after the
    stretch that exhausted it.  Returns ``(eval_result, export_results)`` of the
    last evaluation, ``(None, [])`` when nothing was evaluated.
    """
    import tensorflow as tf

    model_dir = estimator.model_dir
    max_steps = train_spec.max_steps
    stretch = _steps_per_eval(estimator)
    current = _global_step(model_dir)
    eval_result: Any = None
    export_results: list[Any] = []
    previous_checkpoint = estimator.latest_checkpoint()
    while max_steps is None or current < max_steps:
        boundary = (current // stretch + 1) * stretch
        if max_steps is not None:
            boundary = min(boundary, max_steps)
        # A new hook per stretch: its saver is built in begin() for the new graph.
        input_hook = tf.data.experimental.CheckpointInputPipelineHook(
            estimator, external_state_policy="warn"
        )
        estimator.train(
            input_fn=train_spec.input_fn,
            max_steps=boundary,
            hooks=[*train_spec.hooks, input_hook],
            saving_listeners=list(getattr(train_spec, "saving_listeners", ()) or ()),
        )
        reached = _global_step(model_dir)
        input_ended = reached < boundary
        checkpoint = estimator.latest_checkpoint()
        if checkpoint and checkpoint != previous_checkpoint:
            previous_checkpoint = checkpoint
            eval_result, export_results = _evaluate_and_export(
                estimator, eval_spec, checkpoint, max_steps
            )
        if input_ended:
            break
        current = reached
    return eval_result, export_results
