"""A TF 1.x training script in its plain spelling (`import tensorflow as tf`, then
`tf.logging`, `tf.app.flags`, `tf.gfile`, `tf.app.run`, and a model_fn of `tf.layers`,
`tf.losses.mean_squared_error` and `tf.train.AdamOptimizer`), migrated with `--target tf2`,
runs on current TensorFlow and trains like TF 1.x ran it.

TF2006 moves the set-up modules TF 2.x's `tf` lacks to `tf.compat.v1`; TF2002 maps the
model_fn's TF1 names, `tf.losses.mean_squared_error` as TF1's (the file is written for
TF 1.x). The original is the same script with `import tensorflow.compat.v1 as tf`, TF 1.x's
API as TF 2.15 keeps it, run on TF 2.15.

Measured (40 steps, the batch size read from the flags): evaluation loss and mean absolute
error equal (1e-6 relative asserted). Without TF2006 the migrated script stops at its first
line (`AttributeError: module 'tensorflow' has no attribute 'logging'`); with the loss read
as Keras' per-example one it fails in training.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from est2tpu.api import migrate_source
from est2tpu.ftypes import Target

SCRIPT = (Path(__file__).parents[1] / "e2e" / "programs" / "tf1_training_script.py").read_text()


@pytest.mark.tf
def test_tf1_training_script_runs_and_trains_like_tf1(
    harness: ModuleType, tfcur: str, tmp_path: Path
) -> None:
    original = SCRIPT.replace("import tensorflow as tf\n", "import tensorflow.compat.v1 as tf\n")
    result = migrate_source(SCRIPT, target=Target.TF2, path="train.py")
    assert [f.render() for f in result.findings] == []
    migrated = result.new_text
    assert migrated is not None
    assert "tf.compat.v1.app.run(main)" in migrated
    assert "loss = tf2_runtime.losses.mean_squared_error(labels, predictions)" in migrated
    assert migrate_source(migrated, target=Target.TF2, path="train.py").new_text in (
        None,
        migrated,
    )
    runs = {}
    for name, text, python in (
        ("original", original, harness.tf_python()),
        ("migrated", migrated, tfcur),
    ):
        project = tmp_path / name / "project"
        project.mkdir(parents=True)
        (project / "train.py").write_text(text)
        runs[name] = harness.run_project(
            project, ("train.py",), tmp_path / name / "run", python=python
        ).metrics
    assert runs["original"]["global_step"] == runs["migrated"]["global_step"] == 40
    for key in ("loss", "mae"):
        assert runs["migrated"][key] == pytest.approx(runs["original"][key], rel=1e-6), key
