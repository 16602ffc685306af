"""End to end: `optimize_loss(clip_gradients=hp.clip_norm)`, a value est2tpu
cannot see in the source (as in magenta's onsets_frames model_fn).

TF 1.15's optimize_loss decided when the model_fn ran: a float clips by global norm, a
callable is given the (gradient, variable) pairs, None does not clip. The migrated model_fn
asks `tpu_runtime.optimize_loss_clip_gradients` to take the same branch. TensorFlow 2.15 has no
`tf.contrib`, so the original cannot run there: the migrated program (TPUEstimator,
use_tpu=False) must train to exactly the metrics of the expert's hand port under a plain
Estimator, for each kind of value.
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
        clip_gradients=hp.clip_norm,
        optimizer="Adam",
    )"""

# What TF 1.15's optimize_loss ran for each kind of clip_gradients, written by hand.
BY_HAND = {
    "float": """\
    optimizer = tf.compat.v1.train.AdamOptimizer(hp.learning_rate)
    gradients, variables = zip(*optimizer.compute_gradients(loss))
    gradients, _ = tf.clip_by_global_norm(gradients, hp.clip_norm)
    train_op = optimizer.apply_gradients(
        zip(gradients, variables), global_step=tf.compat.v1.train.get_global_step()
    )""",
    "callable": """\
    optimizer = tf.compat.v1.train.AdamOptimizer(hp.learning_rate)
    train_op = optimizer.apply_gradients(
        hp.clip_norm(optimizer.compute_gradients(loss)),
        global_step=tf.compat.v1.train.get_global_step(),
    )""",
    "none": """\
    optimizer = tf.compat.v1.train.AdamOptimizer(hp.learning_rate)
    train_op = optimizer.apply_gradients(
        optimizer.compute_gradients(loss), global_step=tf.compat.v1.train.get_global_step()
    )""",
}

CLIP_NORMS = {
    "float": "0.25",
    "callable": "lambda pairs: [(tf.clip_by_value(g, -0.05, 0.05), v) for g, v in pairs]",
    "none": "None",
}


def program(harness: ModuleType, train_op: str, kind: str) -> str:
    hparams = f"learning_rate=0.05, clip_norm={CLIP_NORMS[kind]}"
    return harness.HP_PROGRAM.replace("TRAIN_OP", train_op).replace("HPARAMS", hparams)


def test_clip_read_at_run_time_is_expanded_without_a_finding(harness: ModuleType) -> None:
    result = migrate_source(program(harness, WITH_OPTIMIZE_LOSS, "float"), path="train.py")
    assert result.status is not Status.FAILED, result.error
    # the summaries TF wrote, the clipped norm's under its test, move to host_call (TPU009)
    assert result.findings == []
    assert result.new_text is not None
    assert "optimize_loss(" not in result.new_text
    assert (
        "tpu_runtime.optimize_loss_clip_gradients(\n        hp.clip_norm,\n        gradients,\n"
        in result.new_text
    )
    assert 'if params["use_tpu"]:' in result.new_text


def test_the_shim_dispatches_as_tensorflow_did_without_a_tensor() -> None:
    from est2tpu.runtime import optimize_loss_clip_gradients

    pairs = [("gradient", "variable")]
    assert optimize_loss_clip_gradients(None, pairs) is pairs
    assert optimize_loss_clip_gradients(lambda p: p[::-1], [1, 2]) == [2, 1]
    # TF 1.15: "Unknown type %s for clip_gradients" for an int, a string, ...
    with pytest.raises(ValueError, match="Unknown type <class 'int'> for clip_gradients"):
        optimize_loss_clip_gradients(3, pairs)


@pytest.mark.tf
@pytest.mark.parametrize("kind", sorted(BY_HAND))
def test_clip_read_at_run_time_trains_like_the_hand_port(
    harness: ModuleType, tmp_path: Path, kind: str
) -> None:
    migrated = migrate_source(program(harness, WITH_OPTIMIZE_LOSS, kind), path="train.py")
    assert migrated.new_text is not None
    runs = harness.run_programs(
        {"migrated": migrated.new_text, "by_hand": program(harness, BY_HAND[kind], kind)}, tmp_path
    )
    assert runs["migrated"].metrics == runs["by_hand"].metrics
    assert runs["migrated"].metrics["global_step"] == 60
    # optimize_loss's summaries, the clipped norm only when clip_gradients is not None
    tags = set(runs["migrated"].results["summary_tags"])
    assert {"training/loss", "training/global_norm/gradient_norm"} <= tags, tags
    assert ("training/global_norm/clipped_gradient_norm" in tags) == (kind != "none"), tags
