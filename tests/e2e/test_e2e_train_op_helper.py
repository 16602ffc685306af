"""End to end: a model_fn whose train op comes from a module-level def that builds the TF1
optimizer and calls `minimize` itself (`train_op = make_train_op(loss, ...)`).

The migrated def wraps its optimizer in CrossShardOptimizer under a keyword-only flag that
the model_fn passes as params["use_tpu"]; on CPU (TPUEstimator, use_tpu=False) the flag is
False and the program must train to exactly the metrics of the original under a plain
Estimator. So must the other shapes of a train op built away from the model_fn (`SHAPES`):
a helper of a helper, a method of an instance, a `functools.partial` of a def, and an
optimizer the model_fn builds and hands to a def that applies it.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from est2tpu.api import migrate_source
from est2tpu.ftypes import Status

HELPER = """\
def make_train_op(loss, learning_rate):
    optimizer = tf.compat.v1.train.AdamOptimizer(learning_rate)
    return optimizer.minimize(
        loss, global_step=tf.compat.v1.train.get_or_create_global_step()
    )


make = make_train_op


"""

THROUGH_THE_HELPER = """\
    train_op = make(loss, params["learning_rate"])"""


def _program(harness: ModuleType) -> str:
    text: str = harness.train_op_program(THROUGH_THE_HELPER)
    return text.replace("def model_fn(", HELPER + "def model_fn(", 1)


def test_the_helper_wraps_its_optimizer_under_the_flag(harness: ModuleType) -> None:
    result = migrate_source(_program(harness), path="train.py")
    assert result.status is not Status.FAILED, result.error
    assert [f.rule_id for f in result.findings] == []
    assert result.new_text is not None
    assert "def make_train_op(loss, learning_rate, *, use_tpu=False):" in result.new_text
    assert "optimizer = tf.compat.v1.tpu.CrossShardOptimizer(optimizer)" in result.new_text
    assert 'make(loss, params["learning_rate"], use_tpu=params["use_tpu"])' in result.new_text
    again = migrate_source(result.new_text, path="train.py")
    assert again.new_text == result.new_text


@pytest.mark.tf
def test_the_migrated_helper_trains_like_the_original(harness: ModuleType, tmp_path: Path) -> None:
    original = _program(harness)
    migrated = migrate_source(original, path="train.py")
    assert migrated.new_text is not None
    assert "TPUEstimator" in migrated.new_text
    runs = harness.run_programs({"original": original, "migrated": migrated.new_text}, tmp_path)
    assert runs["migrated"].metrics == runs["original"].metrics
    assert runs["migrated"].metrics["global_step"] == 60


# The train op built away from the model_fn in the other shapes TPU004 threads the flag
# through: (defs before the model_fn, the model_fn's train-op line, what the migration says)
SHAPES = {
    "helper_of_a_helper": (
        """\
def _optimize(loss, learning_rate):
    optimizer = tf.compat.v1.train.AdamOptimizer(learning_rate)
    return optimizer.minimize(
        loss, global_step=tf.compat.v1.train.get_or_create_global_step()
    )


def make_train_op(loss, learning_rate):
    return _optimize(loss, learning_rate)


""",
        '    train_op = make_train_op(loss, params["learning_rate"])',
        "return _optimize(loss, learning_rate, use_tpu=use_tpu)",
    ),
    "method": (
        """\
class Optimization:
    def __init__(self, learning_rate):
        self.learning_rate = learning_rate

    def train_op(self, loss):
        optimizer = tf.compat.v1.train.AdamOptimizer(self.learning_rate)
        return optimizer.minimize(
            loss, global_step=tf.compat.v1.train.get_or_create_global_step()
        )


""",
        '    train_op = Optimization(params["learning_rate"]).train_op(loss)',
        "def train_op(self, loss, *, use_tpu=False):",
    ),
    "partial": (
        """\
def _optimize(loss, learning_rate):
    optimizer = tf.compat.v1.train.AdamOptimizer(learning_rate)
    return optimizer.minimize(
        loss, global_step=tf.compat.v1.train.get_or_create_global_step()
    )


make_train_op = functools.partial(_optimize, learning_rate=0.05)


""",
        "    train_op = make_train_op(loss)",
        'make_train_op(loss, use_tpu=params["use_tpu"])',
    ),
    "optimizer_passed": (
        """\
def apply(optimizer, loss):
    grads_and_vars = optimizer.compute_gradients(loss)
    return optimizer.apply_gradients(
        grads_and_vars, tf.compat.v1.train.get_or_create_global_step()
    )


""",
        """\
    optimizer = tf.compat.v1.train.AdamOptimizer(params["learning_rate"])
    train_op = apply(optimizer, loss)""",
        """\
    if params["use_tpu"]:
        optimizer = tf.compat.v1.tpu.CrossShardOptimizer(optimizer)
    train_op = apply(optimizer, loss)""",
    ),
}


def _shape(harness: ModuleType, shape: str) -> str:
    defs, line, _ = SHAPES[shape]
    text: str = harness.train_op_program(line)
    if "functools." in defs and "import functools" not in text:
        text = "import functools\n" + text
    return text.replace("def model_fn(", defs + "def model_fn(", 1)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_each_shape_is_migrated_without_findings(harness: ModuleType, shape: str) -> None:
    result = migrate_source(_shape(harness, shape), path="train.py")
    assert result.status is not Status.FAILED, result.error
    assert [f.rule_id for f in result.findings] == []
    assert result.new_text is not None
    assert "tf.compat.v1.tpu.CrossShardOptimizer(optimizer)" in result.new_text
    assert SHAPES[shape][2] in result.new_text
    again = migrate_source(result.new_text, path="train.py")
    assert again.new_text == result.new_text


@pytest.mark.tf
def test_each_shape_trains_like_the_original(harness: ModuleType, tmp_path: Path) -> None:
    programs: dict[str, str] = {}
    for shape in sorted(SHAPES):
        original = _shape(harness, shape)
        migrated = migrate_source(original, path="train.py")
        assert migrated.new_text is not None and "TPUEstimator" in migrated.new_text
        programs[f"{shape}-original"] = original
        programs[f"{shape}-migrated"] = migrated.new_text
    runs = harness.run_programs(programs, tmp_path)
    for shape in SHAPES:
        original, migrated = runs[f"{shape}-original"], runs[f"{shape}-migrated"]
        assert migrated.metrics == original.metrics, shape
        assert migrated.metrics["global_step"] == 60, shape
