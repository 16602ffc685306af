"""`est2tpu verify --tpu`: one real TensorFlow 2.15 program per defect class, through the CLI
in a subprocess; each finding at the line its program marks (``# expect: TPU1xx``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from est2tpu.runtime.tpu_verify_ids import CHECKS
from est2tpu.tpucheck import catalogue
from tests.test_verify import tf215
from tests.tpu.programs import CLASSES, CLEAN, expected, program
from tests.tpu.programs_tf2 import CLEAN as TF2_CLEAN
from tests.tpu.programs_tf2 import DEFECTS as TF2_DEFECTS
from tests.tpu.programs_tf2 import program as tf2_program

REPO = Path(__file__).resolve().parents[2]


def run_verify_tpu(
    project: Path, options: list[str], program: list[str]
) -> subprocess.CompletedProcess[str]:
    """`est2tpu verify --tpu OPTIONS PROJECT -- <TF 2.15 python> PROGRAM...`."""
    env = dict(os.environ, COLUMNS="200", TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    env.pop("TPU_NAME", None)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "est2tpu",
            "verify",
            "--tpu",
            *options,
            str(project),
            "--",
            tf215(),
            *program,
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env=env,
    )


def verify_tpu(project: Path, *options: str) -> subprocess.CompletedProcess[str]:
    return run_verify_tpu(project, list(options), ["train.py"])


def write(tmp_path: Path, text: str) -> Path:
    project = tmp_path / "project"
    project.mkdir(parents=True)
    (project / "train.py").write_text(text, encoding="utf-8")
    return project


# Run alone: a program with warnings only exits 0 (`test_sarif_formats_carry_the_finding`
# runs summary_in_loop alone: errors exit 1).
_ALONE = ("dynamic_padder",)
# Module of the shared run that runs each program's main() in turn, in one TensorFlow
# process: a program the check ends (SystemExit) leaves the next one to run.
_RUN_ALL = """\
import importlib
import sys

for name in sys.argv[1:]:
    try:
        importlib.import_module(name).main()
    except SystemExit:
        pass
"""


@pytest.fixture(scope="module")
def shared_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, dict[str, str], subprocess.CompletedProcess[str]]:
    """Every defect class but `_ALONE`, one module each, checked by one `verify --tpu` run:
    TensorFlow is imported once, not once per program. Each module has a model_dir of its
    own; findings are told apart by their path."""
    project = tmp_path_factory.mktemp("defects") / "project"
    project.mkdir()
    texts = {}
    for defect in CLASSES:
        if defect in _ALONE:
            continue
        text = program(defect).replace('model_dir="model"', f'model_dir="model-{defect}"', 1)
        (project / f"{defect}.py").write_text(text, encoding="utf-8")
        texts[defect] = text
    (project / "run_all.py").write_text(_RUN_ALL, encoding="utf-8")
    done = run_verify_tpu(project, ["-f", "json"], ["run_all.py", *texts])
    return project, texts, done


@pytest.mark.tf
@pytest.mark.parametrize("defect", CLASSES)
def test_each_defect_is_reported_at_its_line(
    tmp_path: Path,
    defect: str,
    shared_run: tuple[Path, dict[str, str], subprocess.CompletedProcess[str]],
) -> None:
    if defect in _ALONE:
        text = program(defect)
        project = write(tmp_path, text)
        done = verify_tpu(project, "-f", "json")
        path = project / "train.py"
    else:
        project, texts, done = shared_run
        text = texts[defect]
        path = project / f"{defect}.py"
    doc = json.loads(done.stdout)
    mine = [f for f in doc["findings"] if f["path"] == path.as_posix()]
    found = {(f["line"], f["rule"]) for f in mine}
    assert found == expected(text), done.stderr[-2000:]
    if defect in _ALONE:
        assert {f["path"] for f in doc["findings"]} <= {path.as_posix()}
        errors = [i for _, i in found if CHECKS[i].severity == "error"]
        assert done.returncode == (1 if errors else 0), done.stderr[-2000:]
    else:
        paths = {f["path"] for f in doc["findings"]}
        assert paths <= {(project / f"{d}.py").as_posix() for d in texts}, paths
        assert done.returncode == 1, done.stderr[-2000:]


@pytest.mark.tf
def test_a_clean_program_is_tpu_ready_in_under_a_minute(tmp_path: Path) -> None:
    project = write(tmp_path, CLEAN)
    start = time.monotonic()
    done = verify_tpu(project, "--tpu-cores", "8")
    seconds = time.monotonic() - start
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    assert "TPU-READY" in done.stdout
    assert (
        "checked on 8 TPU cores (one host): train() with one XLA step on CPU, evaluate()"
        in done.stdout
    )
    assert "note: the program was ended" not in done.stdout  # CLEAN predicts nothing
    assert seconds < 60, seconds


@pytest.mark.tf
def test_sarif_format_carries_the_finding(tmp_path: Path) -> None:
    text = program("summary_in_loop")
    project = write(tmp_path, text)
    ((line, rule),) = expected(text)
    done = verify_tpu(project, "-f", "sarif")
    assert done.returncode == 1
    run = json.loads(done.stdout)["runs"][0]
    (result,) = run["results"]
    assert result["ruleId"] == rule
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == line
    assert rule in {r["id"] for r in run["tool"]["driver"]["rules"]}


def test_every_check_has_a_catalogue_entry_of_its_severity() -> None:
    entries = catalogue.load()
    assert set(entries) == set(CHECKS)
    for check_id, check in CHECKS.items():
        assert catalogue.severity(check_id) == check.severity
        assert check.severity in entries[check_id].docs
        assert tuple(entries[check_id].sections) == catalogue.HEADINGS


def test_explain_shows_a_check(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "est2tpu", "explain", "TPU111"],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "CrossShardOptimizer" in done.stdout


def test_usage_errors_exit_2_before_running(tmp_path: Path) -> None:
    project = write(tmp_path, CLEAN)

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "est2tpu", "verify", *args, str(project), "--", "nothing"],
            capture_output=True,
            text=True,
            check=False,
        )

    no_cores = cli("--tpu", "--tpu-cores", "0")
    assert no_cores.returncode == 2 and "--tpu-cores" in no_cores.stderr
    format_without_tpu = cli("-f", "json")
    assert format_without_tpu.returncode == 2
    assert "--output-format goes with --tpu" in format_without_tpu.stderr
    not_python = cli("--tpu", "--python", sys.executable)
    assert not_python.returncode == 2
    assert "--python replaces COMMAND's interpreter" in not_python.stderr


# --- the tf2 target: the Estimator facade's train step under XLA --------------------------


def _tf2_verify(
    project: Path, command: list[str], *options: str
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """`verify --tpu --target tf2` of ``project``, and a copy migrated to tf2 (whose lines the
    findings name: the migration keeps comments)."""
    from tests.test_verify import tfcur

    migrated = project.parent / "migrated"
    shutil.copytree(project, migrated)
    subprocess.run(
        [sys.executable, "-m", "est2tpu", "migrate", "-q", "--target", "tf2", str(migrated)],
        check=True,
        capture_output=True,
    )
    done = run_verify_tpu(
        project, ["--target", "tf2", "--python", tfcur(), "-f", "json", *options], command
    )
    return done, migrated


@pytest.fixture(scope="module")
def tf2_shared_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, Path, subprocess.CompletedProcess[str]]:
    """The tf2 defect programs that have errors, and the clean one, one module each, in one
    `verify --tpu --target tf2` run (current TensorFlow imported once)."""
    project = tmp_path_factory.mktemp("tf2") / "project"
    project.mkdir()
    names = [d for d in sorted(TF2_DEFECTS) if d != "unknown_batch_dimension"] + ["clean"]
    for name in names:
        text = TF2_CLEAN if name == "clean" else tf2_program(name)
        text = text.replace('model_dir="model"', f'model_dir="model-{name}"', 1)
        (project / f"{name}.py").write_text(text, encoding="utf-8")
    (project / "run_all.py").write_text(_RUN_ALL, encoding="utf-8")
    done, migrated = _tf2_verify(project, ["run_all.py", *names])
    return project, migrated, done


def _findings_of(done: subprocess.CompletedProcess[str], path: Path) -> set[tuple[int, str]]:
    findings = json.loads(done.stdout)["findings"]
    return {(f["line"], f["rule"]) for f in findings if f["path"] == path.as_posix()}


@pytest.mark.tf
@pytest.mark.parametrize("defect", [*sorted(TF2_DEFECTS), "clean"])
def test_tf2_each_defect_is_reported_at_its_line(
    tmp_path: Path,
    defect: str,
    tf2_shared_run: tuple[Path, Path, subprocess.CompletedProcess[str]],
) -> None:
    if defect == "unknown_batch_dimension":
        # alone: warnings only, exit 0
        project = write(tmp_path, tf2_program(defect))
        done, migrated = _tf2_verify(project, ["train.py"])
        path, module = project / "train.py", migrated / "train.py"
    else:
        project, migrated, done = tf2_shared_run
        path, module = project / f"{defect}.py", migrated / f"{defect}.py"
    found = _findings_of(done, path)
    assert found == expected(module.read_text(encoding="utf-8")), done.stderr[-2000:]
    errors = [i for _, i in found if CHECKS[i].severity == "error"]
    assert errors or defect in ("unknown_batch_dimension", "clean")
    if defect == "unknown_batch_dimension":
        assert done.returncode == 0, done.stderr[-2000:]
    else:
        # the shared run: its error programs exit 1, and a run that ends early cannot tell (2)
        assert done.returncode == 1, done.stderr[-2000:]


@pytest.mark.tf
def test_tf2_strict_shapes_fails_a_partial_batch(tmp_path: Path) -> None:
    project = write(tmp_path, tf2_program("unknown_batch_dimension"))
    strict, _ = _tf2_verify(project, ["train.py"], "--strict-shapes")
    assert strict.returncode == 1, strict.stderr[-2000:]
    assert {rule for _, rule in _findings_of(strict, project / "train.py")} == {"TPU114"}


_MODEL = """\
import tensorflow as tf

TPU = tf.compat.v1.estimator.tpu


def model_fn(features, labels, mode, params):
    logits = tf.compat.v1.layers.dense(features["x"], 2)
    tf.compat.v1.summary.histogram("logits", logits)  # expect: TPU105
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    optimizer = tf.compat.v1.tpu.CrossShardOptimizer(
        tf.compat.v1.train.GradientDescentOptimizer(0.1)
    )
    train_op = optimizer.minimize(loss, tf.compat.v1.train.get_global_step())
    return TPU.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)
"""

_TASK = '''\
import numpy as np
import tensorflow as tf

from trainer import model

TPU = tf.compat.v1.estimator.tpu


class Trainer(TPU.TPUEstimator):
    """A subclass, built with positional arguments (use_tpu=False among them)."""


def input_fn(params):
    x = np.zeros((64, 4), np.float32)
    dataset = tf.data.Dataset.from_tensor_slices(({"x": x}, np.zeros(64, np.int32)))
    return dataset.repeat().batch(params["batch_size"], drop_remainder=True)


config = TPU.RunConfig(model_dir="model", tpu_config=TPU.TPUConfig(iterations_per_loop=2))
Trainer(model.model_fn, None, config, None, False, 32).train(input_fn, max_steps=2)
'''


@pytest.mark.tf
def test_a_subclass_built_positionally_in_a_package_is_checked(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "trainer").mkdir(parents=True)
    (project / "trainer" / "__init__.py").write_text("")
    (project / "trainer" / "model.py").write_text(_MODEL)
    (project / "trainer" / "task.py").write_text(_TASK)
    done = run_verify_tpu(project, ["-f", "json"], ["-m", "trainer.task"])
    findings = json.loads(done.stdout)["findings"]
    found = {(f["path"], f["line"], f["rule"]) for f in findings}
    ((line, rule),) = expected(_MODEL)
    assert found == {((project / "trainer" / "model.py").as_posix(), line, rule)}, done.stderr
    assert done.returncode == 1


def test_a_program_that_reaches_no_estimator_cannot_tell(tmp_path: Path) -> None:
    project = write(tmp_path, "print('no training today')\n")
    crashing = write(tmp_path / "crash", "raise SystemExit('no data')\n")
    for path, said in (
        (project, "no TPUEstimator (or tf2 Estimator facade) train() or evaluate() was reached"),
        (crashing, "TPU check crashed (exit code 1)"),
    ):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "est2tpu",
                "verify",
                "--tpu",
                str(path),
                "--",
                sys.executable,
                "train.py",
            ],
            capture_output=True,
            text=True,
            check=False,
            env=dict(os.environ, COLUMNS="200"),
        )
        assert done.returncode == 2, done.stdout + done.stderr
        assert said in done.stdout
        assert "CANNOT TELL" in done.stdout
