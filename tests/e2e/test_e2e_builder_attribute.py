"""The batch size an argparse attribute passes to a builder function, end to end.

`estimator = build_estimator(args.model_dir, args.batch_size, ...)` and the input functions
batch by `args.batch_size` where the builder is called: the Estimator is built in the
builder, where `args` is unknown, but the same value is its parameter `batch_size`. The
TPUEstimator gets `train_batch_size=batch_size` and `eval_batch_size=batch_size`, and on
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

SEED = 7
RNG = np.random.RandomState(SEED)
X = RNG.normal(size=(200, 3)).astype(np.float32)
Y = (X.sum(axis=1, keepdims=True) > 0).astype(np.float32)


def model_fn(features, labels, mode, params):
    hidden = tf.compat.v1.layers.dense(features, 8, activation=tf.nn.relu)
    logits = tf.compat.v1.layers.dense(hidden, 1)
    loss = tf.compat.v1.losses.sigmoid_cross_entropy(labels, logits)
    if mode == tf.estimator.ModeKeys.EVAL:
        return tf.estimator.EstimatorSpec(mode, loss=loss)
    optimizer = tf.compat.v1.train.GradientDescentOptimizer(params["learning_rate"])
    train_op = optimizer.minimize(loss, tf.compat.v1.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def build_estimator(model_dir, batch_size, base_learning_rate):
    params = {"learning_rate": base_learning_rate * batch_size / 20}
    config = tf.estimator.RunConfig(tf_random_seed=SEED)
    return tf.estimator.Estimator(model_fn, model_dir=model_dir, config=config, params=params)


def make_input_fn(batch_size, training):
    def input_fn():
        dataset = tf.data.Dataset.from_tensor_slices((X, Y))
        if training:
            dataset = dataset.shuffle(200, seed=SEED).repeat()
        return dataset.batch(batch_size)

    return input_fn


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--results", required=True)
    parser.add_argument("--batch_size", type=int, default=20)
    parser.add_argument("--learning_rate", type=float, default=0.1)
    args = parser.parse_args()
    tf.keras.utils.set_random_seed(SEED)
    estimator = build_estimator(args.model_dir, args.batch_size, args.learning_rate)
    estimator.train(make_input_fn(args.batch_size, True), steps=40)
    metrics = estimator.evaluate(make_input_fn(args.batch_size, False), steps=3)
    with open(args.results, "w") as f:
        json.dump({"metrics": {k: float(v) for k, v in metrics.items()},
                   "loss": float(metrics["loss"]), "predictions": []}, f)


if __name__ == "__main__":
    main()
"""


def _migrated() -> str:
    result = migrate_source(PROGRAM, path="train.py")
    assert [f.render() for f in result.findings] == []
    assert result.new_text is not None
    return result.new_text


def test_the_builders_parameter_is_the_constructors_batch_size() -> None:
    migrated = _migrated()
    assert "train_batch_size=batch_size" in migrated
    assert "eval_batch_size=batch_size" in migrated
    again = migrate_source(migrated, path="train.py")
    assert again.status is Status.UNCHANGED, again.new_text
    assert again.findings == []


@pytest.mark.tf
def test_builder_attribute_program_trains_like_the_original(
    harness: ModuleType, tmp_path: Path
) -> None:
    runs = harness.run_programs({"original": PROGRAM, "migrated": _migrated()}, tmp_path)
    assert runs["migrated"].metrics == runs["original"].metrics
    assert runs["migrated"].metrics["global_step"] == 40
