"""`tf.estimator.RunConfig` for the tf2 facade (TensorFlow's estimator/run_config.py)."""

from __future__ import annotations

import os
from typing import Any

JIT_ENV = "EST2TPU_JIT_COMPILE"
STEPS_PER_EXECUTION_ENV = "EST2TPU_STEPS_PER_EXECUTION"


class RunConfig:
    """`tf.estimator.RunConfig`: the settings the facade honours, the rest accepted and kept.

    Honoured: model_dir, tf_random_seed, save_summary_steps, save_checkpoints_steps,
    save_checkpoints_secs, keep_checkpoint_max, log_step_count_steps (a `global_step/sec`
    summary and log line, as TF1's StepCounterHook), train_distribute and eval_distribute
    (the facade's strategy, see `Estimator`). New:
    `steps_per_execution` (train steps per `tf.function` call, TPUEstimator's
    iterations_per_loop; default `$EST2TPU_STEPS_PER_EXECUTION` or 100) and `jit_compile`
    (compile the train step with XLA; default `$EST2TPU_JIT_COMPILE=1`).
    """

    def __init__(
        self,
        model_dir: str | None = None,
        tf_random_seed: int | None = None,
        save_summary_steps: int = 100,
        save_checkpoints_steps: int | None = None,
        save_checkpoints_secs: int | None = None,
        session_config: Any = None,
        keep_checkpoint_max: int = 5,
        keep_checkpoint_every_n_hours: int = 10000,
        log_step_count_steps: int = 100,
        train_distribute: Any = None,
        device_fn: Any = None,
        protocol: Any = None,
        eval_distribute: Any = None,
        experimental_distribute: Any = None,
        experimental_max_worker_delay_secs: Any = None,
        session_creation_timeout_secs: int = 7200,
        checkpoint_save_graph_def: bool = True,
        steps_per_execution: int | None = None,
        jit_compile: bool | None = None,
    ) -> None:
        self.train_distribute = train_distribute
        self.eval_distribute = eval_distribute
        self.model_dir = model_dir
        self.tf_random_seed = tf_random_seed
        self.save_summary_steps = save_summary_steps
        if save_checkpoints_steps is None and save_checkpoints_secs is None:
            save_checkpoints_secs = 600
        self.save_checkpoints_steps = save_checkpoints_steps
        self.save_checkpoints_secs = save_checkpoints_secs
        self.session_config = session_config
        self.keep_checkpoint_max = keep_checkpoint_max
        self.keep_checkpoint_every_n_hours = keep_checkpoint_every_n_hours
        self.log_step_count_steps = log_step_count_steps
        if steps_per_execution is None:
            steps_per_execution = int(os.environ.get(STEPS_PER_EXECUTION_ENV, "100"))
        self.steps_per_execution = max(1, steps_per_execution)
        if jit_compile is None:
            jit_compile = os.environ.get(JIT_ENV) == "1"
        self.jit_compile = jit_compile

    def replace(self, **kwargs: Any) -> RunConfig:
        new = RunConfig.__new__(RunConfig)
        new.__dict__.update(self.__dict__)
        for key, value in kwargs.items():
            if not hasattr(new, key):
                raise ValueError(f"RunConfig has no setting {key!r}")
            setattr(new, key, value)
        return new
