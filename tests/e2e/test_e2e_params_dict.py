"""A user's own params["batch_size"] in a dict bound to a name, end to end.

`params = {..., "batch_size": hparams.batch_size}` then `Estimator(..., params=params)`, a
shape real trainers use (the model_fn reads other keys of the dict). TPUEstimator refuses a
params holding the reserved key `batch_size` (ValueError at construction): TPU007 takes the
key out of the dict and gives its value to the constructor's batch sizes, which TPUEstimator
hands back in params["batch_size"]. On CPU the migrated program trains to exactly the
original's metrics.
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
    hidden = tf.compat.v1.layers.dense(features, params["units"], activation=tf.nn.relu)
    logits = tf.compat.v1.layers.dense(hidden, 1)
    loss = tf.compat.v1.losses.sigmoid_cross_entropy(labels, logits)
    if mode == tf.estimator.ModeKeys.EVAL:
        return tf.estimator.EstimatorSpec(mode, loss=loss)
    optimizer = tf.compat.v1.train.GradientDescentOptimizer(params["learning_rate"])
    train_op = optimizer.minimize(loss, tf.compat.v1.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def make_input_fn(batch_size, training):
    def input_fn():
        dataset = tf.data.Dataset.from_tensor_slices((X, Y))
        if training:
            dataset = dataset.shuffle(200, seed=SEED).repeat()
        return dataset.batch(batch_size)

    return input_fn


def shuffled_batches(params):
    dataset = tf.data.Dataset.from_tensor_slices((X, Y)).shuffle(params["buffer"], seed=SEED)
    return dataset.repeat().batch(params["batch_size"])


def run(hparams):
PARAMS
    estimator = tf.estimator.Estimator(
        model_fn,
        model_dir=hparams.model_dir,
        config=tf.estimator.RunConfig(tf_random_seed=SEED),
        params=params,
    )
    estimator.train(TRAIN_INPUT, steps=STEPS)
    return estimator.evaluate(make_input_fn(hparams.batch_size, False), steps=3)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--results", required=True)
    parser.add_argument("--batch_size", type=int, default=24)
    parser.add_argument("--units", type=int, default=8)
    parser.add_argument("--learning_rate", type=float, default=0.1)
    args = parser.parse_args()
    tf.keras.utils.set_random_seed(SEED)
    metrics = run(args)
    with open(args.results, "w") as f:
        json.dump({"metrics": {k: float(v) for k, v in metrics.items()},
                   "loss": float(metrics["loss"]), "predictions": []}, f)


if __name__ == "__main__":
    main()
"""


# (params line, training input, training steps)
Variant = tuple[str, str, str]
# `params` holds the batch size for the Estimator's sake only: the key leaves the literal.
LITERAL: Variant = (
    '    params = {"units": 8, "learning_rate": 0.1, "batch_size": hparams.batch_size}',
    "make_input_fn(hparams.batch_size, True)",
    "40",
)
# Every argument, batch_size among them, and the steps read it too: the dict keeps the key,
# the TPUEstimator gets a copy without it.
ALL_ARGS: Variant = (
    "    params = vars(hparams)",
    "make_input_fn(hparams.batch_size, True)",
    '960 // params["batch_size"]',
)
# The training input hands the dict to a helper that batches by its "batch_size": migrated,
# the lambda hands on the TPUEstimator's params (the same keys, and its batch size).
HELPER: Variant = (
    (
        '    params = {"units": 8, "learning_rate": 0.1, "batch_size": hparams.batch_size,'
        ' "buffer": 200}'
    ),
    "lambda: shuffled_batches(params)",
    "40",
)


def _program(variant: Variant) -> str:
    params, train_input, steps = variant
    text = PROGRAM.replace("PARAMS", params).replace("TRAIN_INPUT", train_input)
    return text.replace("STEPS", steps)


def _migrated(variant: Variant) -> str:
    result = migrate_source(_program(variant), path="train.py")
    assert [f.render() for f in result.findings] == []
    assert result.new_text is not None
    return result.new_text


def test_the_reserved_key_leaves_the_dict_for_the_constructor() -> None:
    migrated = _migrated(LITERAL)
    assert '"batch_size"' not in migrated.split("def run(")[1].split("estimator =")[0]
    for mode in ("train", "eval", "predict"):
        assert f"{mode}_batch_size=hparams.batch_size" in migrated
    again = migrate_source(migrated, path="train.py")
    assert again.status is Status.UNCHANGED, again.new_text
    assert again.findings == []


def test_a_dict_of_all_arguments_reaches_the_tpu_estimator_without_the_key() -> None:
    migrated = _migrated(ALL_ARGS)
    assert "params = vars(hparams)" in migrated
    assert 'params={key: value for key, value in params.items() if key != "batch_size"}' in migrated
    again = migrate_source(migrated, path="train.py")
    assert again.status is Status.UNCHANGED, again.new_text
    assert again.findings == []


def test_a_helper_batching_by_the_estimators_params_gets_the_tpu_estimators() -> None:
    migrated = _migrated(HELPER)
    assert "lambda params: shuffled_batches(params)" in migrated
    assert 'train_batch_size=params["batch_size"]' in migrated
    again = migrate_source(migrated, path="train.py")
    assert again.status is Status.UNCHANGED, again.new_text
    assert again.findings == []


@pytest.mark.tf
@pytest.mark.parametrize(
    "variant", [LITERAL, ALL_ARGS, HELPER], ids=["literal", "all_args", "helper"]
)
def test_params_dict_program_trains_like_the_original(
    harness: ModuleType, tmp_path: Path, variant: Variant
) -> None:
    runs = harness.run_programs(
        {"original": _program(variant), "migrated": _migrated(variant)}, tmp_path
    )
    assert runs["migrated"].metrics == runs["original"].metrics
    assert runs["migrated"].metrics["global_step"] == 40
