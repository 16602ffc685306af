"""`tf.estimator.train_and_evaluate` and its specs for the tf2 facade (TensorFlow's
estimator/training.py), and the checkpoint saves of one `train` call with their saving
listeners (TF1's CheckpointSaverHook)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any, NamedTuple

# The facade's Estimator (its module imports this one): annotated as Any.
Estimator = Any


class TrainSpec(NamedTuple):
    """`tf.estimator.TrainSpec`."""

    input_fn: Callable[..., Any]
    max_steps: int | None = None
    hooks: Any = ()
    saving_listeners: Any = ()


class EvalSpec(NamedTuple):
    """`tf.estimator.EvalSpec`."""

    input_fn: Callable[..., Any]
    steps: int | None = 100
    name: str | None = None
    hooks: Any = None
    exporters: Any = None
    start_delay_secs: int = 120
    throttle_secs: int = 600


class CheckpointSaves:
    """The checkpoints of one `train` call, with its saving listeners called around each as
    TF1's CheckpointSaverHook called them (`session=None`). Without listeners: a save in
    the loop when one is due and one at the end, nothing at the start."""

    def __init__(
        self, save: Callable[[], None], step: Callable[[], int], listeners: list[Any]
    ) -> None:
        self._save = save
        self._step = step
        self.listeners = listeners
        self.saved: int | None = None  # the step of the last save

    def begin(self) -> bool:
        """With listeners, TF1 saved (and told them) at the starting step. True: stop."""
        if not self.listeners:
            return False
        for listener in self.listeners:
            listener.begin()
        return self.save()

    def save(self) -> bool:
        """Save now; True when a listener asks to stop."""
        step = self._step()
        for listener in self.listeners:
            listener.before_save(None, step)
        self._save()
        self.saved = step
        stop = False
        for listener in self.listeners:
            stop = bool(listener.after_save(None, step)) or stop
        return stop

    def end(self) -> None:
        if not self.listeners:
            self._save()
            return
        step = self._step()
        if self.saved != step:
            self.save()
        for listener in self.listeners:
            listener.end(None, step)


def train_and_evaluate(estimator: Estimator, train_spec: TrainSpec, eval_spec: EvalSpec) -> Any:
    """`tf.estimator.train_and_evaluate`, run locally as TF1 runs it: train to `max_steps`,
    evaluating (and running the exporters) after a checkpoint when `throttle_secs` have
    passed since the last evaluation, and after the last checkpoint if it was not
    evaluated. Returns (metrics of the last evaluation, export results)."""
    if eval_spec.hooks:
        raise NotImplementedError("est2tpu tf2 facade: EvalSpec hooks are not supported")
    listener = _EvaluateAfterSave(estimator, eval_spec, train_spec.max_steps)
    estimator.train(
        train_spec.input_fn,
        hooks=train_spec.hooks,
        max_steps=train_spec.max_steps,
        saving_listeners=[*(train_spec.saving_listeners or ()), listener],
    )
    return listener.metrics, listener.exports


class _EvaluateAfterSave:
    """TF 2.15's `_NewCheckpointListenerForEvaluate` with its `_Evaluator`: the first save
    (of the untrained starting step) is skipped; a checkpoint already evaluated is not
    evaluated again."""

    def __init__(self, estimator: Estimator, eval_spec: EvalSpec, max_steps: int | None) -> None:
        self.estimator = estimator
        self.spec = eval_spec
        self.max_steps = max_steps
        self.metrics: Any = None
        self.exports: list[Any] = []
        self._first = True
        self._last_step: int | None = None
        self._last_time = 0.0
        self._last_checkpoint: str | None = None

    def begin(self) -> None:
        self._first = True

    def before_save(self, session: Any, step: int) -> None:
        pass

    def after_save(self, session: Any, step: int) -> bool:
        if self._first:
            self._first = False  # the model is not trained yet
            return False
        due = self._last_step is None or (
            step != self._last_step
            and time.monotonic() - self._last_time >= (self.spec.throttle_secs or 0)
        )
        if due:
            self._evaluate(step)
        return False

    def end(self, session: Any, step: int) -> None:
        if step != self._last_step:
            self._evaluate(step)

    def _evaluate(self, step: int) -> None:
        self._last_step, self._last_time = step, time.monotonic()
        checkpoint = self.estimator.latest_checkpoint()
        if checkpoint is None or checkpoint == self._last_checkpoint:
            return
        self._last_checkpoint = checkpoint
        self.metrics = self.estimator.evaluate(
            self.spec.input_fn, steps=self.spec.steps, name=self.spec.name
        )
        final = bool(self.max_steps) and self.metrics["global_step"] >= self.max_steps
        self.exports = []
        for exporter in self.spec.exporters or ():
            path = os.path.join(self.estimator.model_dir, "export", exporter.name)
            self.exports.append(
                exporter.export(self.estimator, path, checkpoint, self.metrics, final)
            )
