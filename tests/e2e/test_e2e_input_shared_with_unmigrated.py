"""An input-function factory whose closures feed a TPUEstimator (est2tpu makes one) and an
Estimator est2tpu leaves as it is (the program's own subclass, TPU014): migrated, the
shared closure batches by params.get("batch_size", <its own size>), so the subclass, which
passes no batch_size, trains and evaluates exactly as before (it used to raise
KeyError: 'batch_size' with no finding).  Its train_and_evaluate, over an estimator est2tpu
cannot type, becomes ``tpu_runtime.train_and_evaluate`` (TPU012): over that plain Estimator
it is TensorFlow's own, so the metrics are equal too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from est2tpu.api import migrate_source
from tests.e2e.harness import run_program, tf_python

pytestmark = pytest.mark.tf

PROGRAM = Path(__file__).with_name("programs") / "input_shared_with_subclass.py"


def test_input_shared_with_an_unmigrated_subclass_trains_as_before(tmp_path: Path) -> None:
    python = tf_python()
    result = migrate_source(PROGRAM.read_text(), path=str(PROGRAM))
    assert result.new_text is not None
    migrated = result.new_text
    assert 'params.get("batch_size", batch_size)' in migrated
    assert "tf.compat.v1.estimator.tpu.TPUEstimator(" in migrated
    # The subclass stays a subclass of tf.estimator.Estimator; its train_and_evaluate goes to
    # the shim, which hands anything that does not train on a TPU to TensorFlow's.
    assert "class WarmEstimator(tf.estimator.Estimator):" in migrated
    assert "\nlooped, _ = tpu_runtime.train_and_evaluate(" in migrated
    assert {f.rule_id for f in result.findings} == {"TPU014"}, [f.render() for f in result.findings]
    runs = {}
    for name, text in (("original", PROGRAM.read_text()), ("migrated", migrated)):
        program = tmp_path / f"{name}.py"
        program.write_text(text)
        runs[name], _ = run_program(python, program, tmp_path / name)
    original = runs["original"]
    assert original["plain"]["batch"] == 16.0
    assert original["subclass"]["batch"] == 24.0 and original["looped"]["batch"] == 24.0
    assert original["looped"]["global_step"] == 15.0
    assert runs["migrated"] == original
