"""The facade's premade estimators against TensorFlow 2.15's: the same constructor, and the
rule's table of arguments (positional order included) is that constructor."""

from __future__ import annotations

import inspect
import textwrap
from types import ModuleType
from typing import Any

import pytest

from est2tpu.rules._tf2005_premade import PREMADE_FACADE
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


# Premades are TF2005's; the rest of the Estimator API is TF2001's. A premade that maps, one
# that does not (an optimizer the rule cannot see), one the facade has no class for, and a
# custom Estimator, each given a RunConfig.
_RULES_SOURCE = textwrap.dedent(
    """\
    import tensorflow as tf


    def model_fn(features, labels, mode):
        loss = tf.reduce_sum(features["x"])
        return tf.estimator.EstimatorSpec(mode, loss=loss)


    def build(columns, optimizer):
        mapped = tf.estimator.DNNClassifier(
            hidden_units=[8], feature_columns=columns, config=tf.estimator.RunConfig(model_dir="a")
        )
        refused = tf.estimator.LinearRegressor(
            feature_columns=columns, optimizer=optimizer, config=tf.estimator.RunConfig(model_dir="b")
        )
        other = tf.estimator.BoostedTreesClassifier(config=tf.estimator.RunConfig(model_dir="c"))
        custom = tf.estimator.Estimator(model_fn, config=tf.estimator.RunConfig(model_dir="d"))
        return mapped, refused, other, custom
    """
)
_MAPPED = 'tf2_runtime.DNNClassifier(\n        hidden_units=[8], feature_columns=columns, config=tf2_runtime.RunConfig(model_dir="a")'
_KEPT = [
    'tf.estimator.LinearRegressor(\n        feature_columns=columns, optimizer=optimizer, config=tf.estimator.RunConfig(model_dir="b")',
    'tf.estimator.BoostedTreesClassifier(config=tf.estimator.RunConfig(model_dir="c"))',
]
_CUSTOM = 'tf2_runtime.Estimator(model_fn, config=tf2_runtime.RunConfig(model_dir="d"))'


def _migrated(**selection: Any) -> tuple[str, list[tuple[int, str]]]:
    from est2tpu.api import migrate_source
    from est2tpu.ftypes import Status, Target

    result = migrate_source(_RULES_SOURCE, path="m.py", target=Target.TF2, **selection)
    assert result.status is not Status.FAILED, result.error
    assert result.new_text is not None
    compile(result.new_text, "m.py", "exec", dont_inherit=True)
    return result.new_text, [(f.position.line, f.rule_id) for f in result.findings]


def test_premade_findings_are_tf2005s_and_the_rest_tf2001s() -> None:
    text, findings = _migrated(ignore=["TF2004"])
    assert _MAPPED in text and _CUSTOM in text
    assert all(kept in text for kept in _KEPT)  # refused whole: their RunConfig too
    assert findings == [(13, "TF2005"), (16, "TF2005")]


def test_tf2001_alone_leaves_every_premade_whole() -> None:
    text, findings = _migrated(select=["TF2001"])
    assert _CUSTOM in text
    assert (
        'tf.estimator.DNNClassifier(\n        hidden_units=[8], feature_columns=columns, config=tf.estimator.RunConfig(model_dir="a")'
        in text
    )
    assert all(kept in text for kept in _KEPT)
    assert findings == []
    # --ignore TF2005 is the same selection of the tf2 rules TF2001 runs with
    assert _migrated(ignore=["TF2005", "TF2004"]) == (text, findings)


def test_tf2005_alone_maps_premades_and_leaves_the_rest_to_tf2001() -> None:
    text, findings = _migrated(select=["TF2005"])
    assert (
        'tf2_runtime.DNNClassifier(\n        hidden_units=[8], feature_columns=columns, config=tf.estimator.RunConfig(model_dir="a")'
        in text
    )
    assert all(kept in text for kept in _KEPT)
    assert 'tf.estimator.Estimator(model_fn, config=tf.estimator.RunConfig(model_dir="d"))' in text
    assert findings == [(13, "TF2005"), (16, "TF2005")]


def test_the_cli_lists_and_reports_tf2005(tmp_path: Any) -> None:
    import json
    import subprocess
    import sys

    (tmp_path / "m.py").write_text(_RULES_SOURCE, encoding="utf-8")
    listed = subprocess.run(
        [sys.executable, "-m", "est2tpu", "rules"], capture_output=True, text=True, check=False
    )
    assert "TF2005" in listed.stdout and "premade-estimator-facade" in listed.stdout
    done = subprocess.run(
        [sys.executable, "-m", "est2tpu", "check", "--no-cache", "-q", "--target", "tf2"]
        + ["--ignore", "TF2004", "-f", "json", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    report = json.loads(done.stdout)
    assert [(f["line"], f["rule"]) for f in report["findings"]] == [(13, "TF2005"), (16, "TF2005")]
    assert report["summary"]["findings"] == {"TF2005": 2}
