"""End to end: a model_fn reached through a lambda that binds an argument of its
own (`model_fn=lambda features, labels, mode: regression_model_fn(features, labels, mode,
HPARAMS)`). TPUEstimator calls no model_fn without `params`, so the migrated lambda takes
them and passes them on; on CPU the migrated program must train exactly like the original.
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

SEED = 11
HPARAMS = argparse.Namespace(hidden_units=8, learning_rate=0.05)


def make_data(n, seed):
    rng = np.random.RandomState(seed)
    x = rng.normal(size=(n, 3)).astype(np.float32)
    y = (x @ np.array([[1.0], [-0.5], [2.0]], np.float32) - 0.2).astype(np.float32)
    return x, y


TRAIN_X, TRAIN_Y = make_data(256, SEED)
EVAL_X, EVAL_Y = make_data(64, SEED + 1)


def train_input_fn():
    data = tf.data.Dataset.from_tensor_slices(({"x": TRAIN_X}, TRAIN_Y))
    return data.shuffle(256, seed=SEED).repeat().batch(32)


def eval_input_fn():
    return tf.data.Dataset.from_tensor_slices(({"x": EVAL_X}, EVAL_Y)).batch(32)


def regression_model_fn(features, labels, mode, hparams):
    hidden = tf.compat.v1.layers.dense(features["x"], hparams.hidden_units, activation=tf.nn.relu)
    predictions = tf.compat.v1.layers.dense(hidden, 1)
    loss = tf.compat.v1.losses.mean_squared_error(labels, predictions)
    optimizer = tf.compat.v1.train.AdamOptimizer(hparams.learning_rate)
    train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_or_create_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--results", required=True)
    args = parser.parse_args()
    tf.keras.utils.set_random_seed(SEED)
    estimator = tf.estimator.Estimator(
        model_fn=lambda features, labels, mode: regression_model_fn(features, labels, mode, HPARAMS),
        model_dir=args.model_dir,
        config=tf.estimator.RunConfig(tf_random_seed=SEED),
    )
    estimator.train(train_input_fn, steps=40)
    metrics = estimator.evaluate(eval_input_fn, steps=2)
    with open(args.results, "w") as f:
        json.dump({"metrics": {k: float(v) for k, v in metrics.items()},
                   "loss": float(metrics["loss"]), "predictions": []}, f)


if __name__ == "__main__":
    main()
"""


def _migrated() -> str:
    result = migrate_source(PROGRAM, path="train.py")
    assert result.status is not Status.FAILED, result.error
    assert [f.render() for f in result.findings] == []
    assert result.new_text is not None
    return result.new_text


def test_lambda_wrapped_model_fn_is_migrated_through_the_lambda() -> None:
    migrated = _migrated()
    assert "tf.compat.v1.estimator.tpu.TPUEstimator(" in migrated
    assert (
        "lambda features, labels, mode, params: regression_model_fn(\n            features,\n"
        "            labels,\n            mode,\n            HPARAMS,\n            params=params,\n"
        in migrated
    )
    assert "def regression_model_fn(features, labels, mode, hparams, params):" in migrated
    assert "tf.compat.v1.estimator.tpu.TPUEstimatorSpec(" in migrated
    assert "CrossShardOptimizer(optimizer)" in migrated
    assert migrate_source(migrated, path="train.py").new_text == migrated


@pytest.mark.tf
def test_lambda_wrapped_model_fn_trains_like_the_original(
    harness: ModuleType, tmp_path: Path
) -> None:
    runs = harness.run_programs({"original": PROGRAM, "migrated": _migrated()}, tmp_path)
    assert runs["migrated"].metrics == runs["original"].metrics
    assert runs["migrated"].metrics["global_step"] == 40
