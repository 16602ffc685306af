"""Premade estimators given TF1 optimizer instances, migrated with `--target tf2`, train like
the original.

A TF1 optimizer instance makes a premade TF 1.x's V1 class: TF 2.15's `tf.estimator.*`
(V2) raises a ValueError for one, and TF 1.x's `tf.estimator.LinearRegressor` is the class
TF 2.15 calls `tf.compat.v1.estimator.LinearRegressor`. So the original runs on TF 2.15 with
that spelling, and `programs/premade_tf1_optimizers.py` as TF 1.x programs write it is
migrated: each TF1 optimizer becomes its Keras legacy class with every argument (TF1's
defaults written where Keras' differ) and the premade gets V1's `loss_reduction=SUM`.

Measured (150 steps): the LinearRegressors, from zero weights, give TF 2.15's average loss
to 2.5e-7 relative for every optimizer (asserted to 1e-5); the DNNRegressor (random initial weights) agrees within
the tolerance of the other premade DNN tests.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType

import pytest

from est2tpu.api import migrate_source
from est2tpu.ftypes import Target

PROGRAM = Path(__file__).with_name("programs") / "premade_tf1_optimizers.py"
LINEAR = ("adagrad", "adam", "ftrl", "sgd", "momentum", "adadelta")


@pytest.mark.tf
def test_premades_given_tf1_optimizers_train_like_tf1(
    harness: ModuleType, tfcur: str, tmp_path: Path
) -> None:
    text = PROGRAM.read_text()
    result = migrate_source(text, target=Target.TF2, path=str(PROGRAM))
    assert result.new_text is not None
    assert [f.rule_id for f in result.findings] == [], [f.render() for f in result.findings]
    assert "tf.compat.v1.train" not in result.new_text
    assert result.new_text.count("loss_reduction=tf.keras.losses.Reduction.SUM,") == 7
    assert "tf.keras.optimizers.legacy.Adam(0.02, beta_1=0.8, beta_2=0.99, epsilon=1e-08)" in (
        result.new_text
    )
    again = migrate_source(result.new_text, target=Target.TF2, path=str(PROGRAM))
    assert again.new_text in (None, result.new_text)
    assert not again.findings

    original_program = tmp_path / "original.py"
    original_program.write_text(
        re.sub(r"tf\.estimator\.(\w+(Regressor|Classifier))\(", r"tf.compat.v1.estimator.\1(", text)
    )
    migrated_program = tmp_path / "migrated.py"
    migrated_program.write_text(result.new_text)
    original = harness.run_program(harness.tf_python(), original_program, tmp_path / "original")[0]
    migrated = harness.run_program(tfcur, migrated_program, tmp_path / "migrated")[0]

    for name in (*LINEAR, "dnn"):
        assert sorted(migrated[name]) == sorted(original[name]), name
        assert migrated[name]["global_step"] == original[name]["global_step"], name
        assert migrated[name]["label/mean"] == pytest.approx(original[name]["label/mean"], rel=1e-6)
    for name in LINEAR:
        # The same updates from the same (zero) weights: the same model to float rounding.
        for key in ("average_loss", "loss", "prediction/mean"):
            assert migrated[name][key] == pytest.approx(original[name][key], rel=1e-5), (name, key)
        assert migrated[name]["average_loss"] < 0.1  # it learned (2.5 before the first step)
    dnn, want = migrated["dnn"], original["dnn"]
    assert dnn["prediction/mean"] == pytest.approx(want["prediction/mean"], abs=0.03)
    assert dnn["average_loss"] == pytest.approx(want["average_loss"], rel=0.25)
