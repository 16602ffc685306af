"""tf2 target: TF1 code in the defs a model_fn calls in other modules changes as well."""

from __future__ import annotations

from pathlib import Path

from oracle import migrate_all_parsed

from est2tpu import api
from est2tpu.ftypes import Status, Target

MODEL = """\
import tensorflow as tf

from trainer import blocks
from trainer.blocks import head as make_head


def model_fn(features, labels, mode, params):
    net = blocks.tower(features["x"], 8)
    logits = make_head(net)
    loss = tf.compat.v1.losses.mean_squared_error(labels, logits)
    return tf.estimator.EstimatorSpec(mode=mode, loss=loss)


estimator = tf.estimator.Estimator(model_fn=model_fn)
"""
# No pre-filter token at all ("stimator", "model_fn", ...): only its TensorFlow import.
BLOCKS = """\
import tensorflow as tf


def tower(net, units):
    return _dense(tf.compat.v1.layers.dropout(net, 0.1), units)


def _dense(net, units):
    return tf.compat.v1.layers.dense(net, units)


def head(net):
    scale = tf.compat.v1.get_variable("scale", [])
    return tf.compat.v1.layers.dense(net, 1) * scale


def unrelated(net):
    return tf.compat.v1.layers.dense(net, 3)
"""


def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "trainer").mkdir(parents=True)
    (root / "trainer" / "__init__.py").write_text("")
    (root / "trainer" / "model.py").write_text(MODEL)
    (root / "trainer" / "blocks.py").write_text(BLOCKS)
    return root


def test_helpers_in_another_module_are_migrated_and_reported(tmp_path: Path) -> None:
    root = project(tmp_path)
    results = {r.path.name: r for r in api.migrate_paths([root], target=Target.TF2, jobs=1)}
    blocks = results["blocks.py"]
    assert blocks.status is Status.CHANGED
    text = blocks.new_text or ""
    # tower, the helper it calls and head run inside the model_fn; `unrelated` does not.
    assert "return _dense(tf2_runtime.layers.dropout(net, 0.1), units)" in text
    assert "return tf2_runtime.layers.dense(net, units)" in text
    assert "return tf2_runtime.layers.dense(net, 1) * scale" in text
    assert "return tf.compat.v1.layers.dense(net, 3)" in text
    assert [(f.rule_id, f.position.line) for f in blocks.findings] == [("TF2003", 13)]
    # The reference pipeline agrees.
    reference = {r.path.name: r for r in migrate_all_parsed([root], target=Target.TF2)}
    assert reference["blocks.py"].new_text == blocks.new_text
    assert reference["blocks.py"].findings == blocks.findings


def test_the_tpu_estimator_target_leaves_helpers_alone(tmp_path: Path) -> None:
    """TF1 layers work under TPUEstimator: there the helper module is not even read."""
    root = project(tmp_path)
    results = {r.path.name: r for r in api.migrate_paths([root], jobs=1)}
    assert results["blocks.py"].status is Status.SKIPPED
