"""Premade DNNs over dense columns of integer ids, `RunConfig(experimental_distribute=
DistributeConfig(...))` and a Keras model compiled with TF1's GradientDescentOptimizer for
model_to_estimator, migrated with `--target tf2`, train like the original.

`programs/corpus_constructs.py` on TF 2.15 as written and on current
TensorFlow migrated: a DNNClassifier and a DNNRegressor whose columns are a numeric column,
one-hot ids, weighted one-hot ids, an embedding of ids and one-hot buckets (TF 2.15's DNN and
the facade's read them through the same `DenseFeatures` layer), and an Estimator whose
strategies come in a DistributeConfig (TF copies them into RunConfig's train_distribute and
eval_distribute; the migration writes them there), and a Keras model compiled with
`tf.compat.v1.train.GradientDescentOptimizer(0.05)` (Keras' legacy `SGD(0.05)` after the
migration: the same update).

Measured (1,000 steps): accuracy 1.000 vs 0.992, AUC 1.000 vs 0.9998, log loss 0.025 vs
0.036, regression loss 0.0070 vs 0.0066 (the DNNs start from different random weights); the
DistributeConfig Estimator's loss 0.62734 vs 0.62738 (the same initial weights); the Keras
model's loss 0.9403073787689209 on both.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from types import ModuleType

import pytest

from est2tpu.api import migrate_source
from est2tpu.ftypes import Target

PROGRAM = Path(__file__).with_name("programs") / "corpus_constructs.py"
# Accuracy-like metrics agree within verify's tolerance for tf2 (0.03); these are fractions.
FRACTIONS = ("accuracy", "auc", "auc_precision_recall", "precision", "recall")


@pytest.mark.tf
def test_dense_id_columns_and_distribute_config_train_like_the_original(
    harness: ModuleType, tfcur: str, tmp_path: Path
) -> None:
    result = migrate_source(PROGRAM.read_text(), target=Target.TF2, path=str(PROGRAM))
    assert result.new_text is not None
    assert [f.rule_id for f in result.findings] == [], [f.render() for f in result.findings]
    assert "tf2_runtime.DNNClassifier(" in result.new_text
    assert "tf2_runtime.DNNRegressor(" in result.new_text
    assert "DistributeConfig(" not in result.new_text
    assert "distribute_config import" not in result.new_text
    assert "train_distribute=mirrored" in result.new_text
    assert "eval_distribute=mirrored" in result.new_text
    assert "sgd = tf.keras.optimizers.legacy.SGD(0.05)" in result.new_text
    # A second run changes nothing.
    again = migrate_source(result.new_text, target=Target.TF2, path=str(PROGRAM))
    assert again.new_text in (None, result.new_text)
    original_program = tmp_path / "original.py"
    shutil.copy(PROGRAM, original_program)
    migrated_program = tmp_path / "migrated.py"
    migrated_program.write_text(result.new_text)

    original = harness.run_program(harness.tf_python(), original_program, tmp_path / "original")[0]
    migrated = harness.run_program(tfcur, migrated_program, tmp_path / "migrated")[0]

    for part in ("classifier", "regressor", "distributed", "keras"):
        assert sorted(migrated[part]) == sorted(original[part]), part
        assert migrated[part]["global_step"] == original[part]["global_step"]
    classifier, want = migrated["classifier"], original["classifier"]
    for key in FRACTIONS:
        assert classifier[key] == pytest.approx(want[key], abs=0.03), key
    for key in ("label/mean", "accuracy_baseline"):
        assert classifier[key] == pytest.approx(want[key], rel=1e-6), key
    assert classifier["prediction/mean"] == pytest.approx(want["prediction/mean"], abs=0.03)
    # Log loss near zero: compared absolutely (its relative spread between seeds is large).
    assert classifier["loss"] == pytest.approx(want["loss"], abs=0.03)
    regressor, want = migrated["regressor"], original["regressor"]
    assert regressor["label/mean"] == pytest.approx(want["label/mean"], rel=1e-6)
    assert regressor["prediction/mean"] == pytest.approx(want["prediction/mean"], abs=0.03)
    assert regressor["average_loss"] == pytest.approx(want["average_loss"], rel=0.25)
    # The DistributeConfig's strategy (one CPU) runs the same model from the same weights.
    assert migrated["distributed"]["loss"] == pytest.approx(
        original["distributed"]["loss"], rel=1e-4
    )
    # TF1's GradientDescentOptimizer and Keras' legacy SGD: the same update, the same weights.
    assert migrated["keras"]["loss"] == pytest.approx(original["keras"]["loss"], rel=1e-6)


# Columns the facade's premades take, and the ones they refuse at construction (a column
# built in another module reaches the facade unchecked by the rule).
_COLUMNS_PROBE = """
import json
import est2tpu.runtime.tf2 as est
import tensorflow as tf
fc = tf.feature_column
ids = fc.categorical_column_with_identity("ids", 4)
ok = [fc.indicator_column(ids), fc.embedding_column(ids, 2),
      fc.indicator_column(fc.weighted_categorical_column(ids, "w")),
      fc.bucketized_column(fc.numeric_column("x"), [0.0])]
out = {}
for name, columns in [
    ("ok", ok),
    ("hash", [fc.embedding_column(fc.categorical_column_with_hash_bucket("s", 10), 2)]),
    ("vocabulary", [fc.indicator_column(fc.categorical_column_with_vocabulary_list("s", ["a"]))]),
    ("crossed", [fc.indicator_column(fc.crossed_column([ids, "s"], 10))]),
]:
    try:
        est.DNNClassifier([4], columns)
        out[name] = "built"
    except NotImplementedError:
        out[name] = "refused"
    try:
        est.LinearClassifier(columns)
        out["linear_" + name] = "built"
    except NotImplementedError:
        out["linear_" + name] = "refused"
print(json.dumps(out))
"""


@pytest.mark.tf
def test_facade_dnn_takes_dense_columns_of_ids_linear_numeric_only(
    harness: ModuleType, tfcur: str
) -> None:
    # String columns' ids are looked up on the host when the step is compiled
    # (test_tf2_string_columns.py trains a DNN with them); the Linear premades' weights of
    # a categorical column are LinearModel's, which the facade does not build.
    result = harness.run_tf_json(_COLUMNS_PROBE, python=tfcur, timeout=300)
    assert result == {
        "ok": "built",
        "hash": "built",
        "vocabulary": "built",
        "crossed": "built",
        "linear_ok": "refused",
        "linear_hash": "refused",
        "linear_vocabulary": "refused",
        "linear_crossed": "refused",
    }
