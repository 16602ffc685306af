"""``tpu_runtime.train_and_evaluate`` over a plain ``tf.estimator.Estimator`` IS
``tf.estimator.train_and_evaluate``: what TPU012 relies on when it rewrites a call whose
estimator est2tpu cannot see.  ``programs/plain_train_and_evaluate.py`` run as written and
with the shim's function in place of every call gives equal results: the return value
(final metrics, export paths), the evaluation schedule (one per checkpoint, throttle_secs=0),
the checkpoints and trained weights, the exception on a non-Estimator, and, under a
TF_CONFIG cluster, distributed mode (the chief trains, evaluates nothing, returns None).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.harness import run_program, tf_python

pytestmark = pytest.mark.tf

PROGRAM = Path(__file__).with_name("programs") / "plain_train_and_evaluate.py"
CALL = "tf.estimator.train_and_evaluate("


def test_shim_train_and_evaluate_is_tensorflows_on_a_plain_estimator(tmp_path: Path) -> None:
    python = tf_python()
    original = PROGRAM.read_text()
    assert original.count(CALL) == 3
    shim = original.replace(CALL, "tpu_runtime.train_and_evaluate(").replace(
        "import tensorflow as tf\n",
        "import tensorflow as tf\nimport est2tpu.runtime as tpu_runtime\n",
    )
    runs = {}
    for name, text in (("original", original), ("shim", shim)):
        program = tmp_path / f"{name}.py"
        program.write_text(text)
        runs[name], _ = run_program(python, program, tmp_path / name)
    expected = runs["original"]
    # The runs did what the comparison is about.
    assert expected["local"]["return_type"] == "tuple"
    assert expected["local"]["eval_result"]["global_step"] == 25.0
    assert expected["local"]["evaluations"] == [10, 20, 25]
    assert expected["local"]["exported"] == 3
    assert expected["raised"][0] == "TypeError"
    assert expected["chief"] == {
        **expected["chief"],
        "returned": "None",
        "task_type": "chief",
        "global_step": 7,
        "evaluated": False,
    }
    assert runs["shim"] == expected
