"""Findings survive a migration: users run `est2tpu migrate`, then `est2tpu check` in CI.

Once an Estimator is a TPUEstimator (or the shim's premade/Keras builder, or
`tpu_runtime.train_and_evaluate` drives it), the input-function refusals the first run made
still hold for the code a user has not fixed yet, and the CI check must still make them:
the manual work must not vanish from CI while the code is unchanged.
"""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from pathlib import Path

from inprocess import est2tpu as est2tpu_in_process

PROJECT = {
    "trainer/__init__.py": "",
    # The Estimator is built by a function of another module than the one that knows the
    # batch size: the size cannot move to the TPUEstimator.
    "trainer/model.py": """\
import tensorflow as tf


def model_fn(features, labels, mode, params):
    logits = tf.compat.v1.layers.dense(features["x"], 2)
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    train_op = tf.compat.v1.train.AdamOptimizer().minimize(
        loss, global_step=tf.compat.v1.train.get_global_step()
    )
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def build_estimator(model_dir):
    config = tf.estimator.RunConfig(save_checkpoints_steps=100)
    return tf.estimator.Estimator(model_fn=model_fn, model_dir=model_dir, config=config)
""",
    "trainer/inputs.py": """\
import tensorflow as tf


def make_input_fn(pattern, batch_size, training):
    def _input_fn():
        dataset = tf.data.TFRecordDataset(tf.io.gfile.glob(pattern))
        if training:
            dataset = dataset.repeat()
        return dataset.batch(batch_size)

    return _input_fn


def test_input():
    return tf.data.TFRecordDataset(tf.io.gfile.glob("test*")).batch(16)
""",
    "trainer/task.py": """\
import argparse

import tensorflow as tf

from trainer import inputs, model


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()
    estimator = model.build_estimator("/tmp/model")
    train_spec = tf.estimator.TrainSpec(
        input_fn=inputs.make_input_fn("train*", args.batch_size, True), max_steps=100
    )
    eval_spec = tf.estimator.EvalSpec(
        input_fn=inputs.make_input_fn("eval*", args.batch_size, False), steps=None
    )
    tf.estimator.train_and_evaluate(estimator, train_spec, eval_spec)
    estimator.evaluate(input_fn=inputs.test_input)
""",
    # A premade Estimator becomes the shim's premade TPUEstimator builder.
    "premade_task.py": """\
import tensorflow as tf

COLUMNS = [tf.feature_column.numeric_column("x")]


def train_input():
    dataset = tf.data.Dataset.from_tensor_slices(({"x": [1.0, 2.0]}, [0, 1]))
    return dataset.repeat().batch(8)


def eval_input():
    return tf.data.TFRecordDataset(tf.io.gfile.glob("eval*")).batch(8)


estimator = tf.estimator.DNNClassifier(hidden_units=[4], feature_columns=COLUMNS)
tf.estimator.train_and_evaluate(
    estimator,
    tf.estimator.TrainSpec(train_input, max_steps=10),
    tf.estimator.EvalSpec(eval_input, steps=None),
)
""",
    # The specs come from functions of another module, the Estimator from a third: after
    # the migration the task module spells nothing but the shim's train_and_evaluate.
    "spec_helpers.py": """\
import tensorflow as tf


def make_input_fn(pattern, batch_size):
    def _input_fn():
        return tf.data.TFRecordDataset(tf.io.gfile.glob(pattern)).repeat().batch(batch_size)

    return _input_fn


def get_train_spec(batch_size):
    return tf.estimator.TrainSpec(make_input_fn("train*", batch_size), max_steps=5)


def get_eval_spec(batch_size):
    return tf.estimator.EvalSpec(make_input_fn("eval*", batch_size), steps=2)
""",
    "spec_helper_task.py": """\
import tensorflow as tf

import spec_helpers
from trainer import model


def main(batch_size):
    estimator = model.build_estimator("/tmp/other")
    train_spec = spec_helpers.get_train_spec(batch_size)
    eval_spec = spec_helpers.get_eval_spec(batch_size)
    tf.estimator.train_and_evaluate(estimator, train_spec, eval_spec)
""",
}

# What the first run cannot fix, and therefore must still say after the migration.
EXPECTED = Counter(
    {
        # No train batch size the module building the Estimator can read (main's argument,
        # args.batch_size): a TPUEstimator without train_batch_size fails when it trains,
        # so the Estimator stays as it is, and the loops over it are left too.
        ("TPU007", "trainer/model.py", "Estimator left as it is: a TPUEstimator without"): 1,
        # Its RunConfig stays with it (a TPU one would send its session to the TPU's master).
        ("TPU014", "trainer/model.py", "RunConfig left as it is"): 1,
        ("TPU014", "trainer/task.py", "train_and_evaluate left as it is"): 1,
        ("TPU014", "spec_helper_task.py", "train_and_evaluate left as it is"): 1,
    }
)


def cli(*args: str, cache: Path) -> subprocess.CompletedProcess[str]:
    # In this process (tests/inprocess.py): what is proved is what the commands report and
    # write, not how a process starts; each interpreter would import LibCST again.
    return est2tpu_in_process(args[0], "--cache-dir", str(cache), *args[1:])


def findings(root: Path, cache: Path) -> Counter[tuple[str, str, str]]:
    proc = cli("check", "--target", "tpu-estimator", "-f", "json", str(root), cache=cache)
    assert proc.returncode == 1, proc.stderr  # findings remain: CI fails
    return Counter(
        (f["rule"], Path(f["path"]).relative_to(root).as_posix(), f["message"])
        for f in json.loads(proc.stdout)["findings"]
    )


def test_check_after_migrate_reports_the_first_runs_findings(tmp_path: Path) -> None:
    root = tmp_path / "project"
    for name, text in PROJECT.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    cache = tmp_path / "cache"

    before = findings(root, cache)
    prefixes = {prefix for _, _, prefix in EXPECTED}
    assert (
        Counter(
            {
                (rule, path, next((p for p in prefixes if message.startswith(p)), message)): n
                for (rule, path, message), n in before.items()
            }
        )
        == EXPECTED
    )

    proc = cli("migrate", "--target", "tpu-estimator", str(root), cache=cache)
    assert proc.returncode == 1, proc.stderr  # written, with findings left
    migrated = (root / "trainer" / "model.py").read_text()
    assert "tf.estimator.Estimator(" in migrated
    assert "TPUEstimator(" not in migrated
    assert "tpu_runtime.premade.DNNClassifier(" in (root / "premade_task.py").read_text()
    assert "tpu_runtime.train_and_evaluate(" in (root / "premade_task.py").read_text()

    assert findings(root, cache) == before


# The tf2 target: once the Estimator is the facade's, the model_fn is still checked, so its
# TF2003 refusals (code the facade cannot run) stay in CI until the user fixes them.
TF2_PROJECT = """\
import tensorflow as tf


def model_fn(features, labels, mode):
    logits = tf.compat.v1.layers.dense(features["x"], 1)
    loss = tf.reduce_mean(tf.square(logits - labels))
    optimizer = tf.compat.v1.train.AdamOptimizer(0.1)
    step = tf.compat.v1.train.get_or_create_global_step()
    grads = optimizer.compute_gradients(loss)
    train_op = tf.cond(
        step % 2 == 0,
        lambda: optimizer.apply_gradients(grads, global_step=step),
        lambda: tf.no_op(),
    )
    scaled = tf.compat.v1.py_func(lambda x: x * 2, [logits], tf.float32)
    return tf.estimator.EstimatorSpec(
        mode, loss=loss, train_op=train_op, predictions={"scaled": scaled}
    )


estimator = tf.estimator.Estimator(model_fn=model_fn)
"""


def tf2_findings(root: Path, cache: Path) -> Counter[tuple[str, str]]:
    proc = cli("check", "--target", "tf2", "-f", "json", str(root), cache=cache)
    assert proc.returncode == 1, proc.stderr
    return Counter((f["rule"], f["message"]) for f in json.loads(proc.stdout)["findings"])


def test_tf2_check_after_migrate_reports_the_first_runs_findings(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    (root / "train.py").write_text(TF2_PROJECT)
    cache = tmp_path / "cache"

    before = tf2_findings(root, cache)
    assert sorted(rule for rule, _ in before.elements()) == ["TF2003", "TF2003"]
    assert any("apply_gradients" in message for _, message in before)
    assert any("py_func" in message for _, message in before)

    proc = cli("migrate", "--target", "tf2", str(root), cache=cache)
    assert proc.returncode == 1, proc.stderr
    migrated = (root / "train.py").read_text()
    assert "tf2_runtime.Estimator(model_fn=model_fn)" in migrated

    assert tf2_findings(root, cache) == before
    # ... and a second migration changes nothing.
    proc = cli("migrate", "--target", "tf2", str(root), cache=cache)
    assert proc.returncode == 1, proc.stderr
    assert (root / "train.py").read_text() == migrated
