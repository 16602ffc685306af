"""The `tf2` target's runtime: an Estimator-shaped facade for current TensorFlow.

Code migrated with `est2tpu migrate --target tf2` keeps its model_fn and its
train/evaluate/predict calls and imports this package instead of `tf.estimator`::

    import est2tpu.runtime.tf2 as tf2_runtime
    estimator = tf2_runtime.Estimator(model_fn, model_dir, config=tf2_runtime.RunConfig(...))

Importing it is cheap: TensorFlow is imported when an Estimator is built or a facade
function runs. `strategy()` picks TPUStrategy, MultiWorkerMirroredStrategy (TF_CONFIG),
MirroredStrategy (several GPUs, or `EST2TPU_CPU_REPLICAS=N` logical CPUs) or the default.
"""

from __future__ import annotations

from est2tpu.runtime.tf2 import export, layers, losses, metrics, train
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
from est2tpu.runtime.tf2._strategy import resolve_strategy, strategy

__all__ = [
    "Estimator",
    "EstimatorSpec",
    "EvalSpec",
    "FinalExporter",
    "GraphKeys",
    "LatestExporter",
    "ModeKeys",
    "RunConfig",
    "TrainSpec",
    "export",
    "get_collection",
    "layers",
    "losses",
    "metrics",
    "resolve_strategy",
    "strategy",
    "train",
    "train_and_evaluate",
]
