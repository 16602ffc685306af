"""Model_fns that create their own variables, migrated with `--target tf2`, train like the
original on current TensorFlow: under the default strategy, and under XLA with 8 CPU
replicas together (the closest CPU stand-in for a TPU), with `TF_USE_LEGACY_KERAS` unset
and set.

`programs/model_fn_variables.py` on TF 2.15 as written and on current TensorFlow migrated:
a Keras Sequential built at the top of the model_fn, a `tf.keras.Model` subclass trained by
`compute_gradients(loss, tf.compat.v1.trainable_variables())` and `apply_gradients`, a TF1
optimizer built outside the model_fn and passed in `params`, and a feature-column
`input_layer` with an embedding column inside a `variable_scope` beside a `linear_model`.
The facade creates each variable once, in the build trace, and hands it back on every
later call (`_core.variable_store`). The parts start from different random weights than
TF 2.15's: accuracy within 0.03 absolute, loss within 25%.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from est2tpu.api import migrate_source
from est2tpu.ftypes import Target

PROGRAM = Path(__file__).with_name("programs") / "model_fn_variables.py"
PARTS = ("keras_sequential", "keras_subclass", "params_optimizer", "feature_columns")
ENVIRONMENTS: dict[str, dict[str, str]] = {
    "default": {},
    "xla_8_replicas": {"EST2TPU_JIT_COMPILE": "1", "EST2TPU_CPU_REPLICAS": "8"},
    "legacy_keras_set_xla_8_replicas": {
        "TF_USE_LEGACY_KERAS": "1",
        "EST2TPU_JIT_COMPILE": "1",
        "EST2TPU_CPU_REPLICAS": "8",
    },
}


def _run(
    harness: ModuleType, python: str, program: Path, work: Path, env: dict[str, str]
) -> dict[str, Any]:
    work.mkdir(parents=True)
    results = work / "results.json"
    proc = harness.forkserver.run(
        python,
        [str(program), str(work / "model"), str(results)],
        cwd=Path.cwd(),
        env=harness.tf_env(env),
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    report: dict[str, Any] = json.loads(results.read_text())
    return report


@pytest.fixture(scope="module")
def migrated_program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    result = migrate_source(PROGRAM.read_text(), target=Target.TF2, path=str(PROGRAM))
    assert result.new_text is not None
    assert [f.render() for f in result.findings] == []
    assert "tf.estimator" not in result.new_text
    again = migrate_source(result.new_text, target=Target.TF2, path=str(PROGRAM))
    assert again.new_text in (None, result.new_text)
    path = tmp_path_factory.mktemp("model-fn-variables") / "migrated.py"
    path.write_text(result.new_text)
    return path


@pytest.fixture(scope="module")
def original(harness: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("model-fn-variables-original") / "run"
    return _run(harness, harness.tf_python(), PROGRAM, work, {})


@pytest.mark.tf
@pytest.mark.parametrize("environment", sorted(ENVIRONMENTS))
def test_model_fn_variables_train_like_the_original(
    environment: str,
    harness: ModuleType,
    tfcur: str,
    migrated_program: Path,
    original: dict[str, Any],
    tmp_path: Path,
) -> None:
    migrated = _run(harness, tfcur, migrated_program, tmp_path / "run", ENVIRONMENTS[environment])
    assert sorted(migrated) == sorted(original) == sorted(PARTS)
    for part in PARTS:
        got, want = migrated[part], original[part]
        assert sorted(got) == sorted(want), part
        assert got["global_step"] == want["global_step"], part
        assert got["accuracy"] == pytest.approx(want["accuracy"], abs=0.03), part
        assert got["loss"] == pytest.approx(want["loss"], rel=0.25), part
