"""TF1's LOSSES collection (`add_loss`, `get_total_loss`) migrated with `--target tf2`
trains like the original.

The model_fn adds two batch means with `tf.compat.v1.losses.add_loss`, builds a weighted
`absolute_difference` (a TF1 loss joins the collection by default; its denominator, the
non-zero weights, differs between replicas), regularizes a layer with an L2 kernel
regularizer, and minimizes `tf.compat.v1.losses.get_total_loss()`, whose TF1 value is the
sum of those three losses and the regularization loss. The original runs on TF 2.15 (an
Estimator graph, TF1's collections); the migrated program runs on current TensorFlow on one
device and on MirroredStrategy over 4 logical CPUs (each replica collects its own losses
and scales each term by its own denominator).

Measured (60 steps): evaluation loss 0.2503256 on TF 2.15, 0.2503253 migrated on 1 and on 4
replicas (1e-6 relative); the tolerance asserted is 1e-5. Without the regularization loss
(`get_total_loss(add_regularization_losses=False)` in the migrated program) it is 0.2376:
the test fails if the facade drops a term TF1 summed.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from est2tpu.api import migrate_source
from est2tpu.ftypes import Target

REGULARIZED = """\
    hidden = tf.compat.v1.layers.dense(
        hidden, 8, activation=tf.nn.relu, kernel_regularizer=tf.keras.regularizers.l2(0.01)
    )
"""
MSE = "    loss = tf.compat.v1.losses.mean_squared_error(labels, predictions)\n"
COLLECTED = """\
    tf.compat.v1.losses.add_loss(tf.reduce_mean(tf.square(labels - predictions)))
    tf.compat.v1.losses.add_loss(0.5 * tf.reduce_mean(tf.abs(labels - predictions)))
    tf.compat.v1.losses.absolute_difference(
        labels, predictions, weights=tf.cast(labels > 0.0, tf.float32)
    )
    loss = tf.compat.v1.losses.get_total_loss()
"""
TRAIN_OP = """\
    optimizer = tf.compat.v1.train.AdamOptimizer(params["learning_rate"])
    train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())"""


def _program(harness: ModuleType) -> str:
    text = harness.train_op_program(TRAIN_OP, REGULARIZED)
    assert MSE in text
    return text.replace(MSE, COLLECTED)


def _migrate(text: str) -> str:
    result = migrate_source(text, target=Target.TF2, path="train.py")
    assert [f.rule_id for f in result.findings] == [], [f.render() for f in result.findings]
    assert result.new_text is not None
    again = migrate_source(result.new_text, target=Target.TF2, path="train.py")
    assert again.new_text in (None, result.new_text)
    return result.new_text


@pytest.mark.tf
def test_total_loss_trains_like_tf1(harness: ModuleType, tfcur: str, tmp_path: Path) -> None:
    original = _program(harness)
    migrated = _migrate(original)
    assert "tf2_runtime.losses.add_loss(" in migrated
    assert "loss = tf2_runtime.losses.get_total_loss()" in migrated
    runs = {}
    for name, text, python, env in (
        ("original", original, harness.tf_python(), None),
        ("migrated", migrated, tfcur, None),
        ("migrated_4_replicas", migrated, tfcur, {"EST2TPU_CPU_REPLICAS": "4"}),
    ):
        project = tmp_path / name / "project"
        project.mkdir(parents=True)
        (project / "train.py").write_text(text)
        runs[name] = harness.run_project(
            project, ("train.py",), tmp_path / name / "run", python=python, env=env
        ).metrics
    assert runs["original"]["global_step"] == 60
    for name in ("migrated", "migrated_4_replicas"):
        assert runs[name]["global_step"] == 60
        assert runs[name]["loss"] == pytest.approx(runs["original"]["loss"], rel=1e-5), name
