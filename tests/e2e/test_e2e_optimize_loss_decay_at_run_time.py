"""`optimize_loss(learning_rate_decay_fn=hp.decay)`, a value est2tpu cannot see in the source:
a function, or None to keep the learning rate as it is.

TF 1.15's optimize_loss called the decay only `if learning_rate is not None and
learning_rate_decay_fn is not None`, and wrote the `learning_rate` summary only then. The
migrated model_fn asks `tpu_runtime.optimize_loss_learning_rate` to take the same branch (it
called the name unconditionally before: TypeError on None). TensorFlow 2.15 has no
`tf.contrib`, so the original cannot run there: the migrated program (TPUEstimator,
use_tpu=False) must train to exactly the metrics of the expert's hand port under a plain
Estimator, for a callable and for None.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from est2tpu.api import migrate_source
from est2tpu.ftypes import Status

WITH_OPTIMIZE_LOSS = """\
    train_op = tf.contrib.layers.optimize_loss(
        name="training",
        loss=loss,
        global_step=tf.compat.v1.train.get_or_create_global_step(),
        learning_rate=hp.learning_rate,
        learning_rate_decay_fn=hp.decay,
        optimizer="Adam",
    )"""

# What TF 1.15's optimize_loss ran for each kind of learning_rate_decay_fn, written by hand.
BY_HAND = {
    "callable": """\
    step = tf.compat.v1.train.get_global_step()
    optimizer = tf.compat.v1.train.AdamOptimizer(
        tf.compat.v1.train.exponential_decay(hp.learning_rate, step, 10, 0.5)
    )
    train_op = optimizer.minimize(loss, global_step=step)""",
    "none": """\
    optimizer = tf.compat.v1.train.AdamOptimizer(hp.learning_rate)
    train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())""",
}

DECAYS = {
    "callable": "lambda lr, step: tf.compat.v1.train.exponential_decay(lr, step, 10, 0.5)",
    "none": "None",
}


def program(harness: ModuleType, train_op: str, kind: str) -> str:
    hparams = f"learning_rate=0.2, decay={DECAYS[kind]}"
    return harness.HP_PROGRAM.replace("TRAIN_OP", train_op).replace("HPARAMS", hparams)


def test_decay_read_at_run_time_is_expanded_without_a_finding(harness: ModuleType) -> None:
    result = migrate_source(program(harness, WITH_OPTIMIZE_LOSS, "none"), path="train.py")
    assert result.status is not Status.FAILED, result.error
    assert result.findings == []
    assert result.new_text is not None
    assert "optimize_loss(" not in result.new_text
    assert "tpu_runtime.optimize_loss_learning_rate(\n        hp.decay,\n" in result.new_text
    assert "if hp.decay is not None:" in result.new_text


def test_the_shim_decays_as_tensorflow_did_without_a_tensor() -> None:
    from est2tpu.runtime import optimize_loss_learning_rate

    assert optimize_loss_learning_rate(None, 0.5, 3) == 0.5
    assert optimize_loss_learning_rate(lambda lr, step: lr / step, 0.5, 2) == 0.25


@pytest.mark.tf
@pytest.mark.parametrize("kind", sorted(BY_HAND))
def test_decay_read_at_run_time_trains_like_the_hand_port(
    harness: ModuleType, tmp_path: Path, kind: str
) -> None:
    migrated = migrate_source(program(harness, WITH_OPTIMIZE_LOSS, kind), path="train.py")
    assert migrated.new_text is not None
    runs = harness.run_programs(
        {"migrated": migrated.new_text, "by_hand": program(harness, BY_HAND[kind], kind)}, tmp_path
    )
    assert runs["migrated"].metrics == runs["by_hand"].metrics
    assert runs["migrated"].metrics["global_step"] == 60
    # TF wrote the decayed rate's summary, and only when there was a decay
    tags = set(runs["migrated"].results["summary_tags"])
    assert "training/loss" in tags, tags
    assert ("training/learning_rate" in tags) == (kind == "callable"), tags
