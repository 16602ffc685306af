"""An input function made by a method of the project's data class, end to end.

`dataset = DataSet(data_dir)` in the task module, the class in another module, and
`TrainSpec(input_fn=dataset.train_input_fn(args.train_batch_size))` /
`EvalSpec(input_fn=dataset.eval_input_fn(args.eval_batch_size))` run by
`train_and_evaluate`, as a public cifar10 example has it: the methods' nested input functions
take `params` and batch by `params["batch_size"]`, the TPUEstimator gets both sizes, and on CPU
the migrated program trains to exactly the original's metrics (an unseeded shuffle too).
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from est2tpu.api import migrate_paths
from est2tpu.ftypes import Status
from est2tpu.textio import encode
from est2tpu.writer import write_atomic

DATA = """\
import numpy as np
import tensorflow as tf


class DataSet(object):
    def __init__(self, seed):
        rng = np.random.RandomState(seed)
        self.x = rng.normal(size=(120, 3)).astype(np.float32)
        self.y = (self.x.sum(axis=1) > 0).astype(np.int32)

    def train_input_fn(self, batch_size):
        def input_fn():
            dataset = tf.data.Dataset.from_tensor_slices(({"x": self.x[:100]}, self.y[:100]))
            return dataset.shuffle(100).repeat().batch(batch_size)

        return input_fn

    def eval_input_fn(self, batch_size):
        def input_fn():
            dataset = tf.data.Dataset.from_tensor_slices(({"x": self.x[100:]}, self.y[100:]))
            return dataset.batch(batch_size)

        return input_fn
"""

TASK = """\
import argparse
import json

import tensorflow as tf

from data import DataSet

SEED = 5


def model_fn(features, labels, mode, params):
    hidden = tf.compat.v1.layers.dense(features["x"], 8, activation=tf.nn.relu)
    logits = tf.compat.v1.layers.dense(hidden, 2)
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    if mode == tf.estimator.ModeKeys.TRAIN:
        optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.1)
        train_op = optimizer.minimize(loss, tf.compat.v1.train.get_global_step())
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)
    accuracy = tf.compat.v1.metrics.accuracy(labels, tf.argmax(logits, 1))
    return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops={"accuracy": accuracy})


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--results", required=True)
    parser.add_argument("--train-batch-size", type=int, default=16)
    parser.add_argument("--eval-batch-size", type=int, default=5)
    args = parser.parse_args()
    tf.keras.utils.set_random_seed(SEED)
    estimator = tf.estimator.Estimator(
        model_fn, model_dir=args.model_dir, config=tf.estimator.RunConfig(tf_random_seed=SEED)
    )
    dataset = DataSet(SEED)
    train_spec = tf.estimator.TrainSpec(
        input_fn=dataset.train_input_fn(args.train_batch_size), max_steps=30
    )
    eval_spec = tf.estimator.EvalSpec(input_fn=dataset.eval_input_fn(args.eval_batch_size))
    metrics, _ = tf.estimator.train_and_evaluate(estimator, train_spec, eval_spec)
    with open(args.results, "w") as f:
        json.dump({"metrics": {k: float(v) for k, v in metrics.items()},
                   "loss": float(metrics["loss"]), "predictions": []}, f)


if __name__ == "__main__":
    main()
"""


def _project(root: Path, migrate: bool) -> Path:
    root.mkdir(parents=True)
    (root / "data.py").write_text(DATA)
    (root / "task.py").write_text(TASK)
    if migrate:
        for result in migrate_paths([root]):
            assert [f.render() for f in result.findings] == [], result.path
            assert result.status is Status.CHANGED, (result.path, result.error)
            assert result.new_text is not None
            write_atomic(result.path, encode(result.new_text, result.encoding, result.bom))
    return root


def test_the_methods_input_functions_batch_by_params(tmp_path: Path) -> None:
    root = _project(tmp_path / "p", migrate=True)
    data, task = (root / "data.py").read_text(), (root / "task.py").read_text()
    assert data.count("def input_fn(params):") == 2
    assert data.count('params["batch_size"]') == 2
    assert "train_batch_size=args.train_batch_size" in task
    assert "eval_batch_size=args.eval_batch_size" in task
    for again in migrate_paths([root]):
        assert again.status is Status.UNCHANGED and again.findings == [], again.path


@pytest.mark.tf
def test_factory_method_program_trains_like_the_original(
    harness: ModuleType, tmp_path: Path
) -> None:
    runs = {
        name: harness.run_project(
            _project(tmp_path / name / "project", migrate=name == "migrated"),
            ("task.py",),
            tmp_path / name / "run",
        )
        for name in ("original", "migrated")
    }
    assert runs["migrated"].metrics == runs["original"].metrics
    assert runs["migrated"].metrics["global_step"] == 30
