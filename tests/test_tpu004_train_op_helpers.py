"""TPU004 on train-op helpers across modules, through the command line in a subprocess.

A def of the model_fn's module that builds the TF1 optimizer and minimizes takes a
keyword-only `use_tpu=False` that the TPU model_fn passes; another module importing the same
def calls it as before. So does a chain of defs in another module of the project, each
passing the flag on. A train op from a function outside the project is a finding at the
call site."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HELPER = """\
import tensorflow as tf


def make_train_op(loss):
    optimizer = tf.compat.v1.train.AdamOptimizer(0.05)
    return optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
"""

MODEL_FN = """\
def model_fn(features, labels, mode, params):
    logits = tf.compat.v1.layers.dense(features["x"], 2)
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=make_train_op(loss))


estimator = tf.estimator.Estimator(model_fn, params={})
"""


def _migrate(root: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent))
    return subprocess.run(
        [sys.executable, "-m", "est2tpu", "migrate", "--target", "tpu-estimator", "."],
        check=False,
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_helper_in_the_model_fns_module_is_wrapped_and_its_importer_keeps_working(
    tmp_path: Path,
) -> None:
    trainer = tmp_path / "trainer"
    trainer.mkdir()
    (trainer / "__init__.py").write_text("")
    (trainer / "model.py").write_text(HELPER + "\n\n" + MODEL_FN)
    script = (
        "import tensorflow as tf\n\nfrom trainer.model import make_train_op\n\n\n"
        "def train_in_a_session(loss):\n    return make_train_op(loss)\n"
    )
    (trainer / "script.py").write_text(script)
    proc = _migrate(tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    model = (trainer / "model.py").read_text()
    assert "def make_train_op(loss, *, use_tpu=False):" in model
    assert "optimizer = tf.compat.v1.tpu.CrossShardOptimizer(optimizer)" in model
    assert 'make_train_op(loss, use_tpu=params["use_tpu"])' in model
    assert (trainer / "script.py").read_text() == script
    compile(model, "model.py", "exec")
    assert _migrate(tmp_path).returncode == 0
    assert (trainer / "model.py").read_text() == model


CHAIN_HELPER = """\
import tensorflow as tf


def _optimize(loss, learning_rate):
    optimizer = tf.compat.v1.train.AdamOptimizer(learning_rate)
    return optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())


def make_train_op(loss):
    return _optimize(loss, 0.05)
"""


def test_helper_chain_in_another_module_takes_the_flag_and_other_callers_keep_working(
    tmp_path: Path,
) -> None:
    trainer = tmp_path / "trainer"
    trainer.mkdir()
    (trainer / "__init__.py").write_text("")
    (trainer / "optimization.py").write_text(CHAIN_HELPER)
    model = "import tensorflow as tf\n\nfrom trainer.optimization import make_train_op\n\n\n"
    (trainer / "model.py").write_text(model + MODEL_FN)
    script = (
        "from trainer import optimization\n\n\n"
        "def train_in_a_session(loss):\n    return optimization.make_train_op(loss)\n"
    )
    (trainer / "script.py").write_text(script)
    proc = _migrate(tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    helper = (trainer / "optimization.py").read_text()
    assert "def _optimize(loss, learning_rate, *, use_tpu=False):" in helper
    assert (
        "    if use_tpu:\n        optimizer = tf.compat.v1.tpu.CrossShardOptimizer(optimizer)"
        in (helper)
    )
    assert "def make_train_op(loss, *, use_tpu=False):" in helper
    assert "return _optimize(loss, 0.05, use_tpu=use_tpu)" in helper
    migrated = (trainer / "model.py").read_text()
    assert 'make_train_op(loss, use_tpu=params["use_tpu"])' in migrated
    assert (trainer / "script.py").read_text() == script  # passes nothing: runs as before
    compile(helper, "optimization.py", "exec")
    assert _migrate(tmp_path).returncode == 0
    assert (trainer / "optimization.py").read_text() == helper
    assert (trainer / "model.py").read_text() == migrated


def test_helper_of_an_installed_package_is_a_finding_at_the_call_site(tmp_path: Path) -> None:
    trainer = tmp_path / "trainer"
    trainer.mkdir()
    (trainer / "__init__.py").write_text("")
    model = "import tensorflow as tf\n\nfrom official.optimization import make_train_op\n\n\n"
    (trainer / "model.py").write_text(model + MODEL_FN)
    proc = _migrate(tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    out = " ".join((proc.stdout + proc.stderr).split())
    assert "TPU004" in out
    assert "the train op comes from `make_train_op`, imported" in out
    migrated = (trainer / "model.py").read_text()
    assert "train_op=make_train_op(loss)" in migrated  # the call is left as it was
    assert "TPUEstimator(" in migrated
