"""A model_fn that hands its params on as keyword arguments (`helper(..., **params)`), end to end.

Real trainers wrap TensorFlow's canned model function this way (`_dnn_model_fn(
features=features, labels=labels, mode=mode, **params)`), and so does this program. TPUEstimator's params hold its own keys as well
('batch_size', 'use_tpu', and 'context' on TPU), so the migrated call would raise TypeError
(an unexpected keyword argument) unless those keys are filtered out where params are passed
on. The Estimator's params here are a dict literal without them: TPU007 filters them, and on
CPU the migrated program trains to exactly the original's metrics.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from est2tpu.api import migrate_source
from est2tpu.ftypes import Status

PROGRAM = """\
import argparse
import json

import numpy as np
import tensorflow as tf
from tensorflow_estimator.python.estimator.canned import head as head_lib
from tensorflow_estimator.python.estimator.canned.dnn import _dnn_model_fn

SEED = 7
RNG = np.random.RandomState(SEED)
X = RNG.normal(size=(200, 3)).astype(np.float32)
Y = (X.sum(axis=1, keepdims=True) > 0).astype(np.int64)


def build_estimator(model_dir, hidden_units, learning_rate):
    # TensorFlow's own canned DNN model function (private, as in real trainers that wrap it):
    # its parameters are head, hidden_units, feature_columns, optimizer, ..., use_tpu.
    model_params = {
        "head": head_lib._binary_logistic_head_with_sigmoid_cross_entropy_loss(),
        "feature_columns": [tf.feature_column.numeric_column("x", shape=[3])],
        "hidden_units": hidden_units,
        "optimizer": tf.compat.v1.train.AdagradOptimizer(learning_rate),
    }

    def _model_fn(features, labels, mode, params):
        return _dnn_model_fn(features=features, labels=labels, mode=mode, **params)

    return tf.estimator.Estimator(
        model_fn=_model_fn,
        model_dir=model_dir,
        config=tf.estimator.RunConfig(tf_random_seed=SEED),
        params=model_params,
    )


def input_fn():
    dataset = tf.data.Dataset.from_tensor_slices(({"x": X}, Y))
    return dataset.shuffle(200, seed=SEED).repeat().batch(20)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--results", required=True)
    args = parser.parse_args()
    tf.keras.utils.set_random_seed(SEED)
    estimator = build_estimator(args.model_dir, [8, 4], 0.1)
    estimator.train(input_fn, steps=40)
    metrics = estimator.evaluate(input_fn, steps=3)
    with open(args.results, "w") as f:
        json.dump({"metrics": {k: float(v) for k, v in metrics.items()},
                   "loss": float(metrics["loss"]), "predictions": []}, f)


if __name__ == "__main__":
    main()
"""

FILTERED = (
    '**{key: value for key, value in params.items() if key not in ("batch_size", "use_tpu", '
    '"context")}'
)


def _migrated() -> str:
    result = migrate_source(PROGRAM, path="train.py")
    assert [f.render() for f in result.findings] == []
    assert result.new_text is not None
    return result.new_text


def test_the_splat_passes_on_the_programs_keys_only() -> None:
    migrated = _migrated()
    assert FILTERED in migrated
    assert "**params" not in migrated
    again = migrate_source(migrated, path="train.py")
    assert again.status is Status.UNCHANGED, again.new_text
    assert again.findings == []


@pytest.mark.tf
def test_params_splat_program_trains_like_the_original(harness: ModuleType, tmp_path: Path) -> None:
    runs = harness.run_programs({"original": PROGRAM, "migrated": _migrated()}, tmp_path)
    assert runs["migrated"].metrics == runs["original"].metrics
    assert runs["migrated"].metrics["global_step"] == 40
