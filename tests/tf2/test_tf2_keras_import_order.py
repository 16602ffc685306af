"""Keras on current TensorFlow does not depend on import order, and a missing tf-keras is
reported at once with the fix.

- A program (or a harness around it) that uses `tf.keras` before importing the facade
  would get Keras 3 from TensorFlow; importing the facade routes `tf.keras`,
  `from tensorflow import keras`, `tf.compat.v1.layers` and `import tensorflow.keras...`
  to tf-keras anyway, and a migrated `model_to_estimator` project run from such a harness
  trains to exactly the results of a plain run.
- On stock current TensorFlow without tf-keras (`pip install tensorflow-cpu`), a migrated
  program stops at the facade's import with `pip install "est2tpu[tf2]"`, the extra
  pyproject.toml declares.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

from est2tpu.api import migrate_paths
from est2tpu.ftypes import Target

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO_ROOT = Path(__file__).resolve().parents[2]
NOKERAS_PYTHON_ENV = "EST2TPU_TFCUR_NOKERAS_PYTHON"
PROJECT = "keras_model_to_estimator"

_ROUTING_PROBE = textwrap.dedent(
    """
    import json
    import tensorflow as tf
    from tensorflow import keras as bound_before
    tf.keras.utils.set_random_seed(1)
    before = type(tf.keras.layers.Dense(1)).__module__
    import est2tpu.runtime.tf2
    from tensorflow.keras import layers
    print(json.dumps({
        "before": before,
        "tf.keras": type(tf.keras.layers.Dense(1)).__module__,
        "bound before": type(bound_before.layers.Dense(1)).__module__,
        "tf.compat.v1.layers": tf.compat.v1.layers.Dense.__module__,
        "import tensorflow.keras": layers.Dense.__module__,
    }))
    """
)

# A harness that seeds through tf.keras before the migrated program imports the facade.
_HARNESS_FIRST = textwrap.dedent(
    """
    import runpy
    import sys

    import tensorflow as tf

    tf.keras.utils.set_random_seed(20240613)
    sys.argv = ["train.py", *sys.argv[1:]]
    runpy.run_path("train.py", run_name="__main__")
    """
)


def _migrated_project(harness: ModuleType, dest: Path) -> Path:
    from est2tpu.textio import encode
    from est2tpu.writer import write_atomic

    copy = harness.copy_project(PROJECT, dest)
    for result in migrate_paths([copy], target=Target.TF2):
        assert not result.findings, [f.render() for f in result.findings]
        if result.changed:
            assert result.new_text is not None
            write_atomic(result.path, encode(result.new_text, result.encoding, result.bom))
    return copy


@pytest.mark.tf
def test_tf_keras_used_before_the_facade_is_routed_to_tf_keras(
    harness: ModuleType, tfcur: str
) -> None:
    report = harness.run_tf_json(_ROUTING_PROBE, python=tfcur)
    assert report.pop("before").startswith("keras.")  # Keras 3: what TensorFlow gave first
    assert all(module.startswith("tf_keras.") for module in report.values()), report


@pytest.mark.tf
def test_model_to_estimator_seeded_through_tf_keras_first_trains_identically(
    harness: ModuleType, tfcur: str, tmp_path: Path
) -> None:
    project = _migrated_project(harness, tmp_path / "project")
    (project / "harness_first.py").write_text(_HARNESS_FIRST)
    entry = harness.PROJECTS[PROJECT].entry
    plain = harness.run_project(project, entry, tmp_path / "plain", python=tfcur, timeout=500)
    first = harness.run_project(
        project, ("harness_first.py",), tmp_path / "first", python=tfcur, timeout=500
    )
    assert first.results == plain.results
    assert plain.metrics["accuracy"] > 0.5


def test_pyproject_declares_the_tf2_extra() -> None:
    extras = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    names = {spec.split(">")[0].split("~")[0].split("=")[0] for spec in extras["tf2"]}
    assert names == {"tensorflow", "tf-keras", "tensorboard"}


@pytest.mark.tf
def test_without_tf_keras_the_program_stops_at_import_with_the_fix(
    harness: ModuleType, tmp_path: Path
) -> None:
    python = os.environ.get(NOKERAS_PYTHON_ENV, "")
    if not (python and Path(python).is_file()):
        if os.environ.get("EST2TPU_REQUIRE_TF") == "1":
            pytest.fail(f"EST2TPU_REQUIRE_TF=1 but {NOKERAS_PYTHON_ENV} is not set")
        pytest.skip(f"{NOKERAS_PYTHON_ENV} is not set (scripts/tfcur-env.sh --no-keras)")
    project = _migrated_project(harness, tmp_path / "project")
    proc = subprocess.run(
        [
            python,
            *harness.PROJECTS[PROJECT].entry,
            "--model_dir",
            str(tmp_path / "m"),
            "--results",
            str(tmp_path / "r.json"),
        ],
        cwd=project,
        env=harness.tf_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode != 0
    assert "ImportError: est2tpu.runtime.tf2 needs tf-keras" in proc.stderr
    assert 'pip install "est2tpu[tf2]"' in proc.stderr
    assert not (tmp_path / "m").exists()  # stopped before training anything
