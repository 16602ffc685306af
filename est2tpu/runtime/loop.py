"""An explicit train/evaluate loop in place of ``tf.estimator.train_and_evaluate``.

``tf.estimator.train_and_evaluate`` evaluates from a checkpoint-saving listener
*inside* the training session; on TPU that does not work (the TPU is busy with
the training loop), which is why the TPU guides replace it with an explicit
loop (train a stretch, evaluate, repeat).  :func:`train_and_evaluate` is that
loop, with ``train_and_evaluate``'s contract:

- training runs in stretches that end on checkpoint boundaries:
  ``config.save_checkpoints_steps`` (else 1000 steps), each a separate
  ``estimator.train(..., max_steps=boundary)`` call, up to
  ``train_spec.max_steps``;
- after each stretch the newest checkpoint is evaluated with
  ``eval_spec.steps``, ``eval_spec.name`` and ``eval_spec.hooks``, and every
  exporter in ``eval_spec.exporters`` is called as ``train_and_evaluate`` calls
  it: ``export(estimator, model_dir/export/<name>, checkpoint_path,
  eval_result, is_the_final_export)``;
- it starts from the global step of the latest checkpoint in ``model_dir``, so
  a re-run resumes, and a finished run (global step >= ``max_steps``) trains
  and evaluates nothing more;
- it returns ``(eval_result, export_results)`` of the last evaluation, as
  ``train_and_evaluate`` does in TF 2.15 (``(None, [])`` when nothing was
  evaluated).

One difference from the original is inherent in any such loop: each stretch is
a new ``train()`` call, which calls the input function again, so the input
pipeline starts over at each checkpoint boundary instead of continuing.  Input
that is the same at every boundary (an unshuffled or fixed-order dataset whose
epoch divides the stretch) trains identically; a reshuffling pipeline sees a
different (equally random) order.
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["train_and_evaluate"]

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


def train_and_evaluate(estimator: Any, train_spec: Any, eval_spec: Any) -> tuple[Any, list[Any]]:
    """Train ``estimator`` to ``train_spec.max_steps``, evaluating at each checkpoint.

    Same arguments and return value as ``tf.estimator.train_and_evaluate``;
    see the module docstring for the schedule.  ``train_spec.max_steps`` of
    ``None`` trains until the input function ends (one stretch after another).
    """
    import tensorflow as tf

    model_dir = estimator.model_dir
    max_steps = train_spec.max_steps
    stretch = _steps_per_eval(estimator)
    export_dir_base = os.path.join(tf.compat.as_str_any(model_dir), "export")
    current = _global_step(model_dir)
    eval_result: Any = None
    export_results: list[Any] = []
    previous_checkpoint = None
    while max_steps is None or current < max_steps:
        boundary = (current // stretch + 1) * stretch
        if max_steps is not None:
            boundary = min(boundary, max_steps)
        estimator.train(
            input_fn=train_spec.input_fn,
            max_steps=boundary,
            hooks=list(train_spec.hooks),
            saving_listeners=list(getattr(train_spec, "saving_listeners", ()) or ()),
        )
        reached = _global_step(model_dir)
        checkpoint = estimator.latest_checkpoint()
        if checkpoint and checkpoint != previous_checkpoint:
            previous_checkpoint = checkpoint
            eval_result = estimator.evaluate(
                input_fn=eval_spec.input_fn,
                steps=eval_spec.steps,
                name=eval_spec.name,
                checkpoint_path=checkpoint,
                hooks=list(eval_spec.hooks),
            )
            step = eval_result[tf.compat.v1.GraphKeys.GLOBAL_STEP]
            is_the_final_export = bool(max_steps is not None and step >= max_steps)
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
        if reached <= current:
            # The input function ran out before the boundary: training is over.
            break
        current = reached
    return eval_result, export_results
