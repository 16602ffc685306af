"""Tests of ``est2tpu.runtime.numpy_input_fn`` / ``pandas_input_fn`` (TensorFlow 2.15).

- The ``numpy_input`` project, as written and hand-migrated (TPUEstimator, the
  shim's params-aware ``numpy_input_fn``), gives identical metrics, loss and
  predictions.
- Off TPU the shim's input function yields exactly the batches of the original
  with ``batch_size=params["batch_size"]``; on TPU (``params["use_tpu"]``) a
  ``tf.data.Dataset`` with static batch shapes and the same epochs.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.test_runtime_keras import _harness, hand_migrate

PROJECT = "numpy_input"

MIGRATION = [
    ("import tensorflow as tf\n", "import tensorflow as tf\n\nimport est2tpu.runtime\n"),
    (
        "        return tf.estimator.EstimatorSpec(mode=mode, predictions=predictions)",
        (
            "        return tf.compat.v1.estimator.tpu.TPUEstimatorSpec(mode=mode, "
            "predictions=predictions)"
        ),
    ),
    (
        """        eval_metric_ops = {
            "accuracy": tf.compat.v1.metrics.accuracy(
                labels=labels, predictions=predictions["class"]
            ),
            "auc": tf.compat.v1.metrics.auc(labels=labels, predictions=probability),
        }
        return tf.estimator.EstimatorSpec(mode=mode, loss=loss, eval_metric_ops=eval_metric_ops)""",
        """        def metric_fn(labels, classes, probability):
            return {
                "accuracy": tf.compat.v1.metrics.accuracy(labels=labels, predictions=classes),
                "auc": tf.compat.v1.metrics.auc(labels=labels, predictions=probability),
            }

        return tf.compat.v1.estimator.tpu.TPUEstimatorSpec(
            mode=mode,
            loss=loss,
            eval_metrics=(metric_fn, [labels, predictions["class"], probability]),
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
        "        config=tf.estimator.RunConfig(tf_random_seed=SEED),\n",
        (
            "        config=est2tpu.runtime.ensure_tpu_run_config(tf.estimator.RunConfig(tf_random_seed=SEED)),\n"
            "        use_tpu=est2tpu.runtime.use_tpu(),\n"
            "        train_batch_size=32,\n        eval_batch_size=32,\n        predict_batch_size=32,\n"
        ),
    ),
    (
        'x={"x": TRAIN_X}, y=TRAIN_Y, batch_size=32, num_epochs=None, shuffle=False',
        'x={"x": TRAIN_X}, y=TRAIN_Y, num_epochs=None, shuffle=False',
    ),
    (
        'x={"x": EVAL_X}, y=EVAL_Y, batch_size=32, num_epochs=1, shuffle=False',
        'x={"x": EVAL_X}, y=EVAL_Y, num_epochs=1, shuffle=False',
    ),
    (
        'x={"x": EVAL_X[:16]}, batch_size=32, num_epochs=1, shuffle=False',
        'x={"x": EVAL_X[:16]}, num_epochs=1, shuffle=False',
    ),
]


@pytest.mark.tf
def test_migrated_numpy_project_is_identical(tmp_path: Path) -> None:
    harness = _harness()
    original = harness.run_named_project(PROJECT, tmp_path / "orig")
    copy = harness.copy_project(PROJECT, tmp_path / "migrated")
    text = (copy / "train.py").read_text()
    assert text.count("tf.compat.v1.estimator.inputs.numpy_input_fn(") == 3
    (copy / "train.py").write_text(
        text.replace(
            "tf.compat.v1.estimator.inputs.numpy_input_fn(", "est2tpu.runtime.numpy_input_fn("
        )
    )
    hand_migrate(copy / "train.py", MIGRATION)
    migrated = harness.run_project(copy, harness.PROJECTS[PROJECT].entry, tmp_path / "run")
    assert original.metrics["accuracy"] > 0.85  # it learns (chance is about 1/2)
    assert migrated.metrics == original.metrics
    assert migrated.loss == original.loss
    assert migrated.predictions == original.predictions
    assert migrated.results == original.results


_INPUT_PROBE = textwrap.dedent(
    """
    import json
    import numpy as np
    import tensorflow as tf
    import est2tpu.runtime as rt

    x = {"a": np.arange(10, dtype=np.float32), "b": np.arange(10, 20, dtype=np.int64)}
    y = np.arange(100, 110, dtype=np.int32)

    def drain(input_fn_result):
        out = []
        with tf.compat.v1.train.MonitoredSession() as sess:
            while not sess.should_stop():
                out.append(sess.run(input_fn_result))
        return out

    def batches(fn, **kw):
        with tf.Graph().as_default():
            return [(f["a"].tolist(), f["b"].tolist(), l.tolist())
                    for f, l in drain(fn(**kw))]

    report = {}
    report["shim"] = batches(rt.numpy_input_fn(x, y, num_epochs=2, shuffle=False),
                             params={"batch_size": 4, "use_tpu": False})
    report["original"] = batches(tf.compat.v1.estimator.inputs.numpy_input_fn(
        x, y, batch_size=4, num_epochs=2, shuffle=False))
    report["default_batch"] = len(batches(rt.numpy_input_fn(x, y, shuffle=False), params={})[0][0])
    with tf.Graph().as_default():
        shuffled = drain(rt.numpy_input_fn(x, y, num_epochs=1, shuffle=True)(
            params={"batch_size": 3}))
    report["shuffled_labels"] = sorted(int(v) for _, l in shuffled for v in l)
    # On TPU: a Dataset, static batch dimension, same epochs, remainder dropped.
    ds = rt.numpy_input_fn(x, y, num_epochs=2, shuffle=False)({"batch_size": 4, "use_tpu": True})
    report["tpu_type"] = type(ds).__name__
    report["tpu_shape"] = ds.element_spec[1].shape.as_list()
    report["tpu_labels"] = [l.numpy().tolist() for _, l in ds]
    ds = rt.numpy_input_fn(x, y, num_epochs=1, shuffle=True)({"batch_size": 5, "use_tpu": True})
    report["tpu_shuffled"] = sorted(v for _, l in ds for v in l.numpy().tolist())
    try:
        rt.numpy_input_fn(x, y)
        report["shuffle_none"] = None
    except ValueError as exc:
        report["shuffle_none"] = str(exc)
    try:
        import pandas as pd
    except ImportError:
        report["pandas"] = None
    else:
        frame = pd.DataFrame({"a": x["a"], "b": x["b"]})
        target = pd.Series(y)
        shim = rt.pandas_input_fn(frame, target, num_epochs=1, shuffle=False)
        orig = tf.compat.v1.estimator.inputs.pandas_input_fn(
            frame, target, batch_size=4, num_epochs=1, shuffle=False)
        with tf.Graph().as_default():
            a = [l.tolist() for _, l in drain(shim({"batch_size": 4}))]
        with tf.Graph().as_default():
            b = [l.tolist() for _, l in drain(orig())]
        tpu = shim({"batch_size": 4, "use_tpu": True})
        report["pandas"] = {"equal": a == b, "batches": a,
                            "tpu": [l.numpy().tolist() for _, l in tpu]}
    print(json.dumps(report))
    """
)


@pytest.mark.tf
def test_input_functions_match_the_originals_off_tpu_and_are_datasets_on_tpu() -> None:
    report = _harness().run_tf_json(_INPUT_PROBE)
    assert report["shim"] == report["original"]
    assert [labels for _, _, labels in report["shim"]] == [
        [100, 101, 102, 103],
        [104, 105, 106, 107],
        [108, 109, 100, 101],
        [102, 103, 104, 105],
        [106, 107, 108, 109],
    ]
    assert report["default_batch"] == 10  # 128 by default, all ten rows
    assert report["shuffled_labels"] == list(range(100, 110))
    assert report["tpu_type"].endswith("Dataset")
    assert report["tpu_shape"] == [4]
    # Unshuffled, the same batches as the original (epochs run into each other as there).
    assert report["tpu_labels"] == [labels for _, _, labels in report["original"]]
    assert report["tpu_shuffled"] == list(range(100, 110))
    assert "shuffle must be provided" in report["shuffle_none"]
    # scripts/tf215-env.sh installs pandas: the pandas shim is always checked.
    assert report["pandas"] is not None, "pandas missing from the TF 2.15 environment"
    assert report["pandas"]["equal"]
    assert report["pandas"]["tpu"] == [[100, 101, 102, 103], [104, 105, 106, 107]]


_EVAL_STEPS_PROBE = textwrap.dedent(
    """
    import json

    import numpy as np
    import pandas as pd
    import tensorflow as tf

    import est2tpu.runtime as tpu_runtime

    def model_fn(features, labels, mode, params):
        loss = tf.reduce_mean(tf.compat.v1.layers.dense(features["x"], 1))
        return tf.compat.v1.estimator.tpu.TPUEstimatorSpec(
            mode, loss=loss, train_op=tf.no_op()
        )

    x = {"x": np.arange(10, dtype=np.float32).reshape(10, 1)}
    one = tpu_runtime.numpy_input_fn(x, num_epochs=1, shuffle=False)
    estimator = tf.compat.v1.estimator.tpu.TPUEstimator(
        model_fn,
        config=tf.compat.v1.estimator.tpu.RunConfig(),
        use_tpu=False,
        train_batch_size=4,
        eval_batch_size=4,
    )
    print(json.dumps({
        "one": one.num_examples,
        "two": tpu_runtime.numpy_input_fn(x, num_epochs=2, shuffle=False).num_examples,
        "endless": tpu_runtime.numpy_input_fn(x, num_epochs=None, shuffle=False).num_examples,
        "pandas": tpu_runtime.pandas_input_fn(
            pd.DataFrame({"x": [1.0, 2.0, 3.0]}), num_epochs=1, shuffle=False
        ).num_examples,
        "marked": tpu_runtime.sized_input_fn(model_fn, examples=(x["x"], [0] * 10)).num_examples,
        "marked_is_itself": tpu_runtime.sized_input_fn(model_fn, examples=x) is model_fn,
        "cpu_steps": tpu_runtime.eval_steps(estimator, one),
        "plain_steps": tpu_runtime.eval_steps(tf.estimator.Estimator(model_fn), one),
    }))
    """
)


@pytest.mark.tf
def test_eval_steps_are_the_originals_off_tpu() -> None:
    """The shim's input functions know how many examples one pass yields; off TPU
    `tpu_runtime.evaluate` gets steps=None, the original's evaluation to the end (the
    numpy_input end-to-end project compares the metrics for equality)."""
    report = _harness().run_tf_json(_EVAL_STEPS_PROBE)
    assert report == {
        "one": 10,
        "two": 20,
        "endless": None,
        "pandas": 3,
        "marked": 10,
        "marked_is_itself": True,
        "cpu_steps": None,
        "plain_steps": None,
    }
