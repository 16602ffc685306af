"""The README's "What a migration looks like" diff is what `est2tpu migrate --diff` prints for
the program below: every added and removed line it shows, in its order (the README leaves
out unchanged stretches)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

TRAIN = """import tensorflow as tf


def model_fn(features, labels, mode, params):
    logits = tf.compat.v1.layers.dense(features["x"], 2)
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    optimizer = tf.compat.v1.train.AdamOptimizer(params["learning_rate"])
    train_op = optimizer.minimize(loss, tf.compat.v1.train.get_global_step())
    accuracy = tf.compat.v1.metrics.accuracy(labels, tf.argmax(logits, 1))
    return tf.estimator.EstimatorSpec(
        mode, loss=loss, train_op=train_op, eval_metric_ops={"accuracy": accuracy}
    )


def input_fn():
    x = tf.random.normal([256, 4])
    y = tf.cast(x[:, 0] > 0, tf.int32)
    return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).repeat().batch(32)


estimator = tf.estimator.Estimator(model_fn, params={"learning_rate": 0.01})
estimator.train(input_fn, steps=100)
print(estimator.evaluate(input_fn, steps=10))
"""


def changed_lines(diff: str) -> list[str]:
    return [
        line
        for line in diff.splitlines()
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


def test_the_readme_example_is_what_the_tool_prints(tmp_path: Path) -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## What a migration looks like", 1)[1]
    shown = re.search(r"```diff\n(.*?)```", section, re.DOTALL)
    assert shown is not None
    (tmp_path / "train.py").write_text(TRAIN, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "est2tpu", "migrate", "--diff", "--no-cache", "train.py"],
        cwd=tmp_path,
        env={**os.environ, "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr  # a change is pending
    assert changed_lines(shown.group(1)) == changed_lines(done.stdout)
    assert (tmp_path / "train.py").read_text(encoding="utf-8") == TRAIN
