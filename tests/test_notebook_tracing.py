"""A notebook's cells run in order, and the project index reads them so.

`input_fn` names the training input in one cell and the evaluation input in a later one; an
input function defined in an early cell is called directly (to look at a batch) and later
passed to `predict`. The notebook is migrated by the real CLI, then the code cells of the
original and of the migrated notebook run in order, as a kernel runs them, under TensorFlow
2.15: TPUEstimator(use_tpu=False) must give exactly the original's results.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.test_runtime_keras import _harness

CELLS = [
    """\
import json
import sys

import numpy as np
import tensorflow as tf

tf.keras.utils.set_random_seed(7)
rng = np.random.RandomState(7)
X = rng.normal(size=(256, 3)).astype(np.float32)
Y = (X @ np.array([1.0, -2.0, 0.5]) > 0).astype(np.int32)
""",
    """\
def model_fn(features, labels, mode, params):
    logits = tf.squeeze(tf.compat.v1.layers.dense(features["x"], 1), axis=1)
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode=mode, predictions={"logits": logits})
    loss = tf.compat.v1.losses.sigmoid_cross_entropy(tf.cast(labels, tf.float32), logits)
    optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.5)
    train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode=mode, loss=loss, train_op=train_op)
""",
    """\
def predict_input_fn():
    return tf.data.Dataset.from_tensor_slices({"x": X[:8]}).batch(4)

first = next(iter(predict_input_fn()))
first["x"].shape
""",
    """\
estimator = tf.estimator.Estimator(
    model_fn, model_dir=sys.argv[1], config=tf.estimator.RunConfig(tf_random_seed=7)
)
input_fn = tf.compat.v1.estimator.inputs.numpy_input_fn(
    x={"x": X[:192]}, y=Y[:192], batch_size=32, num_epochs=None, shuffle=False
)
estimator.train(input_fn=input_fn, steps=20)
""",
    """\
input_fn = tf.compat.v1.estimator.inputs.numpy_input_fn(
    x={"x": X[192:]}, y=Y[192:], batch_size=16, num_epochs=1, shuffle=False
)
metrics = estimator.evaluate(input_fn=input_fn, steps=4)
""",
    """\
predictions = [p["logits"].item() for p in estimator.predict(input_fn=predict_input_fn)]
print(json.dumps({
    "loss": float(metrics["loss"]),
    "step": int(metrics["global_step"]),
    "predictions": predictions,
    "first": first["x"].numpy().tolist(),
}))
""",
]


def notebook(cells: list[str]) -> dict[str, Any]:
    return {
        "cells": [
            {
                "cell_type": "code",
                "execution_count": None,
                "metadata": {},
                "outputs": [],
                "source": cell.splitlines(keepends=True),
            }
            for cell in cells
        ],
        "metadata": {"language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def code_cells(path: Path) -> list[str]:
    data = json.loads(path.read_text())
    return ["".join(c["source"]) for c in data["cells"] if c["cell_type"] == "code"]


@pytest.fixture(scope="module")
def migrated(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    path = tmp_path_factory.mktemp("nb") / "demo.ipynb"
    path.write_text(json.dumps(notebook(CELLS), indent=1))
    proc = subprocess.run(
        [sys.executable, "-m", "est2tpu", "migrate", "--no-cache", str(path)],
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "TPU0" not in proc.stderr, proc.stderr  # no finding: every use was traced
    return code_cells(path)


def test_each_binding_is_migrated_for_the_use_that_sees_it(migrated: list[str]) -> None:
    train_cell, eval_cell = migrated[3], migrated[4]
    # Both bindings became the shim's params-aware input function, each size moved to the
    # TPUEstimator for its own mode.
    assert "estimator.inputs.numpy_input_fn(" not in "".join(migrated)
    assert "train_batch_size=32" in train_cell and "eval_batch_size=16" in train_cell
    assert "tpu_runtime.numpy_input_fn(" in eval_cell
    assert 'predict_input_fn(params={"batch_size": 4})' in migrated[2]


def _run_cells(cells: list[str], model_dir: Path) -> Any:
    harness = _harness()
    return harness.run_tf_json("\n".join(cells), str(model_dir))


@pytest.mark.tf
def test_migrated_notebook_runs_like_the_original(migrated: list[str], tmp_path: Path) -> None:
    original = _run_cells(CELLS, tmp_path / "original")
    result = _run_cells(migrated, tmp_path / "migrated")
    assert result == original
