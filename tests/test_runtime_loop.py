"""Tests of ``est2tpu.runtime.train_and_evaluate`` (TensorFlow 2.15, in subprocesses).

- The ``train_and_evaluate_exporter`` project, as written and hand-migrated
  (TPUEstimator + the shim's loop), gives identical final metrics, loss and
  predictions, and writes its export.
- Re-running the migrated trainer in the same model_dir resumes from the
  latest checkpoint and ends exactly where one uninterrupted run ends.
- The TPU loop's schedule, exporter calls, hooks, return value and the no-op
  re-run of a finished model_dir, on a toy TPUEstimator; without a TPU,
  TensorFlow's own train_and_evaluate with the same exporter calls.
"""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest

from tests.test_runtime_keras import _harness, hand_migrate

PROJECT = "train_and_evaluate_exporter"

MIGRATION = [
    ("import tensorflow as tf\n", "import tensorflow as tf\n\nimport est2tpu.runtime\n"),
    ("    def input_fn():\n", "    def input_fn(params):\n"),
    (
        "        return dataset.batch(batch_size)\n",
        '        return dataset.batch(params["batch_size"], drop_remainder=True)\n',
    ),
    ("def predict_input_fn():\n", "def predict_input_fn(params):\n"),
    (
        'return tf.data.Dataset.from_tensor_slices({"x": EVAL_X[:32]}).batch(32)',
        'return tf.data.Dataset.from_tensor_slices({"x": EVAL_X[:32]}).batch(params["batch_size"])',
    ),
    (
        "        return tf.estimator.EstimatorSpec(\n            mode=mode,\n            predictions=",
        (
            "        return tf.compat.v1.estimator.tpu.TPUEstimatorSpec(\n"
            "            mode=mode,\n            predictions="
        ),
    ),
    (
        """        eval_metric_ops = {
            "accuracy": tf.compat.v1.metrics.accuracy(
                labels=labels, predictions=predictions["class"]
            ),
        }
        return tf.estimator.EstimatorSpec(mode=mode, loss=loss, eval_metric_ops=eval_metric_ops)""",
        """        def metric_fn(labels, classes):
            return {"accuracy": tf.compat.v1.metrics.accuracy(labels=labels, predictions=classes)}

        return tf.compat.v1.estimator.tpu.TPUEstimatorSpec(
            mode=mode, loss=loss, eval_metrics=(metric_fn, [labels, predictions["class"]])
        )""",
    ),
    (
        "    train_op = optimizer.minimize(",
        (
            '    if params["use_tpu"]:\n'
            "        optimizer = tf.compat.v1.tpu.CrossShardOptimizer(optimizer)\n"
            "    train_op = optimizer.minimize("
        ),
    ),
    (
        "    return tf.estimator.EstimatorSpec(mode=mode, loss=loss, train_op=train_op)",
        (
            "    return tf.compat.v1.estimator.tpu.TPUEstimatorSpec(mode=mode, loss=loss, "
            "train_op=train_op)"
        ),
    ),
    (
        "    estimator = tf.estimator.Estimator(\n",
        "    estimator = tf.compat.v1.estimator.tpu.TPUEstimator(\n",
    ),
    (
        (
            "        config=tf.estimator.RunConfig(\n"
            "            tf_random_seed=SEED, save_checkpoints_steps=SAVE_CHECKPOINTS_STEPS\n"
            "        ),\n"
        ),
        (
            "        config=est2tpu.runtime.ensure_tpu_run_config(tf.estimator.RunConfig(\n"
            "            tf_random_seed=SEED, save_checkpoints_steps=SAVE_CHECKPOINTS_STEPS\n"
            "        )),\n"
            "        use_tpu=est2tpu.runtime.use_tpu(),\n"
            "        train_batch_size=BATCH_SIZE,\n"
            "        eval_batch_size=BATCH_SIZE,\n"
            "        predict_batch_size=32,\n"
        ),
    ),
    ("tf.estimator.train_and_evaluate(", "est2tpu.runtime.train_and_evaluate("),
]


@pytest.mark.tf
def test_migrated_trainer_equal_resumes_and_exports(tmp_path: Path) -> None:
    harness = _harness()
    entry = harness.PROJECTS[PROJECT].entry
    original = harness.run_named_project(PROJECT, tmp_path / "orig")
    copy = harness.copy_project(PROJECT, tmp_path / "migrated")
    hand_migrate(copy / "trainer.py", MIGRATION)
    migrated = harness.run_project(copy, entry, tmp_path / "run")

    assert original.metrics["global_step"] == 192
    assert original.metrics["accuracy"] > 0.75  # chance is 1/3
    assert migrated.metrics == original.metrics
    assert migrated.loss == original.loss
    assert migrated.predictions == original.predictions
    assert migrated.results == original.results
    assert migrated.results["exported"] is True
    assert migrated.results["last_export_is_latest"] == [True]
    exports = sorted((migrated.model_dir / "export" / "latest").iterdir())
    assert len(exports) == 3  # one per evaluation: steps 64, 128, 192
    assert all((d / "saved_model.pb").is_file() for d in exports)

    # Interrupted at step 128, then re-run in the same model_dir: it resumes.
    workdir = tmp_path / "resumed"
    model_dir = workdir / "model"
    first = harness.run_project(copy, entry, workdir, args=("--max_steps", "128"))
    assert first.metrics["global_step"] == 128
    proc = subprocess.run(
        [
            harness.tf_python(),
            *entry,
            "--model_dir",
            str(model_dir),
            "--results",
            str(workdir / "again.json"),
        ],
        cwd=copy,
        env=harness.tf_env(),
        capture_output=True,
        text=True,
        timeout=harness.DEFAULT_TIMEOUT_S,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    again = json.loads((workdir / "again.json").read_text())
    # 64 more steps from 128 (a loop that restarted its count would end past 192,
    # one that restarted training would not match the uninterrupted run).
    assert again["metrics"] == original.metrics
    assert again["predictions"] == original.predictions


_LOOP_PROBE = textwrap.dedent(
    """
    import json, os, tempfile
    import numpy as np
    import tensorflow as tf
    import est2tpu.runtime as rt

    def model_fn(features, labels, mode, params):
        w = tf.compat.v1.get_variable("w", [1], initializer=tf.zeros_initializer())
        loss = tf.reduce_mean(tf.square(features["x"] * w - labels))
        opt = tf.compat.v1.train.GradientDescentOptimizer(0.1)
        train_op = opt.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
        return tf.compat.v1.estimator.tpu.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)

    def input_fn(params):
        x = np.ones((8, 1), np.float32)
        ds = tf.data.Dataset.from_tensor_slices(({"x": x}, 2 * x))
        return ds.repeat().batch(params["batch_size"], drop_remainder=True)

    class Exporter(tf.estimator.Exporter):
        calls = []
        @property
        def name(self):
            return "probe"
        def export(self, estimator, export_path, checkpoint_path, eval_result,
                   is_the_final_export):
            Exporter.calls.append({"export_path": export_path,
                                   "checkpoint": os.path.basename(checkpoint_path),
                                   "step": int(eval_result["global_step"]),
                                   "final": bool(is_the_final_export)})
            return "export-%d" % eval_result["global_step"]

    class Counter(tf.estimator.SessionRunHook):
        def __init__(self):
            self.runs = 0
        def after_run(self, run_context, run_values):
            self.runs += 1

    model_dir = tempfile.mkdtemp()
    def make():
        return tf.compat.v1.estimator.tpu.TPUEstimator(
            model_fn=model_fn,
            config=rt.ensure_tpu_run_config(
                tf.estimator.RunConfig(model_dir=model_dir, save_checkpoints_steps=4)),
            use_tpu=False, train_batch_size=4, eval_batch_size=4)
    train_hook, eval_hook = Counter(), Counter()
    train_spec = tf.estimator.TrainSpec(input_fn, max_steps=10, hooks=[train_hook])
    eval_spec = tf.estimator.EvalSpec(input_fn, steps=2, exporters=[Exporter()],
                                      hooks=[eval_hook], throttle_secs=0)
    # The loop train_and_evaluate runs on a TPU, forced here on CPU.
    metrics, exports = rt.loop.train_in_stretches(make(), train_spec, eval_spec)
    first = {"metrics_step": int(metrics["global_step"]), "exports": exports,
             "calls": list(Exporter.calls), "train_runs": train_hook.runs,
             "eval_runs": eval_hook.runs}
    Exporter.calls.clear()
    again = rt.loop.train_in_stretches(make(), train_spec, eval_spec)
    longer = tf.estimator.TrainSpec(input_fn, max_steps=13)
    metrics3, exports3 = rt.loop.train_in_stretches(make(), longer, eval_spec)
    longer_calls = list(Exporter.calls)
    # Without a TPU, train_and_evaluate is TensorFlow's own.
    Exporter.calls.clear()
    first_model_dir, model_dir = model_dir, tempfile.mkdtemp()
    metrics4, exports4 = rt.train_and_evaluate(make(), train_spec, eval_spec)
    print(json.dumps({"model_dir": first_model_dir, "cpu_model_dir": model_dir, "first": first,
                      "again": [again[0], again[1]],
                      "longer": {"step": int(metrics3["global_step"]), "exports": exports3,
                                 "calls": longer_calls},
                      "cpu": {"step": int(metrics4["global_step"]), "exports": exports4,
                              "calls": Exporter.calls}}))
    """
)


@pytest.mark.tf
def test_loop_schedule_exporters_hooks_and_resume() -> None:
    report = _harness().run_tf_json(_LOOP_PROBE)
    export_path = str(Path(report["model_dir"]) / "export" / "probe")
    first = report["first"]
    # Stretches end on checkpoint boundaries 4, 8 and at max_steps 10.
    assert first["calls"] == [
        {
            "export_path": export_path,
            "checkpoint": f"model.ckpt-{step}",
            "step": step,
            "final": step == 10,
        }
        for step in (4, 8, 10)
    ]
    assert first["metrics_step"] == 10
    assert first["exports"] == ["export-10"]  # (eval_result, export_results), as in TF 2.15
    assert first["train_runs"] == 10
    assert first["eval_runs"] == 3 * 2
    # A finished model_dir: nothing is trained or evaluated; TF 2.15 returns (None, []).
    assert report["again"] == [None, []]
    # More steps later: resumes at 10, stops at 12 (boundary), then 13.
    longer = report["longer"]
    assert [c["step"] for c in longer["calls"]] == [12, 13]
    assert longer["step"] == 13 and longer["exports"] == ["export-13"]
    # TensorFlow's train_and_evaluate (throttle_secs=0): an evaluation per checkpoint.
    cpu = report["cpu"]
    export_path = str(Path(report["cpu_model_dir"]) / "export" / "probe")
    assert cpu["calls"] == [
        {
            "export_path": export_path,
            "checkpoint": f"model.ckpt-{step}",
            "step": step,
            "final": step == 10,
        }
        for step in (4, 8, 10)
    ]
    assert cpu["step"] == 10 and cpu["exports"] == ["export-10"]
