"""`est2tpu migrate` then `est2tpu migrate --target tf2` on the same file: the tf2 target
meets est2tpu's own TPUEstimator output and leaves the file byte for byte, saying why."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROGRAM = """import tensorflow as tf


def input_fn():
    ds = tf.data.Dataset.from_tensor_slices(({"x": [[1.0]] * 64}, [[1.0]] * 64))
    return ds.repeat().batch(32)


def model_fn(features, labels, mode):
    logits = tf.compat.v1.layers.dense(features["x"], 1)
    loss = tf.reduce_mean(tf.square(logits - labels))
    train_op = tf.compat.v1.train.AdamOptimizer().minimize(
        loss, global_step=tf.compat.v1.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


est = tf.estimator.Estimator(model_fn=model_fn)
est.train(input_fn, steps=10)
est.evaluate(input_fn, steps=2)
"""


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "est2tpu", *args],
        check=False,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_tf2_leaves_tpu_estimator_output_byte_for_byte(tmp_path: Path) -> None:
    program = tmp_path / "good.py"
    program.write_text(PROGRAM)
    first = _cli("migrate", "--no-cache", "good.py", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    tpu_output = program.read_bytes()
    assert b"TPUEstimator(" in tpu_output
    second = _cli("migrate", "--no-cache", "--target", "tf2", "good.py", cwd=tmp_path)
    assert program.read_bytes() == tpu_output
    assert second.returncode == 1
    assert (
        "TF2001 `tf.estimator.tpu.TPUEstimator` has no equivalent" in second.stdout + second.stderr
    )
    assert "migrate the file's Estimator version" in second.stdout + second.stderr
