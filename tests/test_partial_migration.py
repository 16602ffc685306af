"""Partial migrations converge: whatever subset of a project's files a run wrote before it
stopped (Ctrl-C, a crash, a user migrating one module first), the rerun the README suggests
produces exactly what one uninterrupted run produces.

The two-module trainer is the case that matters: its input function is built by a factory in
`inputs.py` with a batch size that `task.py` passes, so a run that wrote `inputs.py` and not
`task.py` leaves the size only in `task.py`'s call, and one that wrote `task.py` first leaves a
TPUEstimator that cannot call the input function yet.

The helper-batched project is the other way round: its input functions return what helpers
of `data_pipeline.py` make. With `train.py` written first, the TPUEstimator and input functions
that read params["batch_size"] already stand beside helpers that still batch without static
shapes and return one-shot iterator tensors; with `data_pipeline.py` first, an input function
unpacks what is now a helper's dataset.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from inprocess import est2tpu

from est2tpu import api
from est2tpu.ftypes import Status
from est2tpu.textio import encode
from est2tpu.writer import write_atomic

PROJECTS = Path(__file__).resolve().parents[1] / "fixtures" / "projects"
# each project, and the files a one-shot run changes
CHANGED = {
    "two_module_trainer": ["trainer/inputs.py", "trainer/model.py", "trainer/task.py"],
    "helper_batched_inputs": ["data_pipeline.py", "train.py"],
    "params_helper_trainer": ["trainer/inputs.py", "trainer/task.py"],
}

# A trainer whose input functions hand the params the Estimator gives them to a helper of
# another module that batches by them: with `task.py` written first, the TPUEstimator holds
# the batch size and the helper still batches without static shapes on TPU.
PARAMS_HELPER_TRAINER = {
    "trainer/__init__.py": "",
    "trainer/inputs.py": """\
import tensorflow as tf


def make_batches(p, x, y, training):
    dataset = tf.data.Dataset.from_tensor_slices(({"x": x}, y))
    if training:
        dataset = dataset.shuffle(len(y), seed=1).repeat()
    return dataset.batch(p["batch_size"])
""",
    "trainer/task.py": """\
import numpy as np
import tensorflow as tf

from trainer import inputs

X = np.arange(192, dtype=np.float32).reshape(64, 3)
Y = np.ones((64, 1), np.float32)


def model_fn(features, labels, mode, params):
    out = tf.compat.v1.layers.dense(features["x"], 1)
    loss = tf.compat.v1.losses.mean_squared_error(labels, out)
    optimizer = tf.compat.v1.train.GradientDescentOptimizer(params["learning_rate"])
    train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode=mode, loss=loss, train_op=train_op)


def train_input_fn(params):
    return inputs.make_batches(params, X, Y, True)


def eval_input_fn(params):
    return inputs.make_batches(params, X, Y, False)


def main():
    estimator = tf.estimator.Estimator(
        model_fn=model_fn, params={"batch_size": 16, "learning_rate": 0.01}
    )
    estimator.train(input_fn=train_input_fn, steps=10)
    return estimator.evaluate(input_fn=eval_input_fn, steps=4)


if __name__ == "__main__":
    main()
""",
}

# Runs the real CLI; after its first file is written, the process gets a real SIGINT.
INTERRUPT_AFTER_FIRST_WRITE = """
import os, signal, sys
import est2tpu.cli as cli
real = cli.write_file
def write_then_interrupt(*args, **kwargs):
    written = real(*args, **kwargs)
    os.kill(os.getpid(), signal.SIGINT)
    return written
cli.write_file = write_then_interrupt
sys.argv = ["est2tpu", *sys.argv[1:]]
cli.main()
"""


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*.py"))
        if "__pycache__" not in p.parts
    }


def cli(*args: str, cache: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "est2tpu", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1", "XDG_CACHE_HOME": str(cache)},
        timeout=300,
        check=False,
    )


@pytest.fixture(scope="module", params=sorted(CHANGED))
def project(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's original tree (one written here, or an end-to-end project's)."""
    name = str(request.param)
    if name != "params_helper_trainer":
        return PROJECTS / name
    root = tmp_path_factory.mktemp("source") / name
    for rel, text in PARAMS_HELPER_TRAINER.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def one_shot(tmp_path_factory: pytest.TempPathFactory, project: Path) -> dict[str, bytes]:
    """The project after one uninterrupted `est2tpu migrate` (in this process)."""
    root = tmp_path_factory.mktemp("one-shot") / "project"
    shutil.copytree(project, root)
    proc = est2tpu("migrate", "--no-cache", root)
    assert proc.returncode == 0, proc.stderr
    return snapshot(root)


@pytest.mark.slow  # a real SIGINT to a real CLI process, then two more CLI processes
def test_interrupted_cli_run_then_rerun_equals_one_shot(
    tmp_path: Path, project: Path, one_shot: dict[str, bytes]
) -> None:
    root = tmp_path / "project"
    shutil.copytree(project, root)
    original = snapshot(root)
    proc = subprocess.run(
        [sys.executable, "-c", INTERRUPT_AFTER_FIRST_WRITE, "migrate", str(root)],
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1", "XDG_CACHE_HOME": str(tmp_path / "cache")},
        timeout=300,
        check=False,
    )
    assert proc.returncode == 130, proc.stderr
    partial = snapshot(root)
    written = [name for name in partial if partial[name] != original[name]]
    assert len(written) == 1, written
    assert partial[written[0]] == one_shot[written[0]]
    assert one_shot != partial, "the run was interrupted before the end"

    rerun = cli("migrate", str(root), cache=tmp_path / "cache")
    assert rerun.returncode == 0, rerun.stderr
    assert snapshot(root) == one_shot
    # ... with no finding, as in the one-shot run, and converged: a third run is clean.
    assert cli("check", str(root), cache=tmp_path / "cache").returncode == 0


def test_every_partial_state_converges(
    tmp_path: Path, project: Path, one_shot: dict[str, bytes]
) -> None:
    original = snapshot(project)
    changed = [name for name in one_shot if one_shot[name] != original[name]]
    assert changed == CHANGED[project.name]
    partial = itertools.chain.from_iterable(
        itertools.combinations(changed, k) for k in range(1, len(changed))
    )
    for written in partial:
        root = tmp_path / "-".join(n.replace("/", "_") for n in written)
        shutil.copytree(project, root)
        for name in written:
            (root / name).write_bytes(one_shot[name])
        for result in api.migrate_paths([root]):
            assert result.status is not Status.FAILED, result.error
            assert not result.findings, [f.render() for f in result.findings]
            if result.changed:
                assert result.new_text is not None
                write_atomic(result.path, encode(result.new_text, result.encoding, result.bom))
        assert snapshot(root) == one_shot, written
        assert not [r.path for r in api.migrate_paths([root]) if r.changed or r.findings]


def test_no_runtime_partial_state_converges(tmp_path: Path) -> None:
    """Under --no-runtime the TPUEstimator's use_tpu is the file's own `_est2tpu_use_tpu()`:
    with task.py written first, the rerun still gives the helper static batches on TPU."""
    source = tmp_path / "source"
    for rel, text in PARAMS_HELPER_TRAINER.items():
        (source / rel).parent.mkdir(parents=True, exist_ok=True)
        (source / rel).write_text(text, encoding="utf-8")
    one = tmp_path / "one-shot"
    shutil.copytree(source, one)
    assert est2tpu("migrate", "--no-cache", "--no-runtime", one).returncode == 0
    root = tmp_path / "task-first"
    shutil.copytree(source, root)
    task = "trainer/task.py"
    (root / task).write_bytes((one / task).read_bytes())
    assert "use_tpu=_est2tpu_use_tpu()" in (root / task).read_text(encoding="utf-8")
    proc = est2tpu("migrate", "--no-cache", "--no-runtime", root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert snapshot(root) == snapshot(one)
