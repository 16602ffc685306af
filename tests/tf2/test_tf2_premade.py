"""The facade's premade estimators against TensorFlow 2.15's: the same constructor, and the
rule's table of arguments (positional order included) is that constructor."""

from __future__ import annotations

import inspect
import textwrap
from types import ModuleType
from typing import Any

import pytest

from est2tpu.rules.tf2001_estimator_facade import PREMADE_FACADE
from est2tpu.runtime.tf2 import premade

# Printed by TF 2.15: each premade's parameters and the repr of each default.
_PROBE = textwrap.dedent(
    """
    import inspect, json
    import tensorflow as tf
    out = {}
    for name in NAMES:
        sig = inspect.signature(getattr(tf.estimator, name).__init__)
        out[name] = [
            [p.name, None if p.default is inspect.Parameter.empty else repr(p.default)]
            for p in list(sig.parameters.values())[1:]
        ]
    print(json.dumps(out))
    """
)
# Defaults spelled differently in the facade, with the same meaning: TF's relu (the facade
# takes None for it, to import no TensorFlow at construction) and Keras' reduction constant.
_SAME_MEANING = {
    ("activation_fn", "None"),
    ("loss_reduction", "'sum_over_batch_size'"),
}


@pytest.fixture(scope="module")
def tf215_signatures(harness: ModuleType) -> dict[str, Any]:
    code = _PROBE.replace("NAMES", repr(sorted(PREMADE_FACADE)))
    result: dict[str, Any] = harness.run_tf_json(code)
    return result


@pytest.mark.tf
@pytest.mark.parametrize("name", sorted(PREMADE_FACADE))
def test_premade_constructor_is_tf215s(name: str, tf215_signatures: dict[str, Any]) -> None:
    tf215 = tf215_signatures[name]
    assert tuple(p for p, _ in tf215) == PREMADE_FACADE[name]
    facade = list(inspect.signature(getattr(premade, name).__init__).parameters.values())[1:]
    assert [p.name for p in facade] == [p for p, _ in tf215]
    for param, (_, default) in zip(facade, tf215):
        mine = None if param.default is inspect.Parameter.empty else repr(param.default)
        assert mine == default or (param.name, mine) in _SAME_MEANING, (param.name, mine, default)


# A 3-class DNNClassifier with batch norm, and a DNNRegressor with dropout, trained briefly:
# run as tf.estimator's under TF 2.15 and as the facade's on current TF ("facade" argument).
_TRAIN_PROBE = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import tensorflow as tf
    if sys.argv[1] == "facade":
        import est2tpu.runtime.tf2 as est
    else:
        est = tf.estimator
    tf.keras.utils.set_random_seed(3)
    rng = np.random.RandomState(3)
    x = rng.normal(size=(256, 3)).astype("float32")
    y = np.digitize(x @ np.array([1.0, -2.0, 0.5]), [-1.0, 1.0]).astype("int64")
    t = (x @ np.array([0.5, 1.0, -1.0])).astype("float32")
    columns = [tf.feature_column.numeric_column("x", shape=(3,))]

    def input_fn(labels, train):
        def fn():
            ds = tf.data.Dataset.from_tensor_slices(({"x": x}, labels)).batch(32)
            return ds.repeat() if train else ds
        return fn

    out = {}
    classifier = est.DNNClassifier([8, 8], columns, n_classes=3, batch_norm=True,
                                   optimizer="Adam", config=est.RunConfig(tf_random_seed=3))
    classifier.train(input_fn(y, True), steps=40)
    out["classifier"] = {k: float(v) for k, v in classifier.evaluate(input_fn(y, False)).items()}
    out["classifier_keys"] = sorted(next(iter(classifier.predict(input_fn(y, False)))))
    regressor = est.DNNRegressor([8], columns, dropout=0.2, optimizer="SGD",
                                 config=est.RunConfig(tf_random_seed=3))
    regressor.train(input_fn(t, True), steps=40)
    out["regressor"] = {k: float(v) for k, v in regressor.evaluate(input_fn(t, False)).items()}
    out["regressor_keys"] = sorted(next(iter(regressor.predict(input_fn(t, False)))))
    print(json.dumps(out))
    """
)


@pytest.mark.tf
def test_multiclass_batch_norm_and_dropout_premades(harness: ModuleType, tfcur: str) -> None:
    tf215 = _run(harness.tf_python(), harness, "tf")
    one = _run(tfcur, harness, "facade")
    eight = _run(tfcur, harness, "facade", {"EST2TPU_CPU_REPLICAS": "8"})
    for result in (one, eight):
        # TF 2.15's evaluate() and predict() keys, for both heads.
        for part in ("classifier", "regressor"):
            assert sorted(result[part]) == sorted(tf215[part])
            assert result[f"{part}_keys"] == tf215[f"{part}_keys"]
        assert result["classifier"]["global_step"] == 40
    # Batch norm is synchronized: 8 replicas see the statistics of the global batch. (The
    # regressor's dropout draws differ per replica, so only its keys are compared.)
    for key, value in one["classifier"].items():
        assert eight["classifier"][key] == pytest.approx(value, rel=1e-4, abs=1e-6), key


def _run(python: str, harness: ModuleType, which: str, env: Any = None) -> Any:
    return harness.run_tf_json(_TRAIN_PROBE, which, python=python, env=env, timeout=400)
