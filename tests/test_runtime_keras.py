"""Tests of ``est2tpu.runtime.model_to_estimator`` (TensorFlow 2.15, in subprocesses).

- The ``keras_model_to_estimator`` project, run as written
  (``tf.keras.estimator.model_to_estimator``) and hand-migrated to the shim
  (TPUEstimator batch sizes, ``lambda params: input_fn(params["batch_size"])``),
  gives bit-identical loss, accuracy and predictions.  No tolerance is needed:
  the shim's TF1 optimizers apply Keras' own update kernels.
- The optimizer mapping, one optimizer at a time: Keras' legacy optimizer (what
  the original ``model_to_estimator`` trains with) and the shim's TF1 optimizer
  give bit-identical weights after several steps; the stock TF1 kernels would
  not (shown for momentum, RMSprop and Adagrad); unmappable optimizers raise.
"""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
PROJECT = "keras_model_to_estimator"

# The migration the codemod performs on the project, written out by hand.
MIGRATION = [
    ("import tensorflow as tf\n", "import tensorflow as tf\n\nimport est2tpu.runtime\n"),
    ("tf.keras.estimator.model_to_estimator(", "est2tpu.runtime.model_to_estimator("),
    (
        "config=tf.estimator.RunConfig(tf_random_seed=SEED),",
        (
            "config=tf.estimator.RunConfig(tf_random_seed=SEED),\n"
            "        train_batch_size=32,\n        eval_batch_size=32,\n        predict_batch_size=32,"
        ),
    ),
    ("input_fn=lambda: input_fn(32), ", 'input_fn=lambda params: input_fn(params["batch_size"]), '),
    (
        "input_fn=lambda: input_fn(32, training=False)",
        'input_fn=lambda params: input_fn(params["batch_size"], training=False)',
    ),
    (
        "input_fn=lambda: predict_input_fn(32)",
        'input_fn=lambda params: predict_input_fn(params["batch_size"])',
    ),
]


def _harness() -> ModuleType:
    name = "est2tpu_e2e_harness"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, REPO_ROOT / "tests/e2e/harness.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def hand_migrate(path: Path, replacements: list[tuple[str, str]]) -> None:
    """Apply each (old, new) replacement to ``path``; each ``old`` must occur exactly once."""
    text = path.read_text()
    for old, new in replacements:
        assert text.count(old) == 1, f"{old!r} occurs {text.count(old)} times in {path.name}"
        text = text.replace(old, new)
    path.write_text(text)


@pytest.mark.tf
def test_migrated_keras_project_is_bit_identical(tmp_path: Path) -> None:
    harness = _harness()
    original = harness.run_named_project(PROJECT, tmp_path / "orig")
    copy = harness.copy_project(PROJECT, tmp_path / "migrated")
    hand_migrate(copy / "train.py", MIGRATION)
    migrated = harness.run_project(copy, harness.PROJECTS[PROJECT].entry, tmp_path / "run")
    # It learns (chance is 1/3) ...
    assert original.metrics["accuracy"] > 0.9
    assert original.metrics["global_step"] == 120
    # ... and the TPUEstimator built by the shim trains exactly like Keras' Estimator.
    assert migrated.metrics == original.metrics
    assert migrated.loss == original.loss
    assert migrated.predictions == original.predictions
    assert migrated.results == original.results
    assert set(migrated.predictions[0]) == {"species"}  # keyed by the output name
    assert "TPUEstimator" in migrated.stderr or "tpu_estimator" in migrated.stderr


_OPTIMIZER_PROBE = textwrap.dedent(
    """
    import json
    import numpy as np
    import tensorflow as tf
    from est2tpu.runtime.keras import _keras_optimizer_config, _tf1_from_config, tf1_optimizer

    rng = np.random.RandomState(0)
    X = rng.normal(size=(16, 3)).astype(np.float32)
    Y = rng.normal(size=(16, 2)).astype(np.float32)
    W0 = rng.normal(size=(3, 2)).astype(np.float32)
    legacy = tf.keras.optimizers.legacy

    def train(make, steps=6):
        with tf.Graph().as_default():
            gs = tf.compat.v1.train.get_or_create_global_step()
            w = tf.Variable(W0, name="w")
            loss = tf.reduce_mean(tf.square(tf.matmul(X, w) - Y))
            grads = tf.gradients(loss, [w])
            opt = make(gs)
            if isinstance(opt, legacy.Optimizer):
                opt.iterations = gs
                op = opt.apply_gradients(zip(grads, [w]))
            else:
                op = opt.apply_gradients(zip(grads, [w]), global_step=gs)
            with tf.compat.v1.Session() as sess:
                sess.run(tf.compat.v1.global_variables_initializer())
                for _ in range(steps):
                    sess.run(op)
                return sess.run(w)

    cases = {
        "sgd": (lambda: tf.keras.optimizers.SGD(0.1), lambda: legacy.SGD(0.1)),
        "momentum": (lambda: tf.keras.optimizers.SGD(0.1, momentum=0.9),
                     lambda: legacy.SGD(0.1, momentum=0.9)),
        "nesterov": (lambda: tf.keras.optimizers.SGD(0.1, momentum=0.9, nesterov=True),
                     lambda: legacy.SGD(0.1, momentum=0.9, nesterov=True)),
        "nesterov_without_momentum": (lambda: tf.keras.optimizers.SGD(0.1, nesterov=True),
                                      lambda: legacy.SGD(0.1, nesterov=True)),
        "legacy_decay": (lambda: legacy.SGD(0.1, momentum=0.9, decay=0.05),
                         lambda: legacy.SGD(0.1, momentum=0.9, decay=0.05)),
        "adam": (lambda: tf.keras.optimizers.Adam(0.01, beta_1=0.8, epsilon=1e-6),
                 lambda: legacy.Adam(0.01, beta_1=0.8, epsilon=1e-6)),
        "rmsprop": (lambda: tf.keras.optimizers.RMSprop(0.01), lambda: legacy.RMSprop(0.01)),
        "rmsprop_momentum": (lambda: tf.keras.optimizers.RMSprop(0.01, momentum=0.5),
                             lambda: legacy.RMSprop(0.01, momentum=0.5)),
        "rmsprop_centered": (lambda: tf.keras.optimizers.RMSprop(0.01, centered=True),
                             lambda: legacy.RMSprop(0.01, centered=True)),
        "adagrad": (lambda: tf.keras.optimizers.Adagrad(0.1), lambda: legacy.Adagrad(0.1)),
        "schedule": (
            lambda: tf.keras.optimizers.SGD(
                tf.keras.optimizers.schedules.ExponentialDecay(0.1, 2, 0.5), momentum=0.9),
            lambda: legacy.SGD(
                tf.keras.optimizers.schedules.ExponentialDecay(0.1, 2, 0.5), momentum=0.9)),
    }
    report = {"max_abs_diff": {}, "tf1_class": {}}
    for name, (new_keras, legacy_keras) in cases.items():
        reference = train(lambda gs: legacy_keras())
        # Keras serializes hyperparameters eagerly: read the config outside the graph,
        # as model_to_estimator does.
        mapped = train(lambda gs, cfg=_keras_optimizer_config(new_keras()):
                       _tf1_from_config(*cfg, gs))
        report["max_abs_diff"][name] = float(np.max(np.abs(reference - mapped)))
        report["tf1_class"][name] = [c.__name__ for c in type(tf1_optimizer(new_keras())).__mro__
                                     if c.__module__.startswith("tensorflow")][0]
    # The stock TF1 kernels, for comparison: what the Keras-rule subclasses avoid.
    stock = {
        "momentum": lambda gs: tf.compat.v1.train.MomentumOptimizer(0.1, 0.9),
        "rmsprop": lambda gs: tf.compat.v1.train.RMSPropOptimizer(0.01, decay=0.9, epsilon=1e-7),
        "adagrad": lambda gs: tf.compat.v1.train.AdagradOptimizer(0.1),
    }
    report["stock_diff"] = {}
    for name, make in stock.items():
        reference = train(lambda gs: cases[name][1]())
        report["stock_diff"][name] = float(np.max(np.abs(reference - train(make))))
    report["errors"] = {}
    for name, opt in {
        "nadam": tf.keras.optimizers.Nadam(),
        "weight_decay": tf.keras.optimizers.SGD(0.1, weight_decay=0.01),
        "amsgrad": tf.keras.optimizers.Adam(amsgrad=True),
        "clipnorm": tf.keras.optimizers.SGD(0.1, clipnorm=1.0),
    }.items():
        try:
            tf1_optimizer(opt)
            report["errors"][name] = None
        except ValueError as exc:
            report["errors"][name] = str(exc)
    print(json.dumps(report))
    """
)


@pytest.fixture(scope="module")
def optimizer_report() -> dict[str, Any]:
    report: dict[str, Any] = _harness().run_tf_json(_OPTIMIZER_PROBE)
    return report


@pytest.mark.tf
def test_tf1_optimizers_apply_keras_updates_exactly(optimizer_report: dict[str, Any]) -> None:
    assert optimizer_report["max_abs_diff"] == {
        name: 0.0 for name in optimizer_report["max_abs_diff"]
    }
    assert optimizer_report["tf1_class"] == {
        "sgd": "GradientDescentOptimizer",
        "momentum": "MomentumOptimizer",
        "nesterov": "MomentumOptimizer",
        "nesterov_without_momentum": "GradientDescentOptimizer",
        "legacy_decay": "MomentumOptimizer",
        "adam": "AdamOptimizer",
        "rmsprop": "RMSPropOptimizer",
        "rmsprop_momentum": "RMSPropOptimizer",
        "rmsprop_centered": "RMSPropOptimizer",
        "adagrad": "AdagradOptimizer",
        "schedule": "MomentumOptimizer",
    }


@pytest.mark.tf
def test_stock_tf1_kernels_would_differ(optimizer_report: dict[str, Any]) -> None:
    # Why the shim does not use the stock kernels: momentum rounds differently
    # (accumulates g rather than lr*g); RMSprop starts its mean square at 1 and
    # puts epsilon inside the square root; Adagrad has no epsilon.
    assert all(diff > 0.0 for diff in optimizer_report["stock_diff"].values())


@pytest.mark.tf
def test_unmappable_optimizers_raise_naming_them(optimizer_report: dict[str, Any]) -> None:
    errors = optimizer_report["errors"]
    assert "Nadam" in errors["nadam"]
    assert "weight_decay" in errors["weight_decay"]
    assert "amsgrad" in errors["amsgrad"]
    assert "clipnorm" in errors["clipnorm"]


_ESTIMATOR_PROBE = textwrap.dedent(
    """
    import json, os, sys, tempfile
    import numpy as np
    import tensorflow as tf
    import est2tpu.runtime as rt

    tf.keras.utils.set_random_seed(1)
    inputs = tf.keras.Input(shape=(2,), name="xy")
    outputs = tf.keras.layers.Dense(2, activation="softmax", name="probs")(inputs)
    model = tf.keras.Model(inputs, outputs)
    model.compile(tf.keras.optimizers.Adam(0.01), "categorical_crossentropy",
                  metrics=["accuracy"])
    x = np.array([[0, 1], [1, 0], [1, 1], [0, 0]], np.float32)
    y = np.eye(2, dtype=np.float32)[[0, 1, 1, 0]]
    # (Keras cannot run the model eagerly once it has been cloned into a graph.)
    keras_preds = model.predict(x, verbose=0).tolist()
    model_dir = tempfile.mkdtemp()
    est = rt.model_to_estimator(keras_model=model, model_dir=model_dir,
                                train_batch_size=4, eval_batch_size=4, predict_batch_size=4)
    def input_fn(params):
        ds = tf.data.Dataset.from_tensor_slices(({"xy": x}, y))
        return ds.repeat().batch(params["batch_size"], drop_remainder=True)

    # Before training, the estimator's weights are the Keras model's weights.
    preds = [p["probs"].tolist() for p in est.predict(
        lambda params: tf.data.Dataset.from_tensor_slices({"xy": x}).batch(params["batch_size"]))]
    est.train(input_fn, steps=3)
    metrics = est.evaluate(input_fn, steps=1)
    def serving():
        p = tf.compat.v1.placeholder(tf.float32, [None, 2], name="xy")
        return tf.estimator.export.ServingInputReceiver({"xy": p}, {"xy": p})
    export_dir = est.export_saved_model(os.path.join(model_dir, "export"), serving).decode()
    try:
        rt.model_to_estimator(keras_model=model, model_dir=tempfile.mkdtemp(),
                              checkpoint_format="bogus")
        bad_format = None
    except ValueError as exc:
        bad_format = str(exc)
    uncompiled = tf.keras.Model(inputs, outputs)
    try:
        rt.model_to_estimator(keras_model=uncompiled)
        not_compiled = None
    except ValueError as exc:
        not_compiled = str(exc)
    print(json.dumps({
        "type": type(est).__name__,
        "use_tpu": est._ctx._use_tpu if hasattr(est, "_ctx") else None,
        "preds": preds, "keras_preds": keras_preds,
        "metric_keys": sorted(metrics), "global_step": int(metrics["global_step"]),
        "exported": os.path.isfile(os.path.join(export_dir, "saved_model.pb")),
        "bad_format": bad_format, "not_compiled": not_compiled,
        "keras_ckpt": bool(tf.train.latest_checkpoint(os.path.join(model_dir, "keras"))),
    }))
    """
)


@pytest.mark.tf
def test_model_to_estimator_builds_a_tpu_estimator_that_starts_from_the_keras_weights() -> None:
    report = _harness().run_tf_json(_ESTIMATOR_PROBE)
    assert report["type"] == "TPUEstimator"
    assert report["use_tpu"] is False
    # Predict before any training = the Keras model's own predictions (warm start).
    flat = [v for row in report["preds"] for v in row]
    assert flat == pytest.approx([v for row in report["keras_preds"] for v in row], abs=1e-6)
    assert report["keras_ckpt"]
    assert report["metric_keys"] == ["accuracy", "global_step", "loss"]
    assert report["global_step"] == 3
    # Export calls the model_fn without params["batch_size"].
    assert report["exported"]
    assert "Checkpoint format" in report["bad_format"]
    assert "not been compiled" in report["not_compiled"]
