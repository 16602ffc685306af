"""End to end: a model_fn training through `tf.contrib.layers.optimize_loss`.

TensorFlow 2.15 has no `tf.contrib`, so the original cannot run there. What it trains is
known: TF 1.15's optimize_loss with a named optimizer, a float learning rate and a float
`clip_gradients` computes the gradients of the loss, clips them by global norm and applies
them. The migrated program (TPUEstimator, use_tpu=False) must train to exactly the metrics
of that written by hand as an expert writes it (`AdamOptimizer(lr)`, `compute_gradients`,
`clip_by_global_norm`, `apply_gradients`) under a plain Estimator.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from est2tpu.api import migrate_source
from est2tpu.ftypes import Status

WITH_OPTIMIZE_LOSS = """\
    train_op = tf.contrib.layers.optimize_loss(
        loss,
        tf.compat.v1.train.get_global_step(),
        learning_rate=params["learning_rate"],
        optimizer="Adam",
        clip_gradients=0.5,
    )"""

BY_HAND = """\
    optimizer = tf.compat.v1.train.AdamOptimizer(params["learning_rate"])
    gradients, variables = zip(*optimizer.compute_gradients(loss))
    gradients, _ = tf.clip_by_global_norm(gradients, 0.5)
    train_op = optimizer.apply_gradients(
        zip(gradients, variables), global_step=tf.compat.v1.train.get_global_step()
    )"""


def test_optimize_loss_is_expanded_without_findings(harness: ModuleType) -> None:
    source = harness.train_op_program(WITH_OPTIMIZE_LOSS)
    result = migrate_source(source, path="train.py")
    assert result.status is not Status.FAILED, result.error
    assert [f.rule_id for f in result.findings] == []
    assert result.new_text is not None
    assert "optimize_loss" not in result.new_text
    assert "CrossShardOptimizer(optimizer)" in result.new_text
    assert "tf.clip_by_global_norm(" in result.new_text


@pytest.mark.tf
def test_optimize_loss_trains_like_the_hand_port(harness: ModuleType, tmp_path: Path) -> None:
    migrated = migrate_source(harness.train_op_program(WITH_OPTIMIZE_LOSS), path="train.py")
    assert migrated.new_text is not None
    runs = harness.run_programs(
        {"migrated": migrated.new_text, "by_hand": harness.train_op_program(BY_HAND)}, tmp_path
    )
    assert runs["migrated"].metrics == runs["by_hand"].metrics
    assert runs["migrated"].metrics["global_step"] == 60
