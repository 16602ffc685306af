"""`est2tpu verify`: what the copies hold, which interpreter runs them, what they share, and
the table at 80 columns."""

from __future__ import annotations

import io
import os
import socket
import sys
from pathlib import Path

import pytest
from rich.console import Console

from est2tpu import verify as verifier
from est2tpu.ftypes import Target
from est2tpu.verify_table import render
from tests.test_verify import table_rows, tf215, tree_digest, verify, write_program


def test_special_files_are_skipped_and_named(tmp_path: Path) -> None:
    project = write_program(tmp_path / "withfifo", "print('x')\n")
    os.mkfifo(project / "events.fifo")
    (project / "run").mkdir()
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(project / "run" / "daemon.sock"))
    try:
        proc = verify(str(project), "--", "true")
    finally:
        listener.close()
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    assert "skipped events.fifo: not a regular file" in proc.stdout
    assert "skipped run/daemon.sock: not a regular file" in proc.stdout
    assert "the verify hook recorded nothing" in proc.stdout


def test_python_runs_both_copies_on_the_tpu_estimator_target(tmp_path: Path) -> None:
    project = write_program(
        tmp_path / "which",
        "import pathlib, sys\npathlib.Path('python.txt').write_text(sys.executable)\n",
    )
    interpreter = tmp_path / "bin" / "python3"
    interpreter.parent.mkdir()
    interpreter.symlink_to(Path(sys.executable).resolve())
    proc = verify(
        "--keep",
        "--runs",
        "1",
        "--python",
        str(interpreter),
        "--target",
        "tpu-estimator",
        str(project),
        "--",
        "python",
        "train.py",
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr  # it evaluates nothing
    kept = Path(proc.stdout.split("runs kept in ")[1].split()[0])
    try:
        used = {p.parent.parent.name: p.read_text() for p in kept.glob("*/which/python.txt")}
    finally:
        import shutil

        shutil.rmtree(kept, ignore_errors=True)
    assert used == {"original-1": str(interpreter), "migrated": str(interpreter)}


def _verification(values: list[float]) -> verifier.Verification:
    runs = [
        verifier.Run(label, 0, 12.5, {"evaluations": [{"metrics": {"loss": v, "auc": v / 3}}]}, [])
        for label, v in zip(["original #1", "original #2", "migrated"], values, strict=True)
    ]
    result = verifier.Verification(Target.TPU_ESTIMATOR, ["python", "train.py"])
    result.originals, result.migrated = runs[:2], runs[2]
    verifier._compare(result)
    return result


@pytest.mark.parametrize("width", [80, 60])
def test_the_table_never_cuts_a_number(width: int) -> None:
    values = [0.8086000204086304, 0.8086000204086304, 0.8086000204086305]
    out = io.StringIO()
    Console(file=out, width=width, color_system=None).print(render(_verification(values)))
    text = out.getvalue()
    for line in text.splitlines():
        assert len(line) <= width
    assert text.count("0.808600020409") == 3  # each run's loss, whole
    assert text.count("0.269533340136") == 3
    assert "different (by" in text and "1.11e-16)" in text  # exact, whatever is shown
    if width == 80:
        assert table_rows(text)["loss"][:3] == ["0.808600020409"] * 3


@pytest.mark.tf
def test_runs_sharing_an_absolute_model_dir_cannot_be_compared(tmp_path: Path) -> None:
    shared = tmp_path / "shared-model"
    project = write_program(
        tmp_path / "absolute",
        f"""\
        import numpy as np
        import tensorflow as tf

        def input_fn():
            x = np.arange(64, dtype=np.float32).reshape(32, 2) / 64
            return tf.data.Dataset.from_tensor_slices(({{"x": x}}, (x[:, 0] > 0.5).astype(np.int32))).batch(8)

        def model_fn(features, labels, mode):
            logits = tf.compat.v1.layers.dense(features["x"], 2)
            loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
            train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
                loss, global_step=tf.compat.v1.train.get_global_step()
            )
            return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

        estimator = tf.estimator.Estimator(model_fn, model_dir={str(shared)!r})
        estimator.train(input_fn, steps=2)
        print(estimator.evaluate(input_fn, steps=1))
        """,
    )
    before = tree_digest(project)
    proc = verify("--runs", "1", str(project), "--", tf215(), "train.py")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"original used model_dir {shared}, outside its copy of the project" in proc.stdout
    assert "DISAGREE" not in proc.stdout and "CANNOT VERIFY" in proc.stdout
    assert tree_digest(project) == before
