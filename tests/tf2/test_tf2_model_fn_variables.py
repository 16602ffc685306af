"""Model_fns that create their own variables, and TF1 optimizers no rule maps, migrated with
`--target tf2`, train like the original on current TensorFlow: under the default strategy,
and under XLA with 8 CPU replicas together (the closest CPU stand-in for a TPU), with
`TF_USE_LEGACY_KERAS` unset and set.

Each program runs on TF 2.15 as written and on current TensorFlow migrated.
`programs/model_fn_variables.py`: a Keras Sequential built at the top of the model_fn (from
`import tensorflow.keras as keras`, above the facade's import), a `tf.keras.Model` subclass
trained by `compute_gradients(loss, tf.compat.v1.trainable_variables())` and
`apply_gradients`, and a TF1 optimizer built outside the model_fn and passed in `params`.
`programs/feature_column_variables.py`: a feature-column `input_layer` with an embedding
column inside a `variable_scope`, beside a `linear_model`, also under XLA alone and over 8
replicas alone: under XLA the lookup is the dense one XLA compiles (`_dense_lookup`), over
several replicas each sparse gradient is all-reduced dense (`_distribute.reducible`).
`programs/tf1_optimizers_the_facade_did_not_build.py`: an Estimator subclass (its model_fn
stays TF1 code) and a TF1 optimizer subclass with its own `compute_gradients`.

The facade creates each variable once, in the build trace, and hands it back on every later
call (`_core.variable_store`); it routes TF1 optimizers it did not build
(`train.route_tf1_optimizers`). Accuracy within 0.03 absolute, loss within 25%. Measured:
the Keras Sequential part and the Estimator subclass give TF 2.15's numbers to 7 digits;
XLA over 8 replicas gives the default strategy's.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from est2tpu.api import migrate_source
from est2tpu.ftypes import Target

PROGRAMS = Path(__file__).with_name("programs")
# program -> its parts (one Estimator each) and the findings its migration reports
CASES: dict[str, tuple[str, ...]] = {
    "model_fn_variables": ("keras_sequential", "keras_subclass", "params_optimizer"),
    "tf1_optimizers_the_facade_did_not_build": ("subclassed_estimator", "optimizer_subclass"),
    "feature_column_variables": ("feature_columns",),
}
ENVIRONMENTS: dict[str, dict[str, str]] = {
    "default": {},
    "xla_8_replicas": {"EST2TPU_JIT_COMPILE": "1", "EST2TPU_CPU_REPLICAS": "8"},
    "legacy_keras_set_xla_8_replicas": {
        "TF_USE_LEGACY_KERAS": "1",
        "EST2TPU_JIT_COMPILE": "1",
        "EST2TPU_CPU_REPLICAS": "8",
    },
}
# The feature-column program also runs under XLA alone and over 8 replicas alone: the
# embedding's lookup and sparse gradient take a path of their own in each.
SPARSE_PATHS: dict[str, dict[str, str]] = {
    "xla": {"EST2TPU_JIT_COMPILE": "1"},
    "8_replicas": {"EST2TPU_CPU_REPLICAS": "8"},
}
ENVIRONMENTS_OF: dict[str, dict[str, dict[str, str]]] = {
    name: {**ENVIRONMENTS, **SPARSE_PATHS} if name == "feature_column_variables" else ENVIRONMENTS
    for name in CASES
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
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    report: dict[str, Any] = json.loads(results.read_text())
    return report


_MIGRATED: dict[str, Path] = {}
_ORIGINAL: dict[str, dict[str, Any]] = {}


def migrated_program(name: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The program migrated with --target tf2 (once per session)."""
    if name not in _MIGRATED:
        program = PROGRAMS / f"{name}.py"
        result = migrate_source(program.read_text(), target=Target.TF2, path=str(program))
        assert result.new_text is not None
        assert [f.render() for f in result.findings] == []
        assert "tf.estimator" not in result.new_text
        again = migrate_source(result.new_text, target=Target.TF2, path=str(program))
        assert again.new_text in (None, result.new_text)
        path = tmp_path_factory.mktemp(f"{name}-migrated") / "migrated.py"
        path.write_text(result.new_text)
        _MIGRATED[name] = path
    return _MIGRATED[name]


def original(
    name: str, harness: ModuleType, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """The program's results on TF 2.15, as written (once per session)."""
    if name not in _ORIGINAL:
        work = tmp_path_factory.mktemp(f"{name}-original") / "run"
        _ORIGINAL[name] = _run(harness, harness.tf_python(), PROGRAMS / f"{name}.py", work, {})
    return _ORIGINAL[name]


@pytest.mark.tf
@pytest.mark.parametrize(
    ("name", "environment"),
    [
        (name, environment)
        for name in sorted(CASES)
        for environment in sorted(ENVIRONMENTS_OF[name])
    ],
)
def test_migrated_program_trains_like_the_original(
    name: str,
    environment: str,
    harness: ModuleType,
    tfcur: str,
    tmp_path_factory: pytest.TempPathFactory,
    tmp_path: Path,
) -> None:
    want_all = original(name, harness, tmp_path_factory)
    program = migrated_program(name, tmp_path_factory)
    migrated = _run(harness, tfcur, program, tmp_path / "run", ENVIRONMENTS_OF[name][environment])
    parts = CASES[name]
    assert sorted(migrated) == sorted(want_all) == sorted(parts)
    for part in parts:
        got, want = migrated[part], want_all[part]
        assert sorted(got) == sorted(want), part
        assert got["global_step"] == want["global_step"], part
        if "accuracy" in want:
            assert got["accuracy"] == pytest.approx(want["accuracy"], abs=0.03), part
        assert got["loss"] == pytest.approx(want["loss"], rel=0.25), part
