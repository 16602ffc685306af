"""Issue 18.3c end to end: a model_fn training through `tf.contrib.training.create_train_op`.

TensorFlow 2.15 has no `tf.contrib`, so the original cannot run there. What it trains is
known: TF 1.15's create_train_op makes the loss wait for the UPDATE_OPS (here a batch
normalization's moving averages, which evaluation reads), computes the gradients over the
trainable variables and applies them with the global step. The migrated program
(TPUEstimator, use_tpu=False) must train to exactly the metrics of that written by hand as
an expert writes it (the UPDATE_OPS dependency and `minimize`) under a plain Estimator.
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


def make_data(n, seed):
    rng = np.random.RandomState(seed)
    x = rng.normal(size=(n, 3)).astype(np.float32)
    y = (x @ np.array([[1.5], [-2.0], [0.5]], np.float32) + 0.3).astype(np.float32)
    return x, y


TRAIN_X, TRAIN_Y = make_data(256, SEED)
EVAL_X, EVAL_Y = make_data(64, SEED + 1)


def train_input_fn():
    data = tf.data.Dataset.from_tensor_slices(({"x": TRAIN_X}, TRAIN_Y))
    return data.shuffle(256, seed=SEED).repeat().batch(32)


def eval_input_fn():
    return tf.data.Dataset.from_tensor_slices(({"x": EVAL_X}, EVAL_Y)).batch(32)


def model_fn(features, labels, mode, params):
    hidden = tf.compat.v1.layers.dense(features["x"], 8, activation=tf.nn.relu)
    # its moving averages are updated through UPDATE_OPS, and used in evaluation
    hidden = tf.compat.v1.layers.batch_normalization(
        hidden, training=mode == tf.estimator.ModeKeys.TRAIN
    )
    predictions = tf.compat.v1.layers.dense(hidden, 1)
    loss = tf.compat.v1.losses.mean_squared_error(labels, predictions)
    if mode == tf.estimator.ModeKeys.EVAL:
        return tf.estimator.EstimatorSpec(mode, loss=loss)
TRAIN_OP
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--results", required=True)
    args = parser.parse_args()
    tf.keras.utils.set_random_seed(SEED)
    estimator = tf.estimator.Estimator(
        model_fn,
        model_dir=args.model_dir,
        config=tf.estimator.RunConfig(tf_random_seed=SEED),
        params={"learning_rate": 0.05},
    )
    estimator.train(train_input_fn, steps=60)
    metrics = estimator.evaluate(eval_input_fn, steps=2)
    with open(args.results, "w") as f:
        json.dump({"metrics": {k: float(v) for k, v in metrics.items()},
                   "loss": float(metrics["loss"]), "predictions": []}, f)


if __name__ == "__main__":
    main()
"""

WITH_CREATE_TRAIN_OP = """\
    optimizer = tf.compat.v1.train.AdamOptimizer(params["learning_rate"])
    train_op = tf.contrib.training.create_train_op(loss, optimizer)"""

BY_HAND = """\
    optimizer = tf.compat.v1.train.AdamOptimizer(params["learning_rate"])
    update_ops = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.UPDATE_OPS)
    with tf.control_dependencies(update_ops):
        train_op = optimizer.minimize(
            loss, global_step=tf.compat.v1.train.get_or_create_global_step()
        )"""

WITHOUT_UPDATE_OPS = """\
    optimizer = tf.compat.v1.train.AdamOptimizer(params["learning_rate"])
    train_op = optimizer.minimize(
        loss, global_step=tf.compat.v1.train.get_or_create_global_step()
    )"""


def test_create_train_op_is_expanded_without_findings() -> None:
    source = PROGRAM.replace("TRAIN_OP", WITH_CREATE_TRAIN_OP)
    result = migrate_source(source, path="train.py")
    assert result.status is not Status.FAILED, result.error
    assert [f.rule_id for f in result.findings] == []
    assert result.new_text is not None
    assert "contrib" not in result.new_text
    assert "CrossShardOptimizer(optimizer)" in result.new_text
    again = migrate_source(result.new_text, path="train.py")
    assert again.new_text == result.new_text


@pytest.mark.tf
def test_create_train_op_trains_like_the_hand_port(harness: ModuleType, tmp_path: Path) -> None:
    migrated = migrate_source(PROGRAM.replace("TRAIN_OP", WITH_CREATE_TRAIN_OP), path="train.py")
    assert migrated.new_text is not None
    runs = {}
    for name, text in (("migrated", migrated.new_text),
                       ("by_hand", PROGRAM.replace("TRAIN_OP", BY_HAND)),
                       ("without_update_ops", PROGRAM.replace("TRAIN_OP", WITHOUT_UPDATE_OPS))):  # fmt: skip
        project = tmp_path / name / "project"
        project.mkdir(parents=True)
        (project / "train.py").write_text(text)
        runs[name] = harness.run_project(project, ("train.py",), tmp_path / name / "run")
    assert runs["migrated"].metrics == runs["by_hand"].metrics
    assert runs["migrated"].metrics["global_step"] == 60
    # the UPDATE_OPS dependency is what this measures: without it evaluation differs
    assert runs["without_update_ops"].metrics != runs["by_hand"].metrics
