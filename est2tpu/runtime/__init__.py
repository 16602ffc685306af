"""Runtime shim imported by code that est2tpu generates; depends on TensorFlow only.

Importing this module is cheap: TensorFlow is imported lazily, inside the
functions, so that ``import est2tpu.runtime`` costs nothing until the
generated program actually builds a ``RunConfig``.  It never imports libcst,
typer or rich (a test in a fresh interpreter proves it).

The functions here target TensorFlow <= 2.15 with ``tensorflow-estimator``
(the ``tpu-estimator`` target): they run unchanged on a Cloud TPU and on
CPU/GPU, where no TPU is found and ``use_tpu()`` is ``False``.
"""

from __future__ import annotations

__all__ = [
    "cluster_resolver",
    "ensure_tpu_run_config",
    "eval_steps",
    "evaluate",
    "iterations_per_loop",
    "model_to_estimator",
    "numpy_input_fn",
    "optimize_loss_clip_gradients",
    "optimize_loss_learning_rate",
    "pandas_input_fn",
    "params_without_batch_size",
    "premade",
    "run_config",
    "sized_input_fn",
    "train_and_evaluate",
    "use_tpu",
]

# The Keras builder, the train/evaluate loop and the input functions live in
# their own modules; like this one they import TensorFlow only when called.
from est2tpu.runtime import premade
from est2tpu.runtime._tpu import (
    cluster_resolver,
    ensure_tpu_run_config,
    iterations_per_loop,
    params_without_batch_size,
    run_config,
    use_tpu,
)
from est2tpu.runtime.inputs import (
    eval_steps,
    evaluate,
    numpy_input_fn,
    pandas_input_fn,
    sized_input_fn,
)
from est2tpu.runtime.keras import model_to_estimator
from est2tpu.runtime.loop import train_and_evaluate
from est2tpu.runtime.optimizers import (
    optimize_loss_clip_gradients,
    optimize_loss_learning_rate,
)
