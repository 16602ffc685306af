"""`tf.compat.v1.layers` objects made in a model_fn, read after their call (`dense.kernel`,
`dense.weights[0]`, `dense.trainable_variables`), train like the original with
`--target tf2`.

TensorFlow's own migration guide (logging_stop_hook) logs `dense.weights[0]` of a
`tf1.layers.Dense` made in the model_fn. The facade's class-form layer hands out its Keras
layer's attributes once a call has made it. The program penalizes the two layers' kernels
read through the objects, logs a kernel norm and a bias through a LoggingTensorHook given
a list of tensors (tagged by their names, as TF1 tagged them by themselves), and
checks in the model_fn that the objects list their four variables.
"""

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

SEED = 11
RNG = np.random.RandomState(SEED)
TRAIN_X = RNG.normal(size=(256, 3)).astype(np.float32)
TRAIN_Y = (TRAIN_X @ np.array([[2.0], [-1.0], [0.5]], np.float32) + 0.1).astype(np.float32)


def model_fn(features, labels, mode):
    hidden = tf.compat.v1.layers.Dense(8, activation=tf.nn.relu)
    out = tf.compat.v1.layers.Dense(1)
    predictions = out(hidden(features["x"]))
    if len(hidden.trainable_variables) + len(out.weights) != 4:
        raise ValueError("the layer objects do not list their variables")
    penalty = 0.05 * tf.reduce_sum(tf.square(out.kernel)) + 0.05 * tf.reduce_sum(
        tf.square(hidden.weights[0])
    )
    loss = tf.compat.v1.losses.mean_squared_error(labels, predictions) + penalty
    if mode == tf.estimator.ModeKeys.EVAL:
        return tf.estimator.EstimatorSpec(
            mode, loss=loss, eval_metric_ops={"penalty": tf.compat.v1.metrics.mean(penalty)}
        )
    train_op = tf.compat.v1.train.AdamOptimizer(0.05).minimize(
        loss, global_step=tf.compat.v1.train.get_global_step()
    )
    norm = tf.identity(tf.norm(hidden.kernel))
    hook = tf.compat.v1.train.LoggingTensorHook([norm, out.bias], every_n_iter=20)
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op, training_hooks=[hook])


def input_fn():
    data = tf.data.Dataset.from_tensor_slices(({"x": TRAIN_X}, TRAIN_Y))
    return data.shuffle(256, seed=SEED).repeat().batch(32)


def eval_input_fn():
    return tf.data.Dataset.from_tensor_slices(({"x": TRAIN_X}, TRAIN_Y)).batch(64)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--results", required=True)
    args = parser.parse_args()
    tf.keras.utils.set_random_seed(SEED)
    estimator = tf.estimator.Estimator(
        model_fn, model_dir=args.model_dir, config=tf.estimator.RunConfig(tf_random_seed=SEED)
    )
    estimator.train(input_fn, steps=60)
    metrics = estimator.evaluate(eval_input_fn)
    with open(args.results, "w") as f:
        json.dump({"metrics": {k: float(v) for k, v in metrics.items()},
                   "loss": float(metrics["loss"]), "predictions": []}, f)


if __name__ == "__main__":
    main()
"""


@pytest.mark.tf
def test_layer_objects_read_after_their_call_train_like_tf1(
    harness: ModuleType, tfcur: str, tmp_path: Path
) -> None:
    result = migrate_source(PROGRAM, target=Target.TF2, path="train.py")
    assert [f.render() for f in result.findings] == []
    migrated = result.new_text
    assert migrated is not None and "tf2_runtime.layers.Dense(8" in migrated
    runs = {}
    for name, text, python, env in (
        ("original", PROGRAM, harness.tf_python(), None),
        ("migrated", migrated, tfcur, None),
        (
            "migrated_xla_8_replicas",
            migrated,
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
    original = runs["original"]
    assert original["global_step"] == 60
    for name in ("migrated", "migrated_xla_8_replicas"):
        assert runs[name]["global_step"] == 60, name
        for key in ("loss", "penalty"):
            assert runs[name][key] == pytest.approx(original[key], rel=0.05), (name, key)
