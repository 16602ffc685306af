"""The Estimator's params are a dict that holds the batch size its input functions read
(`params=hparams`, `hparams["batch_size"]`), as magenta's onsets-and-frames trainer does
with an HParams: TPUEstimator refuses params holding its reserved `batch_size`, so the
migration hands it a copy without the key. The migrated program (TPUEstimator,
use_tpu=False) must train and evaluate to exactly the original's metrics."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from est2tpu.api import migrate_source
from est2tpu.ftypes import Status

TRAIN_OP = """\
    optimizer = tf.compat.v1.train.GradientDescentOptimizer(params["learning_rate"])
    train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())"""


def _program(harness: ModuleType) -> str:
    text = harness.train_op_program(TRAIN_OP)
    text = text.replace('params={"learning_rate": 0.05},', "params=hparams,").replace(
        "    estimator = tf.estimator.Estimator(",
        # built by a call (as an HParams is), not a dict literal whose key could leave it
        "    hparams = dict(learning_rate=0.05, batch_size=16)\n"
        "    estimator = tf.estimator.Estimator(",
    )
    text = text.replace(".repeat().batch(32)", ".repeat().batch(batch_size)").replace(
        "def train_input_fn():", "def train_input_fn(batch_size):"
    )
    return text.replace(
        "estimator.train(train_input_fn, steps=60)",
        'estimator.train(lambda: train_input_fn(hparams["batch_size"]), steps=60)',
    )


def test_params_lose_the_reserved_key(harness: ModuleType) -> None:
    result = migrate_source(_program(harness), path="train.py")
    assert result.status is not Status.FAILED, result.error
    assert [f.rule_id for f in result.findings] == []
    assert result.new_text is not None
    assert "params=tpu_runtime.params_without_batch_size(hparams)" in result.new_text
    assert 'train_batch_size=hparams["batch_size"]' in result.new_text


@pytest.mark.tf
def test_params_holding_the_batch_size_train_like_the_original(
    harness: ModuleType, tmp_path: Path
) -> None:
    original = _program(harness)
    migrated = migrate_source(original, path="train.py").new_text
    assert migrated is not None
    runs = harness.run_programs({"original": original, "migrated": migrated}, tmp_path)
    assert runs["migrated"].metrics == runs["original"].metrics
    assert runs["migrated"].metrics["global_step"] == 60
