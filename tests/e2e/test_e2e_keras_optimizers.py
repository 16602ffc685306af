"""End to end: what `est2tpu.runtime.model_to_estimator` would refuse at run time is known
when migrating, and what it maps trains as the original did.

One program, `model_to_estimator` over a compiled Functional model, written with each
optimizer in place of `OPTIMIZER`:

- a TF1 optimizer (`tf.compat.v1.train.AdamOptimizer`, which Keras wraps in a
  `TFOptimizer`) and SGD with `nesterov=True` and no momentum map exactly: migrated by the
  command line, each trains on TensorFlow 2.15 to the original's loss, metrics and
  predictions, bit for bit;
- Nadam, and Adam with amsgrad, have no exact TF1 form: the migration leaves the
  `model_to_estimator` call and its input functions as they are, with a TPU011 finding on
  its line (TPU008 still gives its RunConfig a TPUConfig, which a plain Estimator runs with).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

PROGRAM = """\
import argparse
import json

import numpy as np
import tensorflow as tf

SEED = 3
rng = np.random.RandomState(SEED)
X = rng.normal(size=(64, 3)).astype(np.float32)
Y = (X @ np.array([[1.0], [-2.0], [0.5]], np.float32)).astype(np.float32)


def input_fn():
    data = tf.data.Dataset.from_tensor_slices((X, Y))
    return data.shuffle(64, seed=SEED).repeat().batch(16)


def eval_input_fn():
    return tf.data.Dataset.from_tensor_slices((X, Y)).batch(16)


def build_model():
    inputs = tf.keras.Input((3,))
    hidden = tf.keras.layers.Dense(4, activation="relu")(inputs)
    model = tf.keras.Model(inputs, tf.keras.layers.Dense(1)(hidden))
    model.compile(optimizer=OPTIMIZER, loss="mse")
    return model


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model_dir")
    parser.add_argument("--results")
    args = parser.parse_args()
    tf.keras.utils.set_random_seed(SEED)
    estimator = tf.keras.estimator.model_to_estimator(
        keras_model=build_model(),
        model_dir=args.model_dir,
        config=tf.estimator.RunConfig(tf_random_seed=SEED),
    )
    estimator.train(input_fn, steps=12)
    metrics = estimator.evaluate(eval_input_fn, steps=4)
    predictions = [
        {k: v.tolist() for k, v in p.items()}
        for p in estimator.predict(eval_input_fn, yield_single_examples=True)
    ][:4]
    with open(args.results, "w") as f:
        json.dump(
            {
                "metrics": {k: float(v) for k, v in metrics.items()},
                "loss": float(metrics["loss"]),
                "predictions": predictions,
            },
            f,
        )


if __name__ == "__main__":
    main()
"""
MAPPED = {
    "tf1_adam": "tf.compat.v1.train.AdamOptimizer(0.01)",
    "nesterov_without_momentum": "tf.keras.optimizers.SGD(0.05, momentum=0.0, nesterov=True)",
}
REFUSED = {
    "nadam": ('"nadam"', '"nadam" has no exact tf.compat.v1.train equivalent'),
    "amsgrad": (
        "tf.keras.optimizers.Adam(0.01, amsgrad=True)",
        "Adam(amsgrad=True) has no exact tf.compat.v1.train equivalent",
    ),
}


def _program(optimizer: str) -> str:
    return PROGRAM.replace("optimizer=OPTIMIZER", f"optimizer={optimizer}")


def _migrate(tmp_path: Path, text: str) -> tuple[str, str]:
    """The program as `est2tpu migrate --target tpu-estimator` leaves it, and what it said."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "train.py"
    path.write_text(text)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "est2tpu",
            "migrate",
            "--no-cache",
            "--target",
            "tpu-estimator",
            str(path),
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert proc.returncode in (0, 1), proc.stderr
    return path.read_text(), proc.stdout + proc.stderr


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_unmappable_optimizer_leaves_the_file_with_a_finding(name: str, tmp_path: Path) -> None:
    optimizer, reason = REFUSED[name]
    original = _program(optimizer)
    migrated, out = _migrate(tmp_path, original)
    assert "tf.keras.estimator.model_to_estimator(\n        keras_model=build_model()," in migrated
    assert "def input_fn():\n" in migrated and ".repeat().batch(16)\n" in migrated
    assert "tpu_runtime.model_to_estimator" not in migrated
    line = original.splitlines().index("    estimator = tf.keras.estimator.model_to_estimator(") + 1
    assert f"train.py:{line}:17: TPU011 " in out
    assert reason in " ".join(out.split())


@pytest.mark.parametrize("name", sorted(MAPPED))
def test_mapped_optimizer_migrates_without_finding(name: str, tmp_path: Path) -> None:
    migrated, out = _migrate(tmp_path, _program(MAPPED[name]))
    assert "tpu_runtime.model_to_estimator(" in migrated
    assert "TPU011" not in out


@pytest.mark.tf
@pytest.mark.parametrize("name", sorted(MAPPED))
def test_mapped_optimizer_trains_like_the_original(
    name: str, harness: ModuleType, tmp_path: Path
) -> None:
    original = _program(MAPPED[name])
    migrated, _ = _migrate(tmp_path / "migrate", original)
    assert "tpu_runtime.model_to_estimator(" in migrated
    runs = harness.run_programs({"original": original, "migrated": migrated}, tmp_path)
    assert runs["migrated"].metrics == runs["original"].metrics
    assert runs["migrated"].predictions == runs["original"].predictions
    assert runs["migrated"].metrics["global_step"] == 12
