"""Run end-to-end example projects under TensorFlow 2.15 in a subprocess.

The main test suite runs without TensorFlow.  Programs that train run in the
interpreter named by ``EST2TPU_TF215_PYTHON`` (``.venv-tf215/bin/python``, built
by ``scripts/tf215-env.sh``).  Without it the TF tests are skipped, unless
``EST2TPU_REQUIRE_TF=1``, which turns the skip into a failure (CI sets it).
A program runs as a fork of a server that has imported TensorFlow once per test
process (``forkserver.py``: the suite no longer imports TensorFlow two hundred
times); one that tests what importing does asks for an interpreter of its own.

Every project under ``fixtures/projects/`` takes ``--model_dir DIR`` and
``--results FILE`` and writes a JSON file: ``{"metrics": {...evaluate()...},
"loss": <final eval loss>, "predictions": [...first few predict() dicts...],
...}``.

Determinism, established on TF 2.15.1 / Keras 2.15 (CPU):

- ``tf.compat.v1.layers`` initializers take their op seed from the Keras seed
  generator, i.e. from Python's ``random`` module, NOT from the graph seed.  So
  ``tf.keras.utils.set_random_seed(SEED)`` at program start is what makes two
  runs give bit-identical metrics; ``RunConfig(tf_random_seed=...)`` alone does
  not (two runs with only ``tf_random_seed`` differ in the 3rd digit of the
  loss), and with ``set_random_seed`` it is not needed for the layers.
- ``RunConfig(tf_random_seed=...)`` sets the seed of the graph each
  ``train``/``evaluate``/``predict`` call builds; it is what fixes graph-level
  randomness (``Dataset.shuffle`` without a seed, dropout).  The projects set
  both, as careful real programs do.
- With both set, a plain ``Estimator`` and ``TPUEstimator(use_tpu=False)`` give
  bit-identical metrics, loss and predictions, even with an unseeded
  ``shuffle`` and dropout in the model_fn: each random op of the training graph
  gets the same seeds (``test_e2e_random_ops.py``).  TensorFlow derives an
  unseeded op's seed from the graph seed and the count of unseeded random ops
  created before it in that graph (``random_seed.get_seed``), so ops that are
  not random, which TPUEstimator adds, move no seed.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
PROJECTS_DIR = REPO_ROOT / "fixtures" / "projects"

TF_PYTHON_ENV = "EST2TPU_TF215_PYTHON"
REQUIRE_TF_ENV = "EST2TPU_REQUIRE_TF"

# Each training subprocess takes about 4-6 s on 2 CPU cores, most of it
# `import tensorflow`; the limit only catches hangs.
DEFAULT_TIMEOUT_S = 180


@dataclass(frozen=True)
class Project:
    """An end-to-end example project and how to start it (argv after the interpreter)."""

    name: str
    entry: tuple[str, ...]
    # Premade estimators have no TPUEstimator form (TPU010): such a project is migrated with
    # `--target tf2` only (tests/tf2/test_tf2_e2e.py).
    tf2_only: bool = False

    @property
    def path(self) -> Path:
        return PROJECTS_DIR / self.name


PROJECTS: dict[str, Project] = {
    p.name: p
    for p in (
        Project("single_file_classifier", ("train.py",)),
        Project("two_module_trainer", ("-m", "trainer.task")),
        Project("compat_v1_spelling", ("train.py",)),
        Project("estimator_module_alias", ("train.py",)),
        Project("keras_model_to_estimator", ("train.py",)),
        Project("train_and_evaluate_exporter", ("trainer.py",)),
        Project("numpy_input", ("train.py",)),
        Project("rebound_input_fns", ("train.py",)),
        Project("eval_metrics_branches", ("train.py",)),
        Project("optimizer_branches", ("train.py",)),
        Project("metrics_and_summaries", ("train.py",)),
        Project("summaries_beside_images", ("train.py",)),
        Project("metrics_dict_summaries", ("train.py",)),
        Project("metric_in_each_mode_branch", ("train.py",)),
        Project("class_form_layers", ("train.py",)),
        Project("model_fn_in_a_class", ("train.py",)),
        Project("input_fn_factories", ("train.py",)),
        Project("iterator_inputs", ("train.py",)),
        Project("helper_batched_inputs", ("train.py",)),
        Project("premade_dnn_classifier", ("train.py",), tf2_only=True),
        Project("premade_linear_regressor", ("train.py",), tf2_only=True),
    )
}


@dataclass
class RunResult:
    """What one run of a project produced."""

    results: dict[str, Any]
    seconds: float
    stdout: str
    stderr: str
    model_dir: Path
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def metrics(self) -> dict[str, Any]:
        return dict(self.results["metrics"])

    @property
    def loss(self) -> float:
        return float(self.results["loss"])

    @property
    def predictions(self) -> list[Any]:
        return list(self.results["predictions"])


def _load_forkserver() -> ModuleType:
    name = "est2tpu_e2e_forkserver"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, Path(__file__).with_name("forkserver.py")
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


forkserver = _load_forkserver()


def tf_python() -> str:
    """Return the TF 2.15 interpreter, or skip (fail under ``EST2TPU_REQUIRE_TF=1``)."""
    python = os.environ.get(TF_PYTHON_ENV, "")
    required = os.environ.get(REQUIRE_TF_ENV) == "1"
    if not python:
        reason = (
            f"{TF_PYTHON_ENV} is not set; run scripts/tf215-env.sh and set it to "
            ".venv-tf215/bin/python to run the TensorFlow tests"
        )
    elif not Path(python).is_file():
        reason = f"{TF_PYTHON_ENV} names a missing interpreter: {python}"
    else:
        return python
    if required:
        pytest.fail(f"{REQUIRE_TF_ENV}=1 but {reason}", pytrace=False)
    pytest.skip(reason)


def tf_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a TF subprocess: repo root importable, quiet, CPU only."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO_ROOT)
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    env["CUDA_VISIBLE_DEVICES"] = ""
    # A TPU_NAME from the developer's shell would make the shim look for a TPU.
    env.pop("TPU_NAME", None)
    env.pop("TF_CONFIG", None)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if extra:
        env.update(extra)
    return env


def run_tf_code(
    code: str,
    *args: str,
    python: str | None = None,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    fork: bool = True,
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` (``python -c code *args``) with the TF 2.15 interpreter, or ``python``;
    never raises on failure. `fork=False` for code that tests what importing does: it gets
    an interpreter of its own, not a fork of one that imported TensorFlow (`forkserver`)."""
    return forkserver.run(
        python or tf_python(),
        ["-c", code, *args],
        cwd=cwd or REPO_ROOT,
        env=tf_env(env),
        timeout=timeout,
        fork=fork,
    )


def run_tf_json(code: str, *args: str, **kwargs: Any) -> Any:
    """`run_tf_code`, which must succeed: the JSON its last line of output prints."""
    proc = run_tf_code(code, *args, **kwargs)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def copy_project(name: str, dest: Path) -> Path:
    """Copy project ``name`` to ``dest`` (created) and return ``dest``."""
    shutil.copytree(
        PROJECTS[name].path,
        dest,
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
    )
    return dest


def run_project(
    project_dir: Path,
    entry: tuple[str, ...],
    workdir: Path,
    *,
    args: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    python: str | None = None,
) -> RunResult:
    """Run a project's entry in ``project_dir`` and read back its results JSON.

    ``python`` is the interpreter (default: the TF 2.15 one from ``tf_python()``).

    ``workdir`` receives the model directory and the results file; it must not
    exist yet or be empty, so that no checkpoint of an earlier run is resumed.
    Fails the test, with the program's stderr, when the program fails.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    model_dir = workdir / "model"
    results_file = workdir / "results.json"
    if model_dir.exists() or results_file.exists():
        raise ValueError(f"{workdir} holds an earlier run")
    interpreter = python or tf_python()
    argv = [interpreter, *entry, "--model_dir", str(model_dir), "--results", str(results_file)]
    start = time.monotonic()
    proc = forkserver.run(
        interpreter, [*argv[1:], *args], cwd=project_dir, env=tf_env(env), timeout=timeout
    )
    seconds = time.monotonic() - start
    if proc.returncode != 0 or not results_file.is_file():
        pytest.fail(
            f"{' '.join(entry)} in {project_dir.name} exited {proc.returncode}"
            f" after {seconds:.1f}s\n--- stderr (tail) ---\n{proc.stderr[-6000:]}",
            pytrace=False,
        )
    results = json.loads(results_file.read_text())
    return RunResult(results, seconds, proc.stdout, proc.stderr, model_dir)


def run_programs(programs: dict[str, str], tmp: Path) -> dict[str, RunResult]:
    """Run each one-file program (a project's `train.py`, by name) in its own directory under
    ``tmp``: the original, its migration and hand ports of it, compared by the caller."""
    runs = {}
    for name, text in programs.items():
        project = tmp / name / "project"
        project.mkdir(parents=True)
        (project / "train.py").write_text(text)
        runs[name] = run_project(project, ("train.py",), tmp / name / "run")
    return runs


# The pieces the one-file regression programs below (and tests' own) are made of: their
# imports, a seeded 3-feature linear problem (256 training rows, 64 evaluation rows), and
# input functions over it in batches of 32.
REGRESSION_IMPORTS = """\
import argparse
import json

import numpy as np
import tensorflow as tf

"""
REGRESSION_DATA = """\
SEED = 7


def make_data(n, seed):
    rng = np.random.RandomState(seed)
    x = rng.normal(size=(n, 3)).astype(np.float32)
    y = (x @ np.array([[1.5], [-2.0], [0.5]], np.float32) + 0.3).astype(np.float32)
    return x, y


TRAIN_X, TRAIN_Y = make_data(256, SEED)
EVAL_X, EVAL_Y = make_data(64, SEED + 1)


"""
REGRESSION_INPUTS = """\
def train_input_fn():
    data = tf.data.Dataset.from_tensor_slices(({"x": TRAIN_X}, TRAIN_Y))
    return data.shuffle(256, seed=SEED).repeat().batch(32)


def eval_input_fn():
    return tf.data.Dataset.from_tensor_slices(({"x": EVAL_X}, EVAL_Y)).batch(32)


"""


# A one-file regression program whose model_fn reads its hyperparameters from
# `params["hp"]` (an argparse.Namespace with `units=8` and what a test writes in place of
# `HPARAMS`) and whose train op a test writes in place of the `TRAIN_OP` line; its results
# hold the summary tags the run wrote. An optimize_loss option whose value is read when the
# model_fn runs (`clip_gradients=hp.clip_norm`, `learning_rate_decay_fn=hp.decay`) is proven
# on it against an expert's hand port.
HP_PROGRAM = (
    """\
import argparse
import glob
import json
import os

import numpy as np
import tensorflow as tf

"""
    + REGRESSION_DATA
    + REGRESSION_INPUTS
    + """\
def model_fn(features, labels, mode, params):
    hp = params["hp"]
    hidden = tf.compat.v1.layers.dense(features["x"], hp.units, activation=tf.nn.relu)
    predictions = tf.compat.v1.layers.dense(hidden, 1)
    loss = tf.compat.v1.losses.mean_squared_error(labels, predictions)
    if mode == tf.estimator.ModeKeys.EVAL:
        return tf.estimator.EstimatorSpec(mode, loss=loss)
TRAIN_OP
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def summary_tags(model_dir):
    found = set()
    for path in glob.glob(os.path.join(model_dir, "events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            found.update(value.tag for value in event.summary.value)
    return sorted(found)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--results", required=True)
    args = parser.parse_args()
    tf.keras.utils.set_random_seed(SEED)
    hparams = argparse.Namespace(units=8, HPARAMS)
    estimator = tf.estimator.Estimator(
        model_fn,
        model_dir=args.model_dir,
        config=tf.estimator.RunConfig(tf_random_seed=SEED),
        params={"hp": hparams},
    )
    estimator.train(train_input_fn, steps=60)
    metrics = estimator.evaluate(eval_input_fn, steps=2)
    with open(args.results, "w") as f:
        json.dump({"metrics": {k: float(v) for k, v in metrics.items()},
                   "loss": float(metrics["loss"]), "predictions": [],
                   "summary_tags": summary_tags(args.model_dir)}, f)


if __name__ == "__main__":
    main()
"""
)


# A one-file regression program whose train op a test writes in place of the `TRAIN_OP` line
# (and, in place of `HIDDEN_EXTRA`, more layers after the hidden one): the optimizer
# rewrites (TPU004) are proven on it against an expert's hand port.
TRAIN_OP_PROGRAM = (
    REGRESSION_IMPORTS
    + REGRESSION_DATA
    + REGRESSION_INPUTS
    + """\
def model_fn(features, labels, mode, params):
    hidden = tf.compat.v1.layers.dense(features["x"], 8, activation=tf.nn.relu)
HIDDEN_EXTRA
    predictions = tf.compat.v1.layers.dense(hidden, 1)
    loss = tf.compat.v1.losses.mean_squared_error(labels, predictions)
    if mode == tf.estimator.ModeKeys.EVAL:
        return tf.estimator.EstimatorSpec(mode, loss=loss)
TRAIN_OP
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--results", required=True)
    args = parser.parse_args()
    tf.keras.utils.set_random_seed(SEED)
    estimator = tf.estimator.Estimator(
        model_fn,
        model_dir=args.model_dir,
        config=tf.estimator.RunConfig(tf_random_seed=SEED),
        params={"learning_rate": 0.05},
    )
    estimator.train(train_input_fn, steps=60)
    metrics = estimator.evaluate(eval_input_fn, steps=2)
    with open(args.results, "w") as f:
        json.dump({"metrics": {k: float(v) for k, v in metrics.items()},
                   "loss": float(metrics["loss"]), "predictions": []}, f)


if __name__ == "__main__":
    main()
"""
)


def train_op_program(train_op: str, hidden_extra: str = "") -> str:
    text = TRAIN_OP_PROGRAM.replace("TRAIN_OP", train_op)
    return text.replace("HIDDEN_EXTRA\n", hidden_extra)


def run_texts(runs: dict[str, tuple[str, str]], tmp: Path) -> dict[str, dict[str, Any]]:
    """Run one-file programs side by side: name -> (its text, the interpreter). Each is
    written as ``train.py`` of a project under ``tmp/<name>`` and run (``run_project``);
    the metrics of each run, by name."""
    metrics: dict[str, dict[str, Any]] = {}
    for name, (text, python) in runs.items():
        project = tmp / name / "project"
        project.mkdir(parents=True)
        (project / "train.py").write_text(text)
        metrics[name] = run_project(
            project, ("train.py",), tmp / name / "run", python=python
        ).metrics
    return metrics


def run_program(
    python: str, program: Path, work: Path, timeout: float = 500
) -> tuple[dict[str, Any], str]:
    """Run ``program MODEL_DIR RESULTS`` (both under ``work``) with ``python``, which must
    succeed: the results JSON it wrote, and its stderr."""
    results = work / "results.json"
    proc = forkserver.run(
        python,
        [str(program), str(work / "model"), str(results)],
        cwd=Path.cwd(),
        env=tf_env(),
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    report: dict[str, Any] = json.loads(results.read_text())
    return report, proc.stderr


def run_named_project(name: str, tmp: Path, **kwargs: Any) -> RunResult:
    """Copy project ``name`` under ``tmp`` and run the copy (the original stays clean)."""
    copy = copy_project(name, tmp / "project")
    return run_project(copy, PROJECTS[name].entry, tmp / "run", **kwargs)


_ORIGINALS: dict[str, RunResult] = {}


def original_run(name: str, tmp_path_factory: pytest.TempPathFactory) -> RunResult:
    """Project ``name`` run unmigrated on TF 2.15, once per process: the tpu-estimator tests
    (tests/e2e) and the tf2 ones (tests/tf2) compare with the same run, and both put a
    project's tests in the xdist group ``e2e-<name>``, so that one worker trains it once."""
    if name not in _ORIGINALS:
        _ORIGINALS[name] = run_named_project(name, tmp_path_factory.mktemp(f"orig-{name}"))
    return _ORIGINALS[name]


def python_files(project_dir: Path) -> list[Path]:
    """The ``.py`` files of a project, sorted, for migrating a copy file by file."""
    return sorted(p for p in project_dir.rglob("*.py") if "__pycache__" not in p.parts)


if __name__ == "__main__":  # pragma: no cover - manual timing aid
    import tempfile

    for project_name in sys.argv[1:] or list(PROJECTS):
        with tempfile.TemporaryDirectory() as tmpdir:
            result = run_named_project(project_name, Path(tmpdir))
            print(f"{project_name}: {result.seconds:.1f}s {result.metrics}")
