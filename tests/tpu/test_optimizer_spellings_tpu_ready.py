"""A TF1 optimizer built by a helper in another module, migrated, then under `verify --tpu`:
it is wrapped in CrossShardOptimizer (no TPU111). The other spellings are in
`fixtures/TPU004/` and the generated programs of `test_generated_tpu_ready.py`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.tpu.test_verify_tpu import run_verify_tpu

_OPTIMIZATION = '''\
"""Optimizers, built away from the model_fn."""

from tensorflow.compat.v1 import train


def create_optimizer(learning_rate, momentum):
    if momentum:
        return train.MomentumOptimizer(learning_rate, momentum=momentum)
    return train.GradientDescentOptimizer(learning_rate)
'''

_TASK = """\
import numpy as np
import tensorflow.compat.v1 as tf

from trainer import optimization

X = np.random.RandomState(0).normal(size=(64, 4)).astype(np.float32)
Y = (X[:, 0] > 0).astype(np.int32)


def input_fn():
    dataset = tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).repeat()
    return dataset.batch(32)


def model_fn(features, labels, mode, params):
    logits = tf.layers.dense(features["x"], 2)
    loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)
    optimizer = optimization.create_optimizer(0.1, params["momentum"])
    train_op = optimizer.minimize(loss, tf.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def main():
    params = {"momentum": 0.9}
    estimator = tf.estimator.Estimator(model_fn, "model", params=params)
    estimator.train(input_fn, max_steps=2)


if __name__ == "__main__":
    main()
"""


@pytest.mark.tf
def test_optimizer_from_a_helper_in_another_module_is_wrapped(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "trainer").mkdir(parents=True)
    (project / "trainer" / "__init__.py").write_text("")
    (project / "trainer" / "optimization.py").write_text(_OPTIMIZATION)
    (project / "trainer" / "task.py").write_text(_TASK)
    done = run_verify_tpu(project, ["-f", "json"], ["-m", "trainer.task"])
    assert json.loads(done.stdout)["findings"] == [], done.stderr[-2000:]
    assert done.returncode == 0, done.stderr[-2000:]
    migrated = subprocess.run(
        [sys.executable, "-m", "est2tpu", "migrate", "--diff", str(project)],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    assert "isinstance(optimizer, tf.train.Optimizer)" in migrated
