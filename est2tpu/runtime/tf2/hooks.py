"""The common SessionRunHooks, for the facade's `train(hooks=...)` and `TrainSpec(hooks=...)`.

The facade has no session: its train loop runs a number of steps per `tf.function` call
and asks each hook, between calls, at which step it next needs control (the loop ends a
call there) and whether training should stop. Each class here does what its TF1 namesake
does at the steps it would act on:

- `LoggingTensorHook(tensors, every_n_iter=None, every_n_secs=None, at_end=False)`: the
  model_fn's tensors logged at TF1's steps (see the class);
- `StopAtStepHook(num_steps=None, last_step=None)`: stop at `last_step`, or `num_steps`
  after the step training starts at;
- `StepCounterHook(every_n_steps=100, every_n_secs=None, output_dir=None)`: a
  `global_step/sec` log line every `every_n_steps` steps, and a summary in `output_dir`
  when one is given;
- the early-stopping hooks of `tf.estimator.experimental` (`stop_if_higher_hook`,
  `stop_if_lower_hook`, `stop_if_no_increase_hook`, `stop_if_no_decrease_hook`,
  `make_early_stopping_hook`): every `run_every_steps` steps (or `run_every_secs` seconds)
  the predicate reads the evaluation results written to the estimator's eval directory,
  as TensorFlow's reads them, and a true answer stops training.

Hooks may also be returned in `EstimatorSpec(training_hooks=...)`. A hook of any other
kind raises `TypeError` in `train()`: the facade cannot run a
SessionRunHook's `before_run`/`after_run`, which need a session.
"""

from __future__ import annotations

import collections
import os
import time
from collections.abc import Callable
from typing import Any

__all__ = [
    "FacadeHook",
    "LoggingTensorHook",
    "StepCounterHook",
    "StopAtStepHook",
    "make_early_stopping_hook",
    "read_eval_metrics",
    "stop_if_higher_hook",
    "stop_if_lower_hook",
    "stop_if_no_decrease_hook",
    "stop_if_no_increase_hook",
]


class FacadeHook:
    """What the facade's train loop calls; the base class does nothing."""

    def begin(self, estimator: Any, step: int) -> None:
        """Training starts at global step `step`."""

    def next_step(self, step: int) -> int | None:
        """The next global step after `step` at which this hook must see the model."""
        return None

    def after_steps(self, step: int) -> bool:
        """The loop reached global step `step`; True stops training."""
        return False

    def end(self, step: int) -> None:
        """Training ended at global step `step`."""


class StopAtStepHook(FacadeHook):
    """`tf.compat.v1.train.StopAtStepHook`."""

    def __init__(self, num_steps: int | None = None, last_step: int | None = None) -> None:
        if num_steps is None and last_step is None:
            raise ValueError("One of num_steps or last_step must be specified.")
        if num_steps is not None and last_step is not None:
            raise ValueError("Only one of num_steps or last_step can be specified.")
        self._num_steps = num_steps
        self._last_step = last_step

    def begin(self, estimator: Any, step: int) -> None:
        if self._last_step is None:
            assert self._num_steps is not None
            self._last_step = step + self._num_steps

    def next_step(self, step: int) -> int | None:
        return self._last_step

    def after_steps(self, step: int) -> bool:
        return self._last_step is not None and step >= self._last_step


class StepCounterHook(FacadeHook):
    """`tf.compat.v1.train.StepCounterHook`: `global_step/sec` logged (and written to
    `output_dir` when given) every `every_n_steps` steps or `every_n_secs` seconds."""

    def __init__(
        self,
        every_n_steps: int | None = 100,
        every_n_secs: float | None = None,
        output_dir: str | None = None,
        summary_writer: Any = None,
    ) -> None:
        if (every_n_steps is None) == (every_n_secs is None):
            raise ValueError("exactly one of every_n_steps and every_n_secs should be provided.")
        self._every_n_steps = every_n_steps
        self._every_n_secs = every_n_secs
        self._output_dir = output_dir
        self._writer = summary_writer
        self._last: tuple[float, int] | None = None

    def begin(self, estimator: Any, step: int) -> None:
        import tensorflow as tf

        if self._writer is None and self._output_dir:
            self._writer = tf.summary.create_file_writer(self._output_dir)
        self._last = None

    def next_step(self, step: int) -> int | None:
        if self._every_n_steps is None:
            return None
        return (step // self._every_n_steps + 1) * self._every_n_steps

    def after_steps(self, step: int) -> bool:
        import tensorflow as tf

        from est2tpu.runtime.tf2._core import scalar_summary as _scalar_summary

        now = time.perf_counter()
        if self._last is None:
            self._last = (now, step)  # the clock starts after the first call (tracing)
            return False
        last_time, last_step = self._last
        due = (
            step - last_step >= self._every_n_steps
            if self._every_n_steps is not None
            else now - last_time >= (self._every_n_secs or 0)
        )
        if due and step > last_step and now > last_time:
            rate = (step - last_step) / (now - last_time)
            self._last = (now, step)
            tf.get_logger().info("global_step/sec: %g", rate)
            if self._writer is not None:  # TF1 wrote a summary only with an output_dir
                with self._writer.as_default():
                    _scalar_summary("global_step/sec", rate, step)
                self._writer.flush()
        return False


class LoggingTensorHook(FacadeHook):
    """`tf.compat.v1.train.LoggingTensorHook`: logs `tensors` (a dict tag -> tensor or
    tensor name, or a list of either) at the first step of each `train()` call, then every
    `every_n_iter` steps (or `every_n_secs` seconds), as TF1 does. The values are those of
    the step's own forward pass (TF1 fetched them in the step's session run). Tensors are
    the model_fn's: pass the hook in `EstimatorSpec(training_hooks=...)`, or name them
    (`name=` of the op in the model_fn) in `train(hooks=...)`. `at_end` logs the values of
    the last step (TF1 ran the tensors once more after it)."""

    def __init__(
        self,
        tensors: Any,
        every_n_iter: int | None = None,
        every_n_secs: float | None = None,
        at_end: bool = False,
        formatter: Callable[[dict[str, Any]], str] | None = None,
    ) -> None:
        only_log_at_end = at_end and every_n_iter is None and every_n_secs is None
        if not only_log_at_end and (every_n_iter is None) == (every_n_secs is None):
            raise ValueError(
                "either at_end and/or exactly one of every_n_iter and every_n_secs "
                "must be provided."
            )
        if every_n_iter is not None and every_n_iter <= 0:
            raise ValueError(f"invalid every_n_iter={every_n_iter}.")
        if isinstance(tensors, dict):
            self.tag_order = sorted(tensors)
            self.tensors = dict(tensors)
        else:
            # A list of names or tensors: TF1 tagged each by itself; a tensor (unhashable
            # here, and named anew at each trace) is tagged by its place in the list.
            tags = [
                item if isinstance(item, str) else f"tensor_{i}" for i, item in enumerate(tensors)
            ]
            self.tag_order = tags
            self.tensors = dict(zip(tags, tensors))
        self._every_n_iter = every_n_iter
        self._every_n_secs = every_n_secs
        self._only_at_end = only_log_at_end
        self._at_end = at_end
        self._formatter = formatter
        self._start = 0
        self._last_iter: int | None = None
        self._last_time = 0.0
        self._values: dict[str, Any] | None = None

    def begin(self, estimator: Any, step: int) -> None:
        self._start = step
        self._last_iter = None
        self._values = None

    def wants(self, step: int) -> int | None:
        """The global step after which the tensors must be fetched (from that step's run)."""
        if self._only_at_end:
            return None
        if self._last_iter is None:
            return self._start + 1  # iteration 0: the first run of the call
        if self._every_n_iter is not None:
            return self._start + self._last_iter + self._every_n_iter + 1
        if time.monotonic() - self._last_time >= (self._every_n_secs or 0):
            return step + 1
        return None

    def next_step(self, step: int) -> int | None:
        return self.wants(step)

    def fetched(self, step: int, values: dict[str, Any]) -> None:
        """The tensors' values from the run that ended at global step `step`."""
        self._values = values
        if step == self.wants(step - 1):
            self._log(step - 1 - self._start, values)

    def end(self, step: int) -> None:
        if self._at_end and self._values is not None:
            self._log(step - 1 - self._start, self._values)

    def _log(self, iteration: int, values: dict[str, Any]) -> None:
        import numpy as np
        import tensorflow as tf

        now = time.monotonic()
        elapsed = None if self._last_iter is None else now - self._last_time
        self._last_iter, self._last_time = iteration, now
        with np.printoptions(suppress=True):
            if self._formatter:
                tf.get_logger().info(self._formatter(values))
                return
            stats = ", ".join(f"{tag} = {values[tag]!s}" for tag in self.tag_order)
        if elapsed is not None:
            tf.get_logger().info("%s (%.3f sec)", stats, elapsed)
        else:
            tf.get_logger().info("%s", stats)


def read_eval_metrics(eval_dir: str) -> dict[int, dict[str, float]]:
    """`{global_step: {tag: value}}` of the summaries in `eval_dir`'s event files, sorted
    by step (TensorFlow's `read_eval_metrics`, reading TF2 tensor summaries too)."""
    import tensorflow as tf

    metrics: dict[int, dict[str, float]] = collections.defaultdict(dict)
    if not tf.io.gfile.isdir(eval_dir):
        return {}
    for name in sorted(tf.io.gfile.listdir(eval_dir)):
        if "tfevents" not in name:
            continue
        for event in tf.compat.v1.train.summary_iterator(os.path.join(eval_dir, name)):
            if not event.HasField("summary"):
                continue
            for value in event.summary.value:
                if value.HasField("simple_value"):
                    metrics[event.step][value.tag] = value.simple_value
                elif value.HasField("tensor"):
                    metrics[event.step][value.tag] = float(tf.make_ndarray(value.tensor))
    return dict(sorted(metrics.items()))


class _EarlyStopping(FacadeHook):
    def __init__(
        self,
        should_stop_fn: Callable[[], bool],
        run_every_secs: float | None,
        run_every_steps: int | None,
    ) -> None:
        if (run_every_secs is None) == (run_every_steps is None):
            raise ValueError("Exactly one of run_every_secs and run_every_steps must be provided.")
        self._should_stop_fn = should_stop_fn
        self._every_secs = run_every_secs
        self._every_steps = run_every_steps
        self._last_time = 0.0
        self._last_step: int | None = None

    def begin(self, estimator: Any, step: int) -> None:
        self._last_time = time.monotonic()
        self._last_step = None

    def next_step(self, step: int) -> int | None:
        if self._every_steps is None:
            return None
        if self._last_step is None:
            return step + 1
        return max(step + 1, self._last_step + self._every_steps)

    def after_steps(self, step: int) -> bool:
        if self._every_steps is not None:
            # TF's SecondOrStepTimer: the first check comes at once, the next ones
            # every `run_every_steps` steps after it.
            due = self._last_step is None or step >= self._last_step + self._every_steps
        else:
            due = self._last_step is None or (
                time.monotonic() - self._last_time >= (self._every_secs or 0)
            )
        if not due:
            return False
        self._last_step, self._last_time = step, time.monotonic()
        return bool(self._should_stop_fn())


def make_early_stopping_hook(
    estimator: Any,
    should_stop_fn: Callable[[], bool],
    run_every_secs: float | None = 60,
    run_every_steps: int | None = None,
) -> FacadeHook:
    """`tf.estimator.experimental.make_early_stopping_hook`."""
    return _EarlyStopping(should_stop_fn, run_every_secs, run_every_steps)


def _stop_if_threshold_crossed(
    estimator: Any,
    metric_name: str,
    threshold: float,
    higher_is_better: bool,
    eval_dir: str | None,
    min_steps: int,
    run_every_secs: float | None,
    run_every_steps: int | None,
) -> FacadeHook:
    eval_dir = eval_dir or estimator.eval_dir()

    def stop() -> bool:
        for step, metrics in read_eval_metrics(eval_dir).items():
            if step < min_steps or metric_name not in metrics:
                continue
            value = metrics[metric_name]
            if (value > threshold) if higher_is_better else (value < threshold):
                return True
        return False

    return make_early_stopping_hook(estimator, stop, run_every_secs, run_every_steps)


def _stop_if_no_metric_improvement(
    estimator: Any,
    metric_name: str,
    max_steps_without_improvement: int,
    higher_is_better: bool,
    eval_dir: str | None,
    min_steps: int,
    run_every_secs: float | None,
    run_every_steps: int | None,
) -> FacadeHook:
    eval_dir = eval_dir or estimator.eval_dir()

    def stop() -> bool:
        best_value: float | None = None
        best_step = 0
        for step, metrics in read_eval_metrics(eval_dir).items():
            if step < min_steps or metric_name not in metrics:
                continue
            value = metrics[metric_name]
            better = (value > best_value) if higher_is_better else (value < best_value)  # type: ignore[operator]
            if best_value is None or better:
                best_value, best_step = value, step
            if step - best_step >= max_steps_without_improvement:
                return True
        return False

    return make_early_stopping_hook(estimator, stop, run_every_secs, run_every_steps)


def stop_if_higher_hook(
    estimator: Any,
    metric_name: str,
    threshold: float,
    eval_dir: str | None = None,
    min_steps: int = 0,
    run_every_secs: float | None = 60,
    run_every_steps: int | None = None,
) -> FacadeHook:
    """`tf.estimator.experimental.stop_if_higher_hook`."""
    return _stop_if_threshold_crossed(
        estimator,
        metric_name,
        threshold,
        True,
        eval_dir,
        min_steps,
        run_every_secs,
        run_every_steps,
    )


def stop_if_lower_hook(
    estimator: Any,
    metric_name: str,
    threshold: float,
    eval_dir: str | None = None,
    min_steps: int = 0,
    run_every_secs: float | None = 60,
    run_every_steps: int | None = None,
) -> FacadeHook:
    """`tf.estimator.experimental.stop_if_lower_hook`."""
    return _stop_if_threshold_crossed(
        estimator,
        metric_name,
        threshold,
        False,
        eval_dir,
        min_steps,
        run_every_secs,
        run_every_steps,
    )


def stop_if_no_increase_hook(
    estimator: Any,
    metric_name: str,
    max_steps_without_increase: int,
    eval_dir: str | None = None,
    min_steps: int = 0,
    run_every_secs: float | None = 60,
    run_every_steps: int | None = None,
) -> FacadeHook:
    """`tf.estimator.experimental.stop_if_no_increase_hook`."""
    return _stop_if_no_metric_improvement(
        estimator,
        metric_name,
        max_steps_without_increase,
        True,
        eval_dir,
        min_steps,
        run_every_secs,
        run_every_steps,
    )


def stop_if_no_decrease_hook(
    estimator: Any,
    metric_name: str,
    max_steps_without_decrease: int,
    eval_dir: str | None = None,
    min_steps: int = 0,
    run_every_secs: float | None = 60,
    run_every_steps: int | None = None,
) -> FacadeHook:
    """`tf.estimator.experimental.stop_if_no_decrease_hook`."""
    return _stop_if_no_metric_improvement(
        estimator,
        metric_name,
        max_steps_without_decrease,
        False,
        eval_dir,
        min_steps,
        run_every_secs,
        run_every_steps,
    )


def hook_tensors(spec: Any, user_hooks: Any) -> dict[str, Any]:
    """The tensors of the logging hooks, in a train step's trace: those train() got (tensor
    names, looked up in this trace) and those the model_fn returned (this trace's copies)."""
    import tensorflow as tf

    graph = tf.compat.v1.get_default_graph()
    tensors: dict[str, Any] = {}
    for i, hook in enumerate(user_hooks):
        for tag, tensor in hook.tensors.items():
            if isinstance(tensor, str):
                tensor = graph.get_tensor_by_name(tensor if ":" in tensor else f"{tensor}:0")
            tensors[f"hook{i}/{tag}"] = tf.identity(tensor)
    for i, hook in enumerate(spec.training_hooks or ()):
        if isinstance(hook, LoggingTensorHook):
            for tag, tensor in hook.tensors.items():
                tensors[f"spec{i}/{tag}"] = tf.identity(tensor)
    return tensors


class StepCounter:
    """TF1's `StepCounterHook`: `global_step/sec` every `every` steps.

    The clock starts at the first update (after the first execution, so tracing is not
    counted); each later update at least `every` steps on gives the rate since the last one.
    """

    def __init__(self, every: int | None) -> None:
        self._every = every
        self._last: tuple[float, int] | None = None

    def update(self, step: int) -> float | None:
        if not self._every:
            return None
        now = time.perf_counter()
        if self._last is None:
            self._last = (now, step)
            return None
        last_time, last_step = self._last
        if step - last_step < self._every or now <= last_time:
            return None
        self._last = (now, step)
        return (step - last_step) / (now - last_time)
