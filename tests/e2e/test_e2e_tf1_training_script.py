"""``programs/tf1_training_script.py``, a TF 1.x training script in its plain spelling
(`import tensorflow as tf`, `tf.logging`, `tf.app.flags`, `tf.gfile`, `tf.layers`,
`tf.losses.mean_squared_error`, `tf.train.AdamOptimizer`), migrated to TPUEstimator, runs on
TF 2.15 and trains bit-identically to TF 1.x's run of it.

TF 1.x's run is its `import tensorflow.compat.v1 as tf` twin on TF 2.15 (`tf.compat.v1` is
TF 1.x's API). TPU015 makes the same change to the import, the other rules migrate the
Estimator. Measured: evaluation loss and mean absolute error equal to the last digit. Without
TPU015 the migrated script stops at its first line on TF 2.15 (`AttributeError: module
'tensorflow' has no attribute 'logging'`), as the original itself does there.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from est2tpu.api import migrate_source
from tests.e2e.harness import run_project, tf_python

pytestmark = pytest.mark.tf

PROGRAM = Path(__file__).with_name("programs") / "tf1_training_script.py"


def test_tf1_training_script_trains_as_on_tf1(tmp_path: Path) -> None:
    script = PROGRAM.read_text()
    result = migrate_source(script, path="train.py")
    assert [f.render() for f in result.findings] == []
    migrated = result.new_text
    assert migrated is not None
    assert "import tensorflow.compat.v1 as tf\n" in migrated
    assert "tf.estimator.tpu.TPUEstimator(" in migrated
    assert migrate_source(migrated, path="train.py").new_text in (None, migrated)
    original = script.replace("import tensorflow as tf\n", "import tensorflow.compat.v1 as tf\n")
    runs = {}
    for name, text in (("original", original), ("migrated", migrated)):
        project = tmp_path / name / "project"
        project.mkdir(parents=True)
        (project / "train.py").write_text(text)
        runs[name] = run_project(
            project, ("train.py",), tmp_path / name / "run", python=tf_python()
        ).metrics
    assert runs["original"]["global_step"] == 40
    assert runs["migrated"] == runs["original"]
