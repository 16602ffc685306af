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


# The facade's collection functions against TF1's own (tf.compat.v1 in a graph, run in a
# session) on the same values, and what they keep per call.
_PROBE = """
import json
import numpy as np
import tensorflow as tf
import est2tpu.runtime.tf2 as est
from est2tpu.runtime.tf2._core import State, invoke

X = np.arange(8, dtype=np.float32).reshape(4, 2) / 8.0
Y = np.array([[1.0], [0.0], [2.0], [0.5]], np.float32)
W = np.array([[1.0], [0.0], [2.0], [0.0]], np.float32)


def model_fn(losses, layers):
    out = layers.dense(
        tf.constant(X), 1,
        kernel_initializer=tf.compat.v1.constant_initializer(0.5),
        kernel_regularizer=tf.keras.regularizers.l2(0.1),
        bias_regularizer=tf.keras.regularizers.l1(0.2),
        bias_initializer=tf.compat.v1.constant_initializer(-0.25),
    )
    losses.add_loss(tf.reduce_mean(tf.square(out - Y)))
    losses.add_loss(tf.reduce_max(out), loss_collection=None)
    losses.absolute_difference(tf.constant(Y), out, weights=tf.constant(W))
    losses.mean_squared_error(tf.constant(Y), out, loss_collection=None)
    return [
        losses.get_total_loss(),
        losses.get_total_loss(add_regularization_losses=False),
        losses.get_regularization_loss(),
        tf.constant(float(len(losses.get_losses()))),
        tf.constant(float(len(losses.get_regularization_losses()))),
    ]


with tf.Graph().as_default():
    tensors = model_fn(tf.compat.v1.losses, tf.compat.v1.layers)
    with tf.compat.v1.Session() as session:
        session.run(tf.compat.v1.global_variables_initializer())
        tf1 = [float(v) for v in session.run(tensors)]

state = State(tf.distribute.get_strategy())
calls = []
for building in (True, False, False):
    values, inv = invoke(state, "train", building, lambda: model_fn(est.losses, est.layers))
    calls.append([float(v) for v in values])


def error(fn):
    try:
        fn()
    except Exception as e:
        return type(e).__name__
    return None


def empty():
    est.losses.get_total_loss(add_regularization_losses=False)


with tf.Graph().as_default():
    tf1_empty = error(lambda: tf.compat.v1.losses.get_total_loss())
print(json.dumps({
    "tf1": tf1,
    "calls": calls,
    "empty": error(lambda: invoke(state, "train", False, empty)),
    "tf1_empty": tf1_empty,
    "outside": error(lambda: est.losses.add_loss(tf.constant(1.0))),
    "other_collection": error(lambda: invoke(
        state, "train", False, lambda: est.losses.add_loss(tf.constant(1.0), "aux"))),
    "scope": error(lambda: invoke(
        state, "train", False, lambda: est.losses.get_total_loss(scope="tower"))),
}))
"""


@pytest.mark.tf
def test_collection_is_tf1s_and_kept_per_call(harness: ModuleType, tfcur: str) -> None:
    out = harness.run_tf_json(_PROBE, python=tfcur, timeout=300)
    total, data, regularization, collected, regularizers = out["tf1"]
    assert (collected, regularizers) == (2.0, 2.0)  # add_loss + the weighted loss; kernel, bias
    assert total == pytest.approx(data + regularization, rel=1e-6)
    assert regularization > 0.0
    for call in out["calls"]:  # each call sees its own collection only, as TF1's new graph
        assert call == pytest.approx(out["tf1"], rel=1e-6)
    assert out["empty"] == out["tf1_empty"] == "ValueError"
    assert out["outside"] == "RuntimeError"
    assert out["other_collection"] == out["scope"] == "NotImplementedError"
