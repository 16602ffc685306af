"""A model_fn written for TF 1.x in the plain spelling (`tf.layers.dense`,
`tf.losses.mean_squared_error`, `tf.train.AdamOptimizer`), migrated with `--target tf2`,
trains like TF 1.x ran it.

`tf.losses.mean_squared_error` is a name both TF1's `tf.losses` and TF 2.x's Keras
`tf.losses` have: TF1's is the batch's mean (a scalar), Keras' the per-example mean over
the last axis. The model_fn also calls `tf.layers.dense`, which TF 2.x lacks, so it ran on
TF 1.x and its loss is TF1's (`_tf2.written_for_tf1`). The original is the same program
spelled through `tf.compat.v1` (TF 1.15's `tf.X` is TF 2.15's `tf.compat.v1.X` for these
names), run on TF 2.15; the migrated plain program runs on current TensorFlow.

Measured (60 steps): evaluation loss 0.1001824215054512 in both, to the last digit; the
tolerance asserted is 1e-5. With the loss left as Keras' per-example loss (`written_for_tf1`
made to answer False), the migrated program fails in training with an InvalidArgumentError:
a crash where the original ran.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from est2tpu.api import migrate_source
from est2tpu.ftypes import Target

TRAIN_OP = """\
    optimizer = tf.compat.v1.train.AdamOptimizer(params["learning_rate"])
    train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())"""


def _plain(text: str) -> str:
    """The program as TF 1.x code spells it: `tf.layers`, `tf.losses`, `tf.train`."""
    plain = text.replace("tf.compat.v1.", "tf.")
    assert "tf.losses.mean_squared_error(labels, predictions)" in plain
    assert "tf.layers.dense(" in plain and "tf.train.AdamOptimizer(" in plain
    return plain


@pytest.mark.tf
def test_plain_tf1_model_fn_trains_like_tf1(
    harness: ModuleType, tfcur: str, tmp_path: Path
) -> None:
    original = harness.train_op_program(TRAIN_OP)
    result = migrate_source(_plain(original), target=Target.TF2, path="train.py")
    assert [f.render() for f in result.findings] == []
    migrated = result.new_text
    assert migrated is not None
    assert "loss = tf2_runtime.losses.mean_squared_error(labels, predictions)" in migrated
    assert migrate_source(migrated, target=Target.TF2, path="train.py").new_text in (
        None,
        migrated,
    )
    runs = harness.run_texts(
        {"original": (original, harness.tf_python()), "migrated": (migrated, tfcur)},
        tmp_path,
    )
    assert runs["original"]["global_step"] == runs["migrated"]["global_step"] == 60
    assert runs["migrated"]["loss"] == pytest.approx(runs["original"]["loss"], rel=1e-5)
