"""End to end: a model_fn whose train op comes from a module-level def that builds the TF1
optimizer and calls `minimize` itself (`train_op = make_train_op(loss, ...)`).

The migrated def wraps its optimizer in CrossShardOptimizer under a keyword-only flag that
the model_fn passes as params["use_tpu"]; on CPU (TPUEstimator, use_tpu=False) the flag is
False and the program must train to exactly the metrics of the original under a plain
Estimator.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from est2tpu.api import migrate_source
from est2tpu.ftypes import Status

HELPER = """\
def make_train_op(loss, learning_rate):
    optimizer = tf.compat.v1.train.AdamOptimizer(learning_rate)
    return optimizer.minimize(
        loss, global_step=tf.compat.v1.train.get_or_create_global_step()
    )


make = make_train_op


"""

THROUGH_THE_HELPER = """\
    train_op = make(loss, params["learning_rate"])"""


def _program(harness: ModuleType) -> str:
    text: str = harness.train_op_program(THROUGH_THE_HELPER)
    return text.replace("def model_fn(", HELPER + "def model_fn(", 1)


def test_the_helper_wraps_its_optimizer_under_the_flag(harness: ModuleType) -> None:
    result = migrate_source(_program(harness), path="train.py")
    assert result.status is not Status.FAILED, result.error
    assert [f.rule_id for f in result.findings] == []
    assert result.new_text is not None
    assert "def make_train_op(loss, learning_rate, *, use_tpu=False):" in result.new_text
    assert "optimizer = tf.compat.v1.tpu.CrossShardOptimizer(optimizer)" in result.new_text
    assert 'make(loss, params["learning_rate"], use_tpu=params["use_tpu"])' in result.new_text
    again = migrate_source(result.new_text, path="train.py")
    assert again.new_text == result.new_text


@pytest.mark.tf
def test_the_migrated_helper_trains_like_the_original(harness: ModuleType, tmp_path: Path) -> None:
    original = _program(harness)
    migrated = migrate_source(original, path="train.py")
    assert migrated.new_text is not None
    assert "TPUEstimator" in migrated.new_text
    runs = harness.run_programs({"original": original, "migrated": migrated.new_text}, tmp_path)
    assert runs["migrated"].metrics == runs["original"].metrics
    assert runs["migrated"].metrics["global_step"] == 60
