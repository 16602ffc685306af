"""Input functions in one module that return what a helper in another module batches.

`trainer/task.py` builds two Estimators; its input functions return `data.shuffled_batches
(params, True)` (the helper batches by the params the Estimator hands the input function,
whose dict holds "batch_size") and `data.batches(X, Y[, 23])` (the helper batches by an
argument of its own, or its default, a module constant of data.py). Migrated by the CLI
(twice: the second run changes nothing), the first helper keeps reading params, which
TPUEstimator now fills with the size the dict held (its key moved to the constructor),
the calls of the second pass params["batch_size"], and both helpers get static batches on
TPU only. On CPU the migrated project trains to exactly the original's metrics.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

PROJECT = Path(__file__).with_name("programs") / "helper_batches_elsewhere"


def _est2tpu(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "est2tpu", *args],
        capture_output=True,
        text=True,
        check=False,
    )


def _migrated_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "migrated"
    shutil.copytree(PROJECT, copy, ignore=shutil.ignore_patterns("__pycache__"))
    first = _est2tpu("migrate", "--no-cache", str(copy))
    assert first.returncode == 0, first.stderr
    return copy


def test_helpers_in_another_module_batch_by_the_tpu_estimators_size(tmp_path: Path) -> None:
    copy = _migrated_copy(tmp_path)
    data = (copy / "trainer" / "data.py").read_text()
    task = (copy / "trainer" / "task.py").read_text()
    assert 'dataset.batch(params["batch_size"], drop_remainder=tpu_runtime.use_tpu())' in data
    assert "dataset.batch(batch_size, drop_remainder=tpu_runtime.use_tpu())" in data
    assert "return data.shuffled_batches(params, True)" in task
    assert 'data.batches(data.X, data.Y, batch_size=params["batch_size"])' in task
    assert 'data.batches(data.X, data.Y, params["batch_size"], repeat=True)' in task
    assert 'params = {"units": 8, "learning_rate": 0.1}' in task
    for size in ("train_batch_size=24", "eval_batch_size=30", "train_batch_size=23"):
        assert size in task
    for path in (copy / "trainer").glob("*.py"):
        compile(path.read_text(), str(path), "exec")
    again = _est2tpu("check", "--no-cache", str(copy))
    assert again.returncode == 0, again.stdout + again.stderr


@pytest.mark.tf
def test_helper_batched_project_trains_like_the_original(
    harness: ModuleType, tmp_path: Path
) -> None:
    original = tmp_path / "original"
    shutil.copytree(PROJECT, original, ignore=shutil.ignore_patterns("__pycache__"))
    copy = _migrated_copy(tmp_path)
    entry = ("-m", "trainer.task")
    before = harness.run_project(original, entry, tmp_path / "run-original")
    after = harness.run_project(copy, entry, tmp_path / "run-migrated")
    assert after.results["metrics"] == before.results["metrics"]
    assert after.results["more"] == before.results["more"]
    assert before.results["metrics"]["global_step"] == 30
    assert before.results["more"]["global_step"] == 15
