"""tf2 target: two constructs the facade would silently break are refused (TF2003) through
the real CLI: `create_train_op` (TF 1.x's tf.contrib / TF-Slim, absent from TF 2.x) with
arguments TF2002 does not expand (gradient clipping, multipliers), and an
eval_metric_ops value computed from a metric's value (the facade reports an entry by its
update op's metric, so `exp(log_ppl)` would be reported as `log_ppl`)."""

from __future__ import annotations

from pathlib import Path

from inprocess import est2tpu

CREATE_TRAIN_OP = """\
import tensorflow as tf
import tf_slim as slim


def model_fn(features, labels, mode, params):
    predictions = tf.compat.v1.layers.dense(features["x"], 1)
    loss = tf.compat.v1.losses.mean_squared_error(labels, predictions)
    optimizer = tf.compat.v1.train.AdamOptimizer(learning_rate=0.01)
    if params["slim"]:
        train_op = slim.learning.create_train_op(loss, optimizer, clip_gradient_norm=5.0)
    else:
        train_op = tf.contrib.training.create_train_op(
            loss, optimizer, gradient_multipliers={"dense/kernel": 2.0}
        )
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


estimator = tf.estimator.Estimator(model_fn)
"""

METRIC_VALUE = """\
import tensorflow as tf


def model_fn(features, labels, mode, params):
    logits = tf.compat.v1.layers.dense(features["x"], 1)
    loss = tf.compat.v1.losses.mean_squared_error(labels, logits)
    log_ppl = tf.compat.v1.metrics.mean(tf.math.log1p(tf.abs(labels - logits)))
    perplexity = tf.exp(log_ppl[0])
    optimizer = tf.compat.v1.train.AdamOptimizer(0.01)
    train_op = optimizer.minimize(loss, tf.compat.v1.train.get_global_step())
    return tf.estimator.EstimatorSpec(
        mode,
        loss=loss,
        train_op=train_op,
        eval_metric_ops={"perplexity": (perplexity, log_ppl[1]), "log_ppl": log_ppl},
    )


estimator = tf.estimator.Estimator(model_fn)
"""


def _check(tmp_path: Path, source: str) -> tuple[int, list[str]]:
    (tmp_path / "model.py").write_text(source, encoding="utf-8")
    # The CLI in this process (tests/inprocess.py): a fresh interpreter would only add
    # LibCST's import to what is proved.
    proc = est2tpu("check", "--target", "tf2", str(tmp_path))
    return proc.returncode, [
        line for line in (proc.stdout + proc.stderr).splitlines() if ": TF2003 " in line
    ]


def test_create_train_op_is_refused(tmp_path: Path) -> None:
    code, findings = _check(tmp_path, CREATE_TRAIN_OP)
    assert code != 0
    assert len(findings) == 2, findings
    assert "model.py:10:" in findings[0] and "slim.learning.create_train_op" in findings[0]
    assert "model.py:12:" in findings[1] and "tf.contrib.training" in findings[1]
    assert all("UPDATE_OPS" in f and "minimize" in f for f in findings)


def test_metric_value_computed_from_a_metric_is_refused(tmp_path: Path) -> None:
    code, findings = _check(tmp_path, METRIC_VALUE)
    assert code != 0
    # Only the derived entry: `"log_ppl": log_ppl` is the metric itself.
    assert len(findings) == 1, findings
    assert "model.py:15:" in findings[0]
    assert "`perplexity` is not its metric's own value (`log_ppl[0]`)" in findings[0]
