"""The facade's `model_to_estimator`, `inputs.numpy_input_fn` / `pandas_input_fn` and
`metrics.auc`, checked against what TensorFlow's own versions do."""

from __future__ import annotations

import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest


def _run(python: str, harness: ModuleType, code: str, *args: str, env: Any = None) -> Any:
    return harness.run_tf_json(code, *args, python=python, env=env, timeout=400)


# Under TensorFlow 2.15: TF1's queue-fed input functions next to the facade's datasets.
_INPUTS_PROBE = textwrap.dedent(
    """
    import json
    import numpy as np
    import pandas as pd
    import tensorflow as tf
    from est2tpu.runtime.tf2 import inputs

    X = np.arange(22, dtype=np.float32).reshape(11, 2)
    Y = np.arange(11, dtype=np.int64) * 10
    FRAME = pd.DataFrame({"a": np.arange(7.0), "b": np.arange(7) * 2})
    TARGET = pd.Series(np.arange(7) * 3)
    TARGETS = pd.DataFrame({"t1": np.arange(7), "t2": np.arange(7.0) / 2})

    def tolist(tree):
        return tf.nest.map_structure(lambda a: np.asarray(a).tolist(), tree)

    def tf1_batches(fn, limit):
        out = []
        with tf.Graph().as_default():
            tensors = fn()
            with tf.compat.v1.train.MonitoredSession() as sess:
                while not sess.should_stop() and len(out) < limit:
                    try:
                        out.append(tolist(sess.run(tensors)))
                    except tf.errors.OutOfRangeError:
                        break
        return out

    def facade_batches(fn, limit):
        return [tolist(b) for b in fn().take(limit).as_numpy_iterator()]

    cases = {
        "dict_two_epochs": ("numpy", dict(x={"x": X, "w": X[:, 0]}, y=Y, batch_size=4,
                                          num_epochs=2, shuffle=False)),
        "array_no_y": ("numpy", dict(x=X, batch_size=3, num_epochs=1, shuffle=False)),
        "y_dict": ("numpy", dict(x={"x": X}, y={"b": Y, "a": Y + 1}, batch_size=5,
                                 num_epochs=1, shuffle=False)),
        "forever": ("numpy", dict(x={"x": X}, y=Y, batch_size=4, num_epochs=None,
                                  shuffle=False)),
        "pandas_series": ("pandas", dict(x=FRAME, y=TARGET, batch_size=3, num_epochs=2,
                                         shuffle=False)),
        "pandas_frame_y": ("pandas", dict(x=FRAME, y=TARGETS, batch_size=4, num_epochs=1,
                                          shuffle=False)),
        "pandas_no_y": ("pandas", dict(x=FRAME, batch_size=4, num_epochs=1, shuffle=False)),
    }
    report = {}
    for name, (kind, kwargs) in cases.items():
        old = getattr(tf.compat.v1.estimator.inputs, f"{kind}_input_fn")(**kwargs)
        new = getattr(inputs, f"{kind}_input_fn")(**kwargs)
        report[name] = [tf1_batches(old, 9), facade_batches(new, 9)]
    # shuffle=True: the same rows each epoch (TF1's order cannot be reproduced).
    kwargs = dict(x={"x": X}, y=Y, batch_size=4, num_epochs=1, shuffle=True)
    rows = lambda batches: sorted(v for b in batches for v in b[1])
    report["shuffled_rows"] = [
        rows(tf1_batches(tf.compat.v1.estimator.inputs.numpy_input_fn(**kwargs), 99)),
        rows(facade_batches(inputs.numpy_input_fn(**kwargs), 99)),
    ]
    errors = []
    for bad in (dict(x={"x": X}, y=Y), dict(x={"x": X}, y={"x": Y}, shuffle=False),
                dict(x={"x": X}, y=Y[:3], shuffle=False)):
        try:
            inputs.numpy_input_fn(**bad)()
            errors.append(None)
        except (ValueError, TypeError) as exc:
            errors.append(type(exc).__name__)
    report["errors"] = errors
    print(json.dumps({"version": tf.__version__, "report": report}))
    """
)


@pytest.mark.tf
def test_input_functions_give_tf1s_batches(harness: ModuleType) -> None:
    out = _run(harness.tf_python(), harness, _INPUTS_PROBE)
    assert out["version"].startswith("2.15")
    report = out["report"]
    for name in (
        "dict_two_epochs",
        "array_no_y",
        "y_dict",
        "forever",
        "pandas_series",
        "pandas_frame_y",
        "pandas_no_y",
    ):
        tf1, facade = report[name]
        assert facade == tf1, name
    assert len(report["dict_two_epochs"][0]) == 6  # 22 rows in 4s: a last batch of 2
    shuffled_tf1, shuffled_facade = report["shuffled_rows"]
    assert shuffled_facade == shuffled_tf1
    assert report["errors"] == ["ValueError", "ValueError", "ValueError"]


# On current TF: the facade's auc in a model_fn next to tf.compat.v1.metrics.auc in a graph.
_AUC_PROBE = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import tensorflow as tf
    import est2tpu.runtime.tf2 as est

    rng = np.random.RandomState(5)
    P = rng.uniform(size=64).astype("float32")
    P[:4] = [0.0, 1.0, 0.5, 0.25]
    L = (rng.uniform(size=64) < P).astype("int32")
    W = rng.uniform(size=64).astype("float32")
    VARIANTS = {
        "roc": {},
        "roc_weighted": {"weights": True},
        "roc_50": {"num_thresholds": 50},
        "pr_careful": {"curve": "PR", "summation_method": "careful_interpolation"},
        "pr_trapezoidal": {"curve": "PR"},
        "roc_minoring": {"summation_method": "minoring"},
        "roc_majoring": {"summation_method": "majoring"},
        "thresholds": {"thresholds": [0.1, 0.3, 0.5, 0.9]},
    }

    def kwargs(spec, weights):
        out = dict(spec)
        if out.pop("weights", False):
            out["weights"] = weights
        return out

    def input_fn():
        return tf.data.Dataset.from_tensor_slices(({"p": P, "w": W}, L)).batch(16)

    def model_fn(features, labels, mode):
        loss = tf.reduce_mean(features["p"])
        metrics = {name: est.metrics.auc(labels, features["p"], **kwargs(spec, features["w"]))
                   for name, spec in VARIANTS.items()}
        return est.EstimatorSpec(mode, loss=loss, eval_metric_ops=metrics)

    estimator = est.Estimator(model_fn, model_dir=sys.argv[1])
    mine = estimator.evaluate(input_fn)
    theirs = {}
    with tf.Graph().as_default():
        p = tf.compat.v1.placeholder(tf.float32, [None])
        l = tf.compat.v1.placeholder(tf.int32, [None])
        w = tf.compat.v1.placeholder(tf.float32, [None])
        ops = {name: tf.compat.v1.metrics.auc(l, p, **kwargs(spec, w))
               for name, spec in VARIANTS.items()}
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.local_variables_initializer())
            for i in range(0, 64, 16):
                sess.run({k: v[1] for k, v in ops.items()},
                         {p: P[i:i + 16], l: L[i:i + 16], w: W[i:i + 16]})
            theirs = sess.run({k: v[0] for k, v in ops.items()})
    print(json.dumps({
        "replicas": est.strategy().num_replicas_in_sync,
        "mine": {k: float(mine[k]) for k in VARIANTS},
        "theirs": {k: float(v) for k, v in theirs.items()},
    }))
    """
)


@pytest.mark.tf
@pytest.mark.parametrize("replicas", ["1", "4"])
def test_auc_equals_tf1s(tfcur: str, harness: ModuleType, tmp_path: Path, replicas: str) -> None:
    out = _run(
        tfcur, harness, _AUC_PROBE, str(tmp_path / "m"), env={"EST2TPU_CPU_REPLICAS": replicas}
    )
    assert out["replicas"] == int(replicas)
    for name, want in out["theirs"].items():
        assert out["mine"][name] == pytest.approx(want, abs=1e-6), name


# On current TF: model_to_estimator's resume, predict, export and errors.
_KERAS_PROBE = textwrap.dedent(
    """
    import json, os, sys
    import numpy as np
    import tensorflow as tf
    import est2tpu.runtime.tf2 as est

    tf.keras.utils.set_random_seed(11)
    X = np.random.RandomState(2).normal(size=(24, 3)).astype("float32")
    Y = (X.sum(1, keepdims=True) > 0).astype("float32")

    def build():
        inputs = tf.keras.Input((3,), name="x")
        hidden = tf.keras.layers.Dense(4, activation="relu")(inputs)
        out = tf.keras.layers.Dense(1, activation="sigmoid", name="prob")(hidden)
        model = tf.keras.Model(inputs, out)
        model.compile(tf.keras.optimizers.Adam(0.01), "binary_crossentropy",
                      metrics=[tf.keras.metrics.BinaryAccuracy(name="acc")])
        return model

    def train_input():  # the same batch every step: a restart changes nothing
        return tf.data.Dataset.from_tensors(({"x": X}, Y)).repeat()

    def eval_input(params, mode):
        assert mode == est.ModeKeys.EVAL and params == {}
        return tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).batch(5)

    def predict_input():
        return tf.data.Dataset.from_tensor_slices({"x": X}).batch(5)

    mode, model_dir, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
    model = build()
    config = est.RunConfig(steps_per_execution=4, save_checkpoints_steps=8)
    estimator = est.model_to_estimator(keras_model=model, model_dir=model_dir, config=config)
    first_kernel_same = bool(np.allclose(
        estimator.model.get_weights()[0], model.get_weights()[0]))
    estimator.train(train_input, steps=steps)
    estimator.train(train_input, max_steps=steps)  # nothing to do after a fresh run
    metrics = estimator.evaluate(eval_input)
    report = {
        "kind": type(model).__module__.split(".")[0],
        "first_kernel_same": first_kernel_same,
        "metrics": {k: float(v) for k, v in metrics.items()},
        "weights": [w.ravel().tolist() for w in estimator.model.get_weights()],
        "checkpoints": sorted(f for f in os.listdir(model_dir) if f.endswith(".index")),
    }
    if mode == "full":
        single = list(estimator.predict(predict_input))
        batches = list(estimator.predict(predict_input, yield_single_examples=False))
        def receiver():
            x = tf.compat.v1.placeholder(tf.float32, [None, 3])
            return est.export.ServingInputReceiver({"x": x}, {"x": x})

        export_dir = estimator.export_saved_model(os.path.join(model_dir, "export"), receiver)
        served = tf.saved_model.load(export_dir.decode()).signatures["serving_default"](
            x=tf.constant(X[:2]))
        report.update({
            "single": [sorted(p) for p in single][:1] + [len(single)],
            "batch_sizes": [len(b["prob"]) for b in batches],
            "predicted": [float(p["prob"][0]) for p in single[:2]],
            "served": np.asarray(served["prob"]).ravel().tolist(),
        })
        try:
            uncompiled = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(3,))])
            est.model_to_estimator(keras_model=uncompiled)
            report["uncompiled"] = None
        except ValueError as exc:
            report["uncompiled"] = "compile" in str(exc)
    print(json.dumps(report))
    """
)


@pytest.mark.tf
def test_model_to_estimator_resumes_predicts_and_exports(
    tfcur: str, harness: ModuleType, tmp_path: Path
) -> None:
    one = _run(tfcur, harness, _KERAS_PROBE, "full", str(tmp_path / "one"), "16")
    # tf.keras is tf-keras (Keras 2) in a program that imports the facade.
    assert one["kind"] == "tf_keras"
    assert one["first_kernel_same"]
    assert one["metrics"]["global_step"] == 16
    assert sorted(one["metrics"]) == ["acc", "global_step", "loss"]
    assert one["checkpoints"] == ["ckpt-16.index", "ckpt-8.index"]
    assert one["single"] == [["prob"], 24]
    assert one["batch_sizes"] == [5, 5, 5, 5, 4]
    assert one["served"] == pytest.approx(one["predicted"], abs=1e-6)
    assert one["uncompiled"] is True
    _run(tfcur, harness, _KERAS_PROBE, "short", str(tmp_path / "two"), "8")
    resumed = _run(tfcur, harness, _KERAS_PROBE, "short", str(tmp_path / "two"), "8")
    assert resumed["metrics"]["global_step"] == 16
    for got, want in zip(resumed["weights"], one["weights"]):
        assert got == pytest.approx(want, abs=1e-6)
    assert resumed["metrics"] == pytest.approx(one["metrics"], abs=1e-6)


# A Keras program driven by train_and_evaluate (checkpoint every 20 steps, throttle 0, a
# LatestExporter): TF 2.15 evaluates and exports after each of the 3 checkpoints.
_KERAS_TRAIN_AND_EVALUATE = textwrap.dedent(
    """
    import json, os, sys
    import numpy as np
    import tensorflow as tf

    tf.keras.utils.set_random_seed(7)
    rng = np.random.RandomState(0)
    x = rng.normal(size=(256, 4)).astype(np.float32)
    y = (x.sum(axis=1) > 0).astype(np.float32)
    model = tf.keras.Sequential([
        tf.keras.layers.Dense(8, activation="relu", input_shape=(4,)),
        tf.keras.layers.Dense(1, activation="sigmoid"),
    ])
    model.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss="binary_crossentropy",
                  metrics=["accuracy"])
    model_dir = sys.argv[1]
    estimator = tf.keras.estimator.model_to_estimator(
        keras_model=model, model_dir=model_dir,
        config=tf.estimator.RunConfig(save_checkpoints_steps=20, tf_random_seed=7),
    )
    name = model.input_names[0]

    def train_input_fn():
        return tf.data.Dataset.from_tensor_slices(({name: x}, y)).repeat().batch(16)

    def eval_input_fn():
        return tf.data.Dataset.from_tensor_slices(({name: x}, y)).batch(64)

    def serving_input_receiver_fn():
        inp = tf.compat.v1.placeholder(tf.float32, [None, 4])
        return tf.estimator.export.ServingInputReceiver({name: inp}, {name: inp})

    exporter = tf.estimator.LatestExporter("latest", serving_input_receiver_fn)
    train_spec = tf.estimator.TrainSpec(train_input_fn, max_steps=60)
    eval_spec = tf.estimator.EvalSpec(eval_input_fn, steps=4, throttle_secs=0,
                                      exporters=[exporter])
    metrics, _ = tf.estimator.train_and_evaluate(estimator, train_spec, eval_spec)
    exports = os.listdir(os.path.join(model_dir, "export", "latest"))
    print(json.dumps({"metrics": {k: float(v) for k, v in metrics.items()},
                      "exports": len(exports)}))
    """
)


@pytest.mark.tf
def test_model_to_estimator_under_train_and_evaluate_evaluates_at_each_checkpoint(
    tfcur: str, harness: ModuleType, tmp_path: Path
) -> None:
    from est2tpu.api import migrate_source
    from est2tpu.ftypes import Target

    expected = _run(harness.tf_python(), harness, _KERAS_TRAIN_AND_EVALUATE, str(tmp_path / "a"))
    migrated = migrate_source(_KERAS_TRAIN_AND_EVALUATE, target=Target.TF2, path="prog.py")
    assert migrated.error is None and "tf2_runtime.train_and_evaluate" in (migrated.new_text or "")
    result = _run(tfcur, harness, migrated.new_text or "", str(tmp_path / "b"))
    assert expected["exports"] == result["exports"] == 3
    # Measured: the metrics agree to 1e-6 (same data order, same steps, same checkpoints).
    assert result["metrics"] == pytest.approx(expected["metrics"], rel=1e-5)
