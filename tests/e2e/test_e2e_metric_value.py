"""End to end: a metric's value used before the dict (`perplexity =
tf.exp(log_ppl)` with `log_ppl, log_ppl_update = tf.compat.v1.metrics.mean(...)`, as the TF
Probability examples compute their perplexity).

The migrated program (TPUEstimator, use_tpu=False) must evaluate to exactly the original's
metrics under TF 2.15. Passed into metric_fn as a tensor, that value was the model_fn's copy
of the metric, which nothing updates: exp(0) = 1.0 whatever the model.
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
    predictions = tf.compat.v1.layers.dense(features["x"], 1)
    loss = tf.compat.v1.losses.mean_squared_error(labels, predictions)
    log_error = tf.math.log1p(tf.abs(labels - predictions))
    (log_error_mean, log_error_update) = tf.compat.v1.metrics.mean(log_error)
    geometric_error = tf.exp(log_error_mean)
    optimizer = tf.compat.v1.train.AdamOptimizer(params["learning_rate"])
    train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
    return tf.estimator.EstimatorSpec(
        mode,
        loss=loss,
        train_op=train_op,
        eval_metric_ops={"geometric_error": (geometric_error, log_error_update)},
    )


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
    estimator.train(train_input_fn, steps=40)
    metrics = estimator.evaluate(eval_input_fn, steps=2)
    with open(args.results, "w") as f:
        json.dump({"metrics": {k: float(v) for k, v in metrics.items()},
                   "loss": float(metrics["loss"]), "predictions": []}, f)


if __name__ == "__main__":
    main()
"""


def test_metric_value_is_computed_in_metric_fn() -> None:
    result = migrate_source(PROGRAM, path="train.py")
    assert result.status is not Status.FAILED, result.error
    assert [f.rule_id for f in result.findings] == []
    assert result.new_text is not None
    metric_fn = result.new_text[result.new_text.index("def metric_fn") :]
    assert "geometric_error = tf.exp(log_error_mean)" in metric_fn


@pytest.mark.tf
def test_metric_value_evaluates_like_the_original(harness: ModuleType, tmp_path: Path) -> None:
    migrated = migrate_source(PROGRAM, path="train.py")
    assert migrated.new_text is not None
    runs = harness.run_programs({"original": PROGRAM, "migrated": migrated.new_text}, tmp_path)
    assert runs["migrated"].metrics == runs["original"].metrics
    assert runs["original"].metrics["geometric_error"] != 1.0
