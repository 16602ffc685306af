"""One file never fails another through the project index, and a rule switched off never
leaves a TPUEstimator that crashes.

- A valid module nested deeper than the index's walks follow (1,200 adjacent string
  literals: LibCST nests each pair) is left out of the index: the other files of the run
  migrate as they would alone, and that file gets at most its own one error line.
- `--ignore TPU005` switches off the input-function rewrites a TPUEstimator needs: the
  Estimator stays as it is, with a TPU007 finding saying which rule is off; the file is
  byte for byte what it was.
"""

from __future__ import annotations

import json
from pathlib import Path

from inprocess import est2tpu

PROGRAM = """\
import tensorflow as tf


def model_fn(features, labels, mode, params):
    logits = tf.compat.v1.layers.dense(features["x"], 2)
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    train_op = tf.compat.v1.train.AdamOptimizer(0.01).minimize(
        loss, global_step=tf.compat.v1.train.get_global_step()
    )
    return tf.estimator.EstimatorSpec(mode=mode, loss=loss, train_op=train_op)


def input_fn():
    data = tf.data.Dataset.from_tensor_slices(({"x": [[1.0, 2.0]]}, [1]))
    return data.repeat().batch(32)


def main():
    estimator = tf.estimator.Estimator(model_fn=model_fn, model_dir="/tmp/model")
    estimator.train(input_fn, steps=10)
"""


def _check(*args: str | Path) -> tuple[int, dict[str, dict[str, object]], list[str]]:
    proc = est2tpu("check", "--no-cache", "-f", "json", *args)
    report = json.loads(proc.stdout)
    files = {Path(str(f["path"])).name: f for f in report["files"]}
    messages = [f"{f['rule']} {f['message']}" for f in report["findings"]]
    return proc.returncode, files, messages


def test_a_deeply_nested_module_fails_no_other_file(tmp_path: Path) -> None:
    literals = "\n".join(f'    "piece {i} "' for i in range(1200))
    (tmp_path / "deep.py").write_text(PROGRAM + f"\n\nTEXT = (\n{literals}\n)\n")
    (tmp_path / "other.py").write_text(PROGRAM)
    _, files, _ = _check(tmp_path)
    assert files["other.py"]["status"] == "changed", files["other.py"]
    assert files["other.py"]["error"] is None
    deep_error = str(files["deep.py"]["error"] or "")
    assert "project index failed" not in deep_error
    assert "\n" not in deep_error


def test_ignoring_tpu005_keeps_the_estimator(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(PROGRAM)
    code, files, messages = _check("--ignore", "TPU005", tmp_path)
    assert code == 1
    assert files["train.py"]["status"] == "unchanged"
    assert len(messages) == 1
    assert messages[0].startswith("TPU007 Estimator left as it is: the rule selection")
    assert "TPU005" in messages[0]
    migrated = est2tpu("migrate", "--no-cache", "--ignore", "TPU005", tmp_path)
    assert migrated.returncode == 1
    assert (tmp_path / "train.py").read_text() == PROGRAM


def test_without_ignores_the_same_program_migrates(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(PROGRAM)
    code, files, messages = _check(tmp_path)
    assert messages == []
    assert files["train.py"]["status"] == "changed"
    assert code == 1  # would change
