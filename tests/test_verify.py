"""`est2tpu verify`: real runs of real programs through the CLI, in subprocesses.

The programs that train run under TensorFlow 2.15 (``EST2TPU_TF215_PYTHON``) and, for the tf2
target's migrated copy, current TensorFlow (``EST2TPU_TFCUR_PYTHON``), for a few steps each.
Crashes, timeouts and programs that evaluate nothing need no TensorFlow.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from est2tpu.api import migrate_paths
from est2tpu.ftypes import Target
from est2tpu.textio import encode
from est2tpu.verify import Run, Verdict, Verification, _compare

REPO = Path(__file__).resolve().parents[1]
PROJECTS = REPO / "fixtures" / "projects"
STEPS = "20"  # train steps: enough for metrics that depend on every weight, and quick


def tf215() -> str:
    python = os.environ.get("EST2TPU_TF215_PYTHON", "")
    if python and Path(python).is_file():
        return python
    if os.environ.get("EST2TPU_REQUIRE_TF") == "1":
        pytest.fail("EST2TPU_REQUIRE_TF=1 but EST2TPU_TF215_PYTHON is not set", pytrace=False)
    pytest.skip("EST2TPU_TF215_PYTHON is not set (scripts/test.sh sets it)")


def tfcur() -> str:
    python = os.environ.get("EST2TPU_TFCUR_PYTHON", "")
    if python and Path(python).is_file():
        return python
    if os.environ.get("EST2TPU_REQUIRE_TF") == "1":
        pytest.fail("EST2TPU_REQUIRE_TF=1 but EST2TPU_TFCUR_PYTHON is not set", pytrace=False)
    pytest.skip("EST2TPU_TFCUR_PYTHON is not set (scripts/test.sh sets it)")


def verify(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COLUMNS="200", TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    env.pop("TPU_NAME", None)
    env.pop("TF_CONFIG", None)
    return subprocess.run(
        [sys.executable, "-m", "est2tpu", "verify", *args],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
        cwd=cwd,
        env=env,
    )


def tree_digest(root: Path) -> dict[str, str]:
    """Every file's bytes (and every directory) under root: a run must change none."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        out[rel] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
    return out


def table_rows(stdout: str) -> dict[str, list[str]]:
    """The table's rows by first cell: {'accuracy': ['0.97', '0.97', '0.97', 'equal'], ...}."""
    rows = {}
    for line in stdout.splitlines():
        if line.startswith("│"):
            cells = [c.strip() for c in line.strip("│").split("│")]
            rows[cells[0]] = cells[1:]
    return rows


def copy_of(name: str, tmp_path: Path) -> Path:
    dest = tmp_path / name
    shutil.copytree(PROJECTS / name, dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def write_program(root: Path, source: str, name: str = "train.py") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / name).write_text(textwrap.dedent(source), encoding="utf-8")
    return root


# --- agree: the example projects, both targets -------------------------------------------


@pytest.mark.tf
def test_tpu_estimator_migration_agrees_bit_for_bit(tmp_path: Path) -> None:
    project = copy_of("single_file_classifier", tmp_path)
    before = tree_digest(project)
    proc = verify(
        str(project), "--", tf215(), "train.py", "--model_dir", "model", "--results", "r.json",
        "--steps", STEPS,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = table_rows(proc.stdout)
    for metric in ("accuracy", "loss", "mean_per_class_accuracy", "global_step"):
        original_1, original_2, migrated, verdict = rows[metric]
        assert original_1 == original_2 == migrated and verdict == "equal", rows[metric]
    assert rows["global_step"][0] == STEPS
    assert rows["final global step"][:3] == [STEPS] * 3
    assert rows["exit code"][:3] == ["0", "0", "0"]
    assert "deterministic: the original's 2 runs agree" in proc.stdout
    assert "AGREE" in proc.stdout
    # Nothing written in PROJECT: no model dir, no results, no migrated file.
    assert tree_digest(project) == before


@pytest.mark.tf
def test_two_module_trainer_agrees_when_run_as_a_module(tmp_path: Path) -> None:
    project = copy_of("two_module_trainer", tmp_path)
    (project / "out").mkdir()
    before = tree_digest(project)
    # An absolute path into PROJECT in the command is the copy's in each run.
    results = project / "out" / "results.json"
    proc = verify(
        "--runs", "1", str(project), "--", tf215(), "-m", "trainer.task",
        "--model_dir", "model", "--results", str(results), "--train_steps", STEPS,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = table_rows(proc.stdout)
    assert rows["loss"][0] == rows["loss"][1] and rows["loss"][2] == "equal"
    assert "migration: the migration changed" in proc.stdout
    assert tree_digest(project) == before


@pytest.mark.tf
def test_tf2_migration_agrees_on_current_tensorflow(tmp_path: Path) -> None:
    project = copy_of("single_file_classifier", tmp_path)
    before = tree_digest(project)
    proc = verify(
        "--target", "tf2", "--python", tfcur(), str(project), "--", tf215(), "train.py",
        "--model_dir", "model", "--results", "r.json", "--steps", STEPS,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = table_rows(proc.stdout)
    assert set(rows) >= {"accuracy", "loss", "global_step", "final global step"}
    for metric in ("accuracy", "loss", "mean_loss", "mean_per_class_accuracy"):
        assert rows[metric][3] == "equal" or rows[metric][3].startswith("within tolerance ("), rows[
            metric
        ]
    assert rows["global_step"][3] == "equal"
    assert "running migrated: " + tfcur() in proc.stderr
    assert tree_digest(project) == before


INITIAL_VALUES = """\
    import numpy as np
    import tensorflow as tf

    # The program's own seeds; the metrics depend on nothing but the initial weights
    # (a learning rate of 0): TF 2.15 and current TensorFlow draw them differently.
    tf.keras.utils.set_random_seed(7)
    rng = np.random.RandomState(0)
    X = rng.normal(size=(160, 4)).astype(np.float32)
    Y = (X[:, 0] - X[:, 1] > 0).astype(np.int32)


    def input_fn():
        return tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).batch(32)


    def model_fn(features, labels, mode):
        hidden = tf.compat.v1.layers.dense(features["x"], 8, activation=tf.nn.relu)
        logits = tf.compat.v1.layers.dense(hidden, 2)
        loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
        if mode == tf.estimator.ModeKeys.EVAL:
            accuracy = tf.compat.v1.metrics.accuracy(labels, tf.argmax(logits, axis=1))
            return tf.estimator.EstimatorSpec(
                mode, loss=loss, eval_metric_ops={"accuracy": accuracy}
            )
        train_op = tf.compat.v1.train.GradientDescentOptimizer(0.0).minimize(
            loss, global_step=tf.compat.v1.train.get_global_step()
        )
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


    estimator = tf.estimator.Estimator(model_fn, model_dir="model")
    estimator.train(input_fn, steps=1)
    print(estimator.evaluate(input_fn))
"""


@pytest.mark.tf
def test_tf2_accuracy_is_held_to_how_far_other_initial_values_move_it(tmp_path: Path) -> None:
    """Current TensorFlow draws other initial values than TF 2.15 under the same seeds; the
    original's run under other TensorFlow seeds (its own `set_random_seed` shifted too) shows
    how far that alone moves each metric, and the migrated run is held to twice that."""
    project = write_program(tmp_path / "initial_values", INITIAL_VALUES)
    proc = verify("--target", "tf2", "--python", tfcur(), str(project), "--", tf215(), "train.py")
    assert "running original, TensorFlow seeds + 1: " in proc.stderr
    assert "initial values: under other TensorFlow seeds" in proc.stdout, proc.stdout
    assert "\n  accuracy: " in proc.stdout
    rows = table_rows(proc.stdout)
    assert rows["accuracy"][0] == rows["accuracy"][1]  # deterministic under the same seeds
    assert rows["accuracy"][3] == "equal" or rows["accuracy"][3].startswith("within tolerance"), (
        proc.stdout
    )
    assert rows["global_step"][3] == "equal"
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _run(label: str, metrics: dict[str, float]) -> Run:
    record = {"evaluations": [{"metrics": metrics}], "trains": [], "final_global_step": 20}
    return Run(label, 0, 1.0, record, [])


@pytest.mark.parametrize(
    ("target", "reseeded_accuracy", "verdict"),
    [
        # 7 of 160 examples apart: over the stated 0.03, within twice how far other
        # initial values move the original (0.025)
        ("tf2", 0.85, Verdict.WITHIN),
        ("tf2", None, Verdict.DIFFERENT),  # --runs 1: no reseeded run, the stated 0.03
        ("tf2", 0.875, Verdict.DIFFERENT),  # the seeds do not move it: the stated 0.03
        ("tpu-estimator", None, Verdict.DIFFERENT),  # bit-identical or different
    ],
)
def test_accuracy_tolerance_by_target(
    target: str, reseeded_accuracy: float | None, verdict: Verdict
) -> None:
    result = Verification(Target(target), ["python", "train.py"])
    result.originals = [
        _run("original #1", {"accuracy": 0.875}),
        _run("original #2", {"accuracy": 0.875}),
    ]
    if reseeded_accuracy is not None:
        result.reseeded = _run("reseeded", {"accuracy": reseeded_accuracy})
    result.migrated = _run("migrated", {"accuracy": 0.875 - 7 / 160})
    _compare(result)
    rows = {row.name: row for row in result.rows}
    assert rows["accuracy"].verdict is verdict
    assert rows["final global step"].verdict is Verdict.EQUAL
    assert result.agree is (verdict is Verdict.WITHIN)
    assert bool(result.seed_moved) is (reseeded_accuracy not in (None, 0.875))


# --- disagree -----------------------------------------------------------------------------


@pytest.mark.tf
def test_a_model_fn_changed_by_hand_after_migrating_disagrees(tmp_path: Path) -> None:
    project = copy_of("single_file_classifier", tmp_path / "user")
    migrated = tmp_path / "migrated"
    shutil.copytree(project, migrated)
    for result in migrate_paths([migrated]):
        if result.changed:
            assert result.new_text is not None
            result.path.write_bytes(encode(result.new_text, result.encoding, result.bom))
    train = migrated / "train.py"
    text = train.read_text()
    assert "TPUEstimator(" in text
    # The hand edit: a different activation in the hidden layers of the model_fn.
    assert text.count("activation=tf.nn.relu") == 1
    train.write_text(text.replace("activation=tf.nn.relu", "activation=tf.nn.tanh"))
    # One run of the original: on this target the migrated numbers are equal or different,
    # whether or not the original is deterministic.
    proc = verify(
        "--runs", "1", "--migrated", str(migrated), str(project), "--", tf215(), "train.py",
        "--model_dir", "model", "--results", "r.json", "--steps", STEPS,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    rows = table_rows(proc.stdout)
    # columns: original, migrated, verdict
    assert rows["loss"][2].startswith("different (by ") and rows["loss"][0] != rows["loss"][1]
    assert rows["global_step"][2] == "equal"
    assert "DISAGREE" in proc.stdout
    assert f"migrated copy: {migrated}" in proc.stdout


@pytest.mark.tf
def test_a_migrated_copy_that_crashes_disagrees_with_its_traceback(tmp_path: Path) -> None:
    project = copy_of("single_file_classifier", tmp_path / "user")
    migrated = tmp_path / "migrated"
    shutil.copytree(project, migrated)
    train = migrated / "train.py"
    train.write_text(
        train.read_text().replace(
            "def main():\n", "def main():\n    raise ValueError('lost in migration')\n"
        )
    )
    proc = verify(
        "--runs", "1", "--migrated", str(migrated), str(project), "--", tf215(), "train.py",
        "--model_dir", "model", "--results", "r.json", "--steps", "5",
    )  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "migrated crashed (exit code 1)" in proc.stdout
    assert "ValueError: lost in migration" in proc.stdout
    assert f"<migrated copy of {project}>/train.py" in proc.stdout
    rows = table_rows(proc.stdout)
    assert rows["loss"][2] == "missing" and rows["exit code"][:2] == ["0", "1"]


# --- a program whose own runs differ ------------------------------------------------------

UNSEEDED = """\
    import numpy as np
    import tensorflow as tf

    # Fresh OS entropy at every run: no seed the hook sets reaches this generator.
    rng = np.random.default_rng()
    X = rng.normal(size=(64, 3)).astype(np.float32)
    Y = (X.sum(axis=1) > 0).astype(np.int32)


    def input_fn():
        return tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).repeat().batch(16)


    def model_fn(features, labels, mode):
        logits = tf.compat.v1.layers.dense(features["x"], 2)
        loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
        train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
            loss, global_step=tf.compat.v1.train.get_global_step()
        )
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


    estimator = tf.estimator.Estimator(model_fn, model_dir="model")
    estimator.train(input_fn, steps=5)
    print(estimator.evaluate(input_fn, steps=2))
"""


@pytest.mark.tf
def test_a_non_deterministic_program_is_named_with_its_metric(tmp_path: Path) -> None:
    project = write_program(tmp_path / "unseeded", UNSEEDED)
    proc = verify(str(project), "--", tf215(), "train.py")
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    nondeterministic = "non-deterministic: the original's own runs differ under the same seeds"
    assert nondeterministic in proc.stdout
    assert "  loss: " in proc.stdout and "differs by" in proc.stdout
    rows = table_rows(proc.stdout)
    assert rows["loss"][0] != rows["loss"][1]
    assert rows["global_step"][3] == "equal"  # the step count does not depend on the data


# --- cannot verify: no TensorFlow needed --------------------------------------------------


def test_a_crashing_original_shows_the_end_of_its_traceback(tmp_path: Path) -> None:
    project = write_program(
        tmp_path / "crashes",
        """\
        def load(path):
            raise FileNotFoundError(f"no such data: {path}")

        load("data/train.csv")
        """,
    )
    before = tree_digest(project)
    proc = verify(str(project), "--", sys.executable, "train.py")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "original #1 crashed (exit code 1)" in proc.stdout
    assert "FileNotFoundError: no such data: data/train.csv" in proc.stdout
    assert f'File "{project}/train.py", line 4' in proc.stdout
    assert "CANNOT VERIFY" in proc.stdout
    rows = table_rows(proc.stdout)
    assert rows["exit code"][:2] == ["1", "not run"]  # a crash is not run twice
    assert tree_digest(project) == before


@pytest.mark.slow  # waits out a timeout
def test_a_program_that_hangs_is_stopped_at_the_timeout(tmp_path: Path) -> None:
    project = write_program(tmp_path / "hangs", "import time\ntime.sleep(120)\n")
    proc = verify("--timeout", "2", str(project), "--", sys.executable, "train.py")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "original #1 timed out after 2 s and was stopped" in proc.stdout
    assert table_rows(proc.stdout)["exit code"][0] == "timed out"


def test_a_program_that_evaluates_nothing_says_so(tmp_path: Path) -> None:
    project = write_program(tmp_path / "quiet", "print('training is for another day')\n")
    proc = verify(str(project), "--", sys.executable, "train.py")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "nothing evaluated: the original never called Estimator.evaluate()" in proc.stdout


def test_a_command_that_is_not_python_records_nothing(tmp_path: Path) -> None:
    project = write_program(tmp_path / "shell", "print('x')\n")
    proc = verify(str(project), "--", "true")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "the verify hook recorded nothing" in proc.stdout


def test_usage_errors_run_nothing(tmp_path: Path) -> None:
    project = write_program(tmp_path / "p", "raise SystemExit(3)\n")
    no_command = verify(str(project))
    assert no_command.returncode == 2
    assert "no COMMAND given" in no_command.stderr
    not_python = verify("--python", sys.executable, str(project), "--", "bash", "run.sh")
    assert not_python.returncode == 2
    assert "--python replaces COMMAND's interpreter" in not_python.stderr
    missing = verify(str(tmp_path / "missing"), "--", sys.executable, "train.py")
    assert missing.returncode == 2 and "is not a directory" in missing.stderr


# --- the hook itself ----------------------------------------------------------------------


def test_the_hook_imports_neither_tensorflow_nor_the_cli_stack() -> None:
    code = (
        "import sys, json; import est2tpu.runtime.verify_hook as h; h.install();"
        "print(json.dumps(sorted(m for m in ('libcst', 'typer', 'rich', 'tensorflow', 'numpy')"
        " if m in sys.modules)))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
    )
    assert json.loads(proc.stdout) == []


def test_paths_into_the_project_run_in_the_copy_but_its_virtualenv_stays(tmp_path: Path) -> None:
    project = write_program(
        tmp_path / "withvenv",
        """\
        import pathlib, sys
        # The copy runs (never PROJECT), under the project's own interpreter; a path into
        # PROJECT in the command is the copy's.
        where = "a copy" if "est2tpu-verify-" in str(pathlib.Path(__file__).resolve()) else "PROJECT"
        argument = "a copy" if "est2tpu-verify-" in sys.argv[1] else "PROJECT"
        python = pathlib.Path(sys.executable).parent.parent.name
        raise SystemExit(f"ran in {where}, argument in {argument}, python in {python}")
        """,
    )
    venv_python = project / ".venv" / "bin" / "python"
    venv_python.parent.mkdir(parents=True)
    venv_python.symlink_to(Path(sys.executable).resolve())
    proc = verify(str(project), "--", str(venv_python), str(project / "train.py"), str(project))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "ran in a copy, argument in a copy, python in .venv" in proc.stdout
