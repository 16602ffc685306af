"""Premade estimators under the tpu-estimator target: migrated to `est2tpu.runtime.premade`
(a TPUEstimator built from TensorFlow 2.15's canned model function), they train on CPU
(use_tpu=False) to exactly the original's metrics and predictions: same variables, same
initial values, same updates."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

from est2tpu.api import migrate_paths
from est2tpu.ftypes import Status
from est2tpu.textio import encode

# Both premade projects evaluate to the end of a from_tensor_slices input over module-level
# arrays: `tpu_runtime.evaluate(..., examples=EVAL)` counts the steps on TPU and evaluates to
# the end off TPU, as the original; no finding is left.
PROJECT_FINDINGS: dict[str, set[str]] = {
    "premade_dnn_classifier": set(),
    "premade_linear_regressor": set(),
}
STEPS = "40"

# Every premade class est2tpu.runtime.premade rebuilds, in one program (one TensorFlow start
# per side): each trains, evaluates and predicts with its own seeded graph. The training
# batches are static-shaped already: the `drop_remainder=True` that TPU005 adds otherwise
# changes float rounding in the DNNLinearCombined models on CPU (measured: the weights differ
# in the last bits after 20 steps, with or without est2tpu.runtime.premade), which is not
# what this test is about.
EVERY_CLASS = '''\
    """Train each premade estimator a few steps; write metrics and first predictions."""

    import json
    import sys

    import numpy as np
    import tensorflow as tf

    SEED = 11
    BATCH = 16
    rng = np.random.RandomState(SEED)
    X = rng.normal(size=(96, 3)).astype(np.float32)
    S = rng.normal(size=96).astype(np.float32)
    W = rng.choice([1.0, 2.0], size=96).astype(np.float32)
    CLASSES = ((X.sum(axis=1) > 0).astype(np.int64) + (S > 1).astype(np.int64))
    TARGETS = (X @ np.array([1.0, -2.0, 0.5]) + S).astype(np.float32)
    FEATURES = {"x": X, "s": S, "w": W}


    def classes_input_fn():
        data = tf.data.Dataset.from_tensor_slices((FEATURES, CLASSES))
        return data.shuffle(96, seed=SEED).repeat().batch(BATCH, drop_remainder=True)


    def targets_input_fn():
        data = tf.data.Dataset.from_tensor_slices((FEATURES, TARGETS))
        return data.shuffle(96, seed=SEED).repeat().batch(BATCH, drop_remainder=True)


    def predict_input_fn():
        return tf.data.Dataset.from_tensor_slices(FEATURES).batch(BATCH)


    def columns():
        scalar = tf.feature_column.numeric_column("s")
        return [
            tf.feature_column.numeric_column("x", shape=(3,)),
            tf.feature_column.bucketized_column(scalar, [-1.0, 0.0, 1.0]),
        ]


    def config():
        return tf.estimator.RunConfig(tf_random_seed=SEED)


    def plain(value):
        return np.asarray(value).tolist()


    def record(name, estimator, metrics, predictions):
        first = next(iter(predictions))
        RESULTS[name] = {
            "estimator": type(estimator).__name__,
            "metrics": {k: plain(v) for k, v in metrics.items()},
            "prediction": {k: plain(v) for k, v in first.items() if np.asarray(v).dtype.kind in "fiu"},
        }


    STEPS = int(sys.argv[2])
    RESULTS = {}

    tf.keras.utils.set_random_seed(SEED)
    dnn_classifier = tf.estimator.DNNClassifier(
        hidden_units=[8, 4], feature_columns=columns(), n_classes=3, weight_column="w",
        config=config(),
    )
    dnn_classifier.train(input_fn=classes_input_fn, steps=STEPS)
    record(
        "DNNClassifier", dnn_classifier, dnn_classifier.evaluate(classes_input_fn, steps=2),
        dnn_classifier.predict(predict_input_fn),
    )

    tf.keras.utils.set_random_seed(SEED)
    dnn_regressor = tf.estimator.DNNRegressor(
        hidden_units=[8], feature_columns=columns(), dropout=0.1, optimizer="Adam",
        config=config(),
    )
    dnn_regressor.train(input_fn=targets_input_fn, steps=STEPS)
    record(
        "DNNRegressor", dnn_regressor, dnn_regressor.evaluate(targets_input_fn, steps=2),
        dnn_regressor.predict(predict_input_fn),
    )

    tf.keras.utils.set_random_seed(SEED)
    linear_classifier = tf.estimator.LinearClassifier(
        feature_columns=columns(), n_classes=3, config=config()
    )
    linear_classifier.train(input_fn=classes_input_fn, steps=STEPS)
    record(
        "LinearClassifier", linear_classifier,
        linear_classifier.evaluate(classes_input_fn, steps=2),
        linear_classifier.predict(predict_input_fn),
    )

    tf.keras.utils.set_random_seed(SEED)
    linear_regressor = tf.estimator.LinearRegressor(
        feature_columns=columns(), weight_column="w", config=config()
    )
    linear_regressor.train(input_fn=targets_input_fn, steps=STEPS)
    record(
        "LinearRegressor", linear_regressor, linear_regressor.evaluate(targets_input_fn, steps=2),
        linear_regressor.predict(predict_input_fn),
    )

    tf.keras.utils.set_random_seed(SEED)
    combined_classifier = tf.estimator.DNNLinearCombinedClassifier(
        linear_feature_columns=columns(), dnn_feature_columns=columns(), dnn_hidden_units=[8],
        n_classes=3, config=config(),
    )
    combined_classifier.train(input_fn=classes_input_fn, steps=STEPS)
    record(
        "DNNLinearCombinedClassifier", combined_classifier,
        combined_classifier.evaluate(classes_input_fn, steps=2),
        combined_classifier.predict(predict_input_fn),
    )

    tf.keras.utils.set_random_seed(SEED)
    combined_regressor = tf.estimator.DNNLinearCombinedRegressor(
        linear_feature_columns=columns(), dnn_feature_columns=columns(),
        dnn_hidden_units=[8, 4], config=config(),
    )
    combined_regressor.train(input_fn=targets_input_fn, steps=STEPS)
    record(
        "DNNLinearCombinedRegressor", combined_regressor,
        combined_regressor.evaluate(targets_input_fn, steps=2),
        combined_regressor.predict(predict_input_fn),
    )

    with open(sys.argv[1], "w") as f:
        json.dump(RESULTS, f, indent=1, sort_keys=True)
'''


def migrate_tree(root: Path) -> list[str]:
    """Migrate a tree in place (tpu-estimator); return the rule IDs of the findings left."""
    found = []
    for result in migrate_paths([root]):
        assert result.status is not Status.FAILED, (result.path, result.error)
        if result.changed:
            assert result.new_text is not None
            result.path.write_bytes(encode(result.new_text, result.encoding, result.bom))
        found += [f.rule_id for f in result.findings]
    again = [r.path for r in migrate_paths([root]) if r.changed]
    assert again == [], "a second run must change nothing"
    return found


@pytest.mark.tf
@pytest.mark.parametrize("name", sorted(PROJECT_FINDINGS))
def test_premade_project_trains_identically_as_a_tpu_estimator(
    name: str, harness: ModuleType, tmp_path: Path
) -> None:
    project = harness.PROJECTS[name]
    original = harness.run_named_project(name, tmp_path / "original", args=("--steps", STEPS))
    migrated = harness.copy_project(name, tmp_path / "migrated" / "project")
    assert set(migrate_tree(migrated)) == PROJECT_FINDINGS[name]
    text = (migrated / "train.py").read_text()
    assert "tpu_runtime.premade." in text and "tf.estimator.DNN" not in text
    assert "tf.estimator.Linear" not in text
    assert "tpu_runtime.evaluate(estimator, input_fn=eval_input_fn, examples=EVAL)" in text
    result = harness.run_project(
        migrated, project.entry, tmp_path / "migrated" / "run", args=("--steps", STEPS)
    )
    assert result.metrics == original.metrics
    assert result.predictions == original.predictions
    assert result.results == original.results


@pytest.mark.tf
def test_every_premade_class_trains_identically_as_a_tpu_estimator(
    harness: ModuleType, tmp_path: Path
) -> None:
    source = textwrap.dedent(EVERY_CLASS)
    original_dir = tmp_path / "original"
    original_dir.mkdir()
    (original_dir / "train.py").write_text(source)
    migrated_dir = tmp_path / "migrated"
    shutil.copytree(original_dir, migrated_dir)
    assert migrate_tree(migrated_dir) == []
    text = (migrated_dir / "train.py").read_text()
    assert text.count("tpu_runtime.premade.") == 6 and "tf.estimator.DNN" not in text
    outputs = {}
    for side, folder in (("original", original_dir), ("migrated", migrated_dir)):
        out = tmp_path / f"{side}.json"
        proc = harness.run_tf_code(
            "import runpy, sys; sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], "
            "run_name='__main__')",
            str(folder / "train.py"),
            str(out),
            "20",
            cwd=folder,
        )
        assert proc.returncode == 0, proc.stderr[-4000:]
        outputs[side] = json.loads(out.read_text())
    original, migrated = outputs["original"], outputs["migrated"]
    assert (
        sorted(original)
        == sorted(migrated)
        == sorted(
            [
                "DNNClassifier",
                "DNNRegressor",
                "LinearClassifier",
                "LinearRegressor",
                "DNNLinearCombinedClassifier",
                "DNNLinearCombinedRegressor",
            ]
        )
    )
    for name, want in original.items():
        got = migrated[name]
        assert got["estimator"] == "TPUEstimator" and want["estimator"].endswith("V2")
        assert got["metrics"] == want["metrics"], name
        assert got["prediction"] == want["prediction"], name
        assert want["metrics"]["global_step"] == 20
