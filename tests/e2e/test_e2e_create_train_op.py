"""End to end: a model_fn training through `tf.contrib.training.create_train_op`.

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

BATCH_NORM = """\
    # its moving averages are updated through UPDATE_OPS, and used in evaluation
    hidden = tf.compat.v1.layers.batch_normalization(
        hidden, training=mode == tf.estimator.ModeKeys.TRAIN
    )
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


def test_create_train_op_is_expanded_without_findings(harness: ModuleType) -> None:
    source = harness.train_op_program(WITH_CREATE_TRAIN_OP, BATCH_NORM)
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
    migrated = migrate_source(
        harness.train_op_program(WITH_CREATE_TRAIN_OP, BATCH_NORM), path="train.py"
    )
    assert migrated.new_text is not None
    programs = {
        "migrated": migrated.new_text,
        "by_hand": harness.train_op_program(BY_HAND, BATCH_NORM),
        "without_update_ops": harness.train_op_program(WITHOUT_UPDATE_OPS, BATCH_NORM),
    }
    runs = harness.run_programs(programs, tmp_path)
    assert runs["migrated"].metrics == runs["by_hand"].metrics
    assert runs["migrated"].metrics["global_step"] == 60
    # the UPDATE_OPS dependency is what this measures: without it evaluation differs
    assert runs["without_update_ops"].metrics != runs["by_hand"].metrics
