"""The `tf2` target's runtime: an Estimator-shaped facade for current TensorFlow.

Code migrated with `est2tpu migrate --target tf2` keeps its model_fn and its
train/evaluate/predict calls and imports this package instead of `tf.estimator`::

    import est2tpu.runtime.tf2 as tf2_runtime
    estimator = tf2_runtime.Estimator(model_fn, model_dir, config=tf2_runtime.RunConfig(...))

Importing it is cheap: TensorFlow is imported when an Estimator is built or a facade
function runs. `strategy()` picks TPUStrategy, MultiWorkerMirroredStrategy (TF_CONFIG),
MirroredStrategy (several GPUs, or `EST2TPU_CPU_REPLICAS=N` logical CPUs, configured when
this package is imported) or the default.

Keras: a migrated program was written for Keras 2, which `tf.keras` was up to TF 2.15. On
current TensorFlow `tf.keras` is Keras 3 unless `TF_USE_LEGACY_KERAS=1` when it is first
used, so importing this package sets `TF_USE_LEGACY_KERAS=1` (unless it is already set)
when tf-keras is installed: the program's own `tf.keras` is then the tf-keras the facade
builds with. TensorFlow reads the variable at the program's first `tf.keras` access, which
comes after the imports.
"""

from __future__ import annotations

import os
import sys


def _tf_keras_installed() -> bool:
    """Whether tf-keras is on sys.path, without importing it (this import must stay light)."""
    for entry in sys.path:
        try:
            if os.path.isdir(os.path.join(entry or ".", "tf_keras")):
                return True
        except (TypeError, OSError):
            continue
    return False


if "TF_USE_LEGACY_KERAS" not in os.environ and _tf_keras_installed():
    os.environ["TF_USE_LEGACY_KERAS"] = "1"

from est2tpu.runtime.tf2 import export, inputs, layers, losses, metrics, premade, train
from est2tpu.runtime.tf2._core import GraphKeys, ModeKeys, get_collection
from est2tpu.runtime.tf2._estimator import (
    Estimator,
    EstimatorSpec,
    EvalSpec,
    FinalExporter,
    LatestExporter,
    RunConfig,
    TrainSpec,
    train_and_evaluate,
)
from est2tpu.runtime.tf2._keras_estimator import KerasEstimator, model_to_estimator
from est2tpu.runtime.tf2._strategy import (
    configure_cpu_replicas,
    cpu_replicas,
    resolve_strategy,
    strategy,
)
from est2tpu.runtime.tf2.premade import (
    DNNClassifier,
    DNNRegressor,
    LinearClassifier,
    LinearRegressor,
)

if cpu_replicas() > 1:
    # The test stand-in for an N-core TPU must split the CPU before TensorFlow runs anything,
    # and a model_to_estimator program runs TensorFlow (builds its model) before it calls
    # the facade. Only with the variable set does importing the facade import TensorFlow.
    configure_cpu_replicas()

__all__ = [
    "DNNClassifier",
    "DNNRegressor",
    "Estimator",
    "EstimatorSpec",
    "EvalSpec",
    "FinalExporter",
    "GraphKeys",
    "KerasEstimator",
    "LatestExporter",
    "LinearClassifier",
    "LinearRegressor",
    "ModeKeys",
    "RunConfig",
    "TrainSpec",
    "export",
    "get_collection",
    "inputs",
    "layers",
    "losses",
    "metrics",
    "model_to_estimator",
    "premade",
    "resolve_strategy",
    "strategy",
    "train",
    "train_and_evaluate",
]
