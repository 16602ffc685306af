"""An Estimator built by a project function from a params parameter whose callers hand it
params holding 'batch_size' (corpus: clv_lifetime_value_trainer's `get_estimator(...,
params=hparams)`, an HParams built with batch_size).

TPUEstimator reserves that key: est2tpu used to convert the Estimator all the same, and the
migrated program raised ValueError when it built the TPUEstimator, with no finding there.
Nothing proves which batch size each input function reads from those params, so TPU007 now
leaves the Estimator (and its model_fn) as they are and says why at the constructor; the
migrated program must train exactly as the original does on TF 2.15.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from est2tpu.api import migrate_source
from tests.e2e.harness import REGRESSION_DATA, REGRESSION_IMPORTS

PROGRAM = (
    REGRESSION_IMPORTS
    + REGRESSION_DATA
    + """\
def batches(params, x, y, training):
    dataset = tf.data.Dataset.from_tensor_slices(({"x": x}, y))
    if training:
        dataset = dataset.shuffle(256, seed=SEED).repeat()
    return dataset.batch(params["batch_size"])


def model_fn(features, labels, mode, params):
    hidden = tf.compat.v1.layers.dense(features["x"], params["units"], activation=tf.nn.relu)
    predictions = tf.compat.v1.layers.dense(hidden, 1)
    loss = tf.compat.v1.losses.mean_squared_error(labels, predictions)
    optimizer = tf.compat.v1.train.AdamOptimizer(0.05)
    train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def make_estimator(model_dir, params):
    config = tf.estimator.RunConfig(tf_random_seed=SEED)
    return tf.estimator.Estimator(model_fn, model_dir=model_dir, config=config, params=params)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--results", required=True)
    args = parser.parse_args()
    tf.keras.utils.set_random_seed(SEED)
    params = {"units": 8, "batch_size": 16}
    estimator = make_estimator(args.model_dir, params)
    estimator.train(lambda: batches(params, TRAIN_X, TRAIN_Y, True), steps=30)
    metrics = estimator.evaluate(lambda: batches(params, EVAL_X, EVAL_Y, False), steps=2)
    with open(args.results, "w") as f:
        json.dump({"metrics": {k: float(v) for k, v in metrics.items()},
                   "loss": float(metrics["loss"]), "predictions": []}, f)


if __name__ == "__main__":
    main()
"""
)


def test_the_estimator_is_refused_at_its_constructor() -> None:
    result = migrate_source(PROGRAM, path="train.py")
    assert result.new_text is not None
    assert "TPUEstimator" not in result.new_text
    at_ctor = [f for f in result.findings if f.rule_id == "TPU007"]
    assert len(at_ctor) == 1, result.findings
    assert (
        at_ctor[0].position.line
        == PROGRAM.splitlines().index(
            "    return tf.estimator.Estimator(model_fn, model_dir=model_dir, config=config, "
            "params=params)"
        )
        + 1
    )
    assert "'batch_size', a key TPUEstimator reserves" in at_ctor[0].message


@pytest.mark.tf
def test_the_migrated_program_trains_as_the_original(harness: ModuleType, tmp_path: Path) -> None:
    migrated = migrate_source(PROGRAM, path="train.py")
    assert migrated.new_text is not None
    runs = harness.run_programs({"migrated": migrated.new_text, "original": PROGRAM}, tmp_path)
    assert runs["migrated"].metrics == runs["original"].metrics
    assert runs["migrated"].metrics["global_step"] == 30
