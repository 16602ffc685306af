"""A model_fn whose loss has one element but not a scalar's shape (`reduce_mean(..., axis=0)`
of a [batch, 1] error, or a per-example loss of a batch of one, as TensorFlow's own migration
guide writes) trains with `--target tf2` as it did on TF 2.15, whose EstimatorSpec reshaped
such a loss to a scalar. A loss of several elements is refused, as TF1 refused it."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from est2tpu.api import migrate_source
from est2tpu.ftypes import Target

PROGRAM = """\
import argparse
import json

import numpy as np
import tensorflow as tf

SEED = 13
RNG = np.random.RandomState(SEED)
X = RNG.normal(size=(96, 2)).astype(np.float32)
Y = (X @ np.array([[1.0], [-2.0]], np.float32)).astype(np.float32)


def model_fn(features, labels, mode):
    predictions = tf.compat.v1.layers.dense(features, 1)
    loss = tf.reduce_mean(tf.square(predictions - labels), axis=0)
    if mode == tf.estimator.ModeKeys.EVAL:
        return tf.estimator.EstimatorSpec(mode, loss=loss)
    step = tf.compat.v1.train.get_global_step()
    train_op = tf.compat.v1.train.AdagradOptimizer(0.3).minimize(loss, global_step=step)
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--results", required=True)
    args = parser.parse_args()
    tf.keras.utils.set_random_seed(SEED)
    estimator = tf.estimator.Estimator(
        model_fn, model_dir=args.model_dir, config=tf.estimator.RunConfig(tf_random_seed=SEED)
    )
    estimator.train(lambda: tf.data.Dataset.from_tensor_slices((X, Y)).repeat().batch(16), steps=30)
    metrics = estimator.evaluate(lambda: tf.data.Dataset.from_tensor_slices((X, Y)).batch(32))
    with open(args.results, "w") as f:
        json.dump({"metrics": {k: float(v) for k, v in metrics.items()},
                   "loss": float(metrics["loss"]), "predictions": []}, f)


if __name__ == "__main__":
    main()
"""

_PROBE = """
import json
import tensorflow as tf
import est2tpu.runtime.tf2 as est

def model_fn(features, labels, mode):
    predictions = est.layers.dense(features, 1)
    loss = tf.reduce_sum(tf.square(predictions - labels), axis=1)
    train_op = est.train.GradientDescentOptimizer(0.1).minimize(
        loss, global_step=est.train.get_global_step())
    return est.EstimatorSpec(mode, loss=loss, train_op=train_op)

def input_fn():
    return tf.data.Dataset.from_tensors((tf.ones([4, 2]), tf.ones([4, 1]))).repeat()

try:
    est.Estimator(model_fn).train(input_fn, steps=1)
    print(json.dumps("trained"))
except ValueError as e:
    print(json.dumps(str(e)))
"""


@pytest.mark.tf
def test_loss_of_one_element_trains_like_tf1(
    harness: ModuleType, tfcur: str, tmp_path: Path
) -> None:
    result = migrate_source(PROGRAM, target=Target.TF2, path="train.py")
    assert [f.render() for f in result.findings] == []
    assert result.new_text is not None
    runs = {}
    for name, text, python, env in (
        ("original", PROGRAM, harness.tf_python(), None),
        ("migrated", result.new_text, tfcur, None),
        (
            "migrated_xla_8_replicas",
            result.new_text,
            tfcur,
            {"EST2TPU_JIT_COMPILE": "1", "EST2TPU_CPU_REPLICAS": "8"},
        ),
    ):
        project = tmp_path / name / "project"
        project.mkdir(parents=True)
        (project / "train.py").write_text(text)
        runs[name] = harness.run_project(
            project, ("train.py",), tmp_path / name / "run", python=python, env=env, timeout=600
        ).results["metrics"]
    assert runs["original"]["global_step"] == 30
    for name in ("migrated", "migrated_xla_8_replicas"):
        assert runs[name]["global_step"] == 30, name
        assert runs[name]["loss"] == pytest.approx(runs["original"]["loss"], rel=0.05), name
    # Several elements: TF1's error, not a silent sum or mean.
    assert "Loss must be scalar" in harness.run_tf_json(_PROBE, python=tfcur, timeout=300)
