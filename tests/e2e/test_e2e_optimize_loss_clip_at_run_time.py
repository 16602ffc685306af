"""Issue 18.3a end to end: `optimize_loss(clip_gradients=hp.clip_norm)`, a value est2tpu
cannot see in the source (as in magenta's onsets_frames model_fn).

TF 1.15's optimize_loss decided when the model_fn ran: a float clips by global norm, a
callable is given the (gradient, variable) pairs, None does not clip. The migrated model_fn
asks `tpu_runtime.optimize_loss_clip_gradients` to take the same branch. TensorFlow 2.15 has no
`tf.contrib`, so the original cannot run there: the migrated program (TPUEstimator,
use_tpu=False) must train to exactly the metrics of the expert's hand port under a plain
Estimator, for each kind of value.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from est2tpu.api import migrate_source
from est2tpu.ftypes import Status

PROGRAM = """\
import argparse
import glob
import json
import os

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
    hp = params["hp"]
    hidden = tf.compat.v1.layers.dense(features["x"], hp.units, activation=tf.nn.relu)
    predictions = tf.compat.v1.layers.dense(hidden, 1)
    loss = tf.compat.v1.losses.mean_squared_error(labels, predictions)
    if mode == tf.estimator.ModeKeys.EVAL:
        return tf.estimator.EstimatorSpec(mode, loss=loss)
TRAIN_OP
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def summary_tags(model_dir):
    found = set()
    for path in glob.glob(os.path.join(model_dir, "events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            found.update(value.tag for value in event.summary.value)
    return sorted(found)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--results", required=True)
    args = parser.parse_args()
    tf.keras.utils.set_random_seed(SEED)
    hparams = argparse.Namespace(units=8, learning_rate=0.05, clip_norm=CLIP_NORM)
    estimator = tf.estimator.Estimator(
        model_fn,
        model_dir=args.model_dir,
        config=tf.estimator.RunConfig(tf_random_seed=SEED),
        params={"hp": hparams},
    )
    estimator.train(train_input_fn, steps=60)
    metrics = estimator.evaluate(eval_input_fn, steps=2)
    with open(args.results, "w") as f:
        json.dump({"metrics": {k: float(v) for k, v in metrics.items()},
                   "loss": float(metrics["loss"]), "predictions": [],
                   "summary_tags": summary_tags(args.model_dir)}, f)


if __name__ == "__main__":
    main()
"""

WITH_OPTIMIZE_LOSS = """\
    train_op = tf.contrib.layers.optimize_loss(
        name="training",
        loss=loss,
        global_step=tf.compat.v1.train.get_or_create_global_step(),
        learning_rate=hp.learning_rate,
        clip_gradients=hp.clip_norm,
        optimizer="Adam",
    )"""

# What TF 1.15's optimize_loss ran for each kind of clip_gradients, written by hand.
BY_HAND = {
    "float": """\
    optimizer = tf.compat.v1.train.AdamOptimizer(hp.learning_rate)
    gradients, variables = zip(*optimizer.compute_gradients(loss))
    gradients, _ = tf.clip_by_global_norm(gradients, hp.clip_norm)
    train_op = optimizer.apply_gradients(
        zip(gradients, variables), global_step=tf.compat.v1.train.get_global_step()
    )""",
    "callable": """\
    optimizer = tf.compat.v1.train.AdamOptimizer(hp.learning_rate)
    train_op = optimizer.apply_gradients(
        hp.clip_norm(optimizer.compute_gradients(loss)),
        global_step=tf.compat.v1.train.get_global_step(),
    )""",
    "none": """\
    optimizer = tf.compat.v1.train.AdamOptimizer(hp.learning_rate)
    train_op = optimizer.apply_gradients(
        optimizer.compute_gradients(loss), global_step=tf.compat.v1.train.get_global_step()
    )""",
}

CLIP_NORMS = {
    "float": "0.25",
    "callable": "lambda pairs: [(tf.clip_by_value(g, -0.05, 0.05), v) for g, v in pairs]",
    "none": "None",
}


def program(train_op: str, kind: str) -> str:
    return PROGRAM.replace("TRAIN_OP", train_op).replace("CLIP_NORM", CLIP_NORMS[kind])


def test_clip_read_at_run_time_is_expanded_without_a_finding() -> None:
    result = migrate_source(program(WITH_OPTIMIZE_LOSS, "float"), path="train.py")
    assert result.status is not Status.FAILED, result.error
    # the summaries TF wrote, the clipped norm's under its test, move to host_call (TPU009)
    assert result.findings == []
    assert result.new_text is not None
    assert "optimize_loss(" not in result.new_text
    assert "tpu_runtime.optimize_loss_clip_gradients(hp.clip_norm, gradients)" in result.new_text
    assert 'if params["use_tpu"]:' in result.new_text


def test_the_shim_dispatches_as_tensorflow_did_without_a_tensor() -> None:
    from est2tpu.runtime import optimize_loss_clip_gradients

    pairs = [("gradient", "variable")]
    assert optimize_loss_clip_gradients(None, pairs) is pairs
    assert optimize_loss_clip_gradients(lambda p: p[::-1], [1, 2]) == [2, 1]
    # TF 1.15: "Unknown type %s for clip_gradients" for an int, a string, ...
    with pytest.raises(ValueError, match="Unknown type <class 'int'> for clip_gradients"):
        optimize_loss_clip_gradients(3, pairs)


@pytest.mark.tf
@pytest.mark.parametrize("kind", sorted(BY_HAND))
def test_clip_read_at_run_time_trains_like_the_hand_port(
    harness: ModuleType, tmp_path: Path, kind: str
) -> None:
    migrated = migrate_source(program(WITH_OPTIMIZE_LOSS, kind), path="train.py")
    assert migrated.new_text is not None
    runs = harness.run_programs(
        {"migrated": migrated.new_text, "by_hand": program(BY_HAND[kind], kind)}, tmp_path
    )
    assert runs["migrated"].metrics == runs["by_hand"].metrics
    assert runs["migrated"].metrics["global_step"] == 60
    # optimize_loss's summaries, the clipped norm only when clip_gradients is not None
    tags = set(runs["migrated"].results["summary_tags"])
    assert {"training/loss", "training/global_norm/gradient_norm"} <= tags, tags
    assert ("training/global_norm/clipped_gradient_norm" in tags) == (kind != "none"), tags
