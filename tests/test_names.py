"""TensorFlow's names as the rules read them: canonical names, and module-level aliases."""

from __future__ import annotations

import ast

import libcst as cst
import pytest

from est2tpu.api import migrate_source
from est2tpu.names import ImportTable, canonical_tf, module_aliases, single_assignments


@pytest.mark.parametrize(
    ("qualified", "canonical"),
    [
        ("tensorflow.compat.v1.train.AdamOptimizer", "train.AdamOptimizer"),
        # TensorFlow's compat modules hold compat modules again: the same objects
        ("tensorflow.compat.v1.compat.v1.train.AdamOptimizer", "train.AdamOptimizer"),
        ("tensorflow.compat.v2.compat.v1.estimator.Estimator", "estimator.Estimator"),
        ("tensorflow.compat.v1.compat.v2.compat.v1.layers.dense", "layers.dense"),
        ("tensorflow.compat.v1.compat.v1", ""),
        ("tensorflow.compat.v1.compat.v2", ""),
        # other members of compat stay what they are
        ("tensorflow.compat.v1.compat.forward_compatible", "compat.forward_compatible"),
        ("tensorflow.compat.v1.compat", "compat"),
        ("tensorflow_estimator.compat.v1.estimator.Estimator", "estimator.Estimator"),
        ("tensorflow.python.ops.nn", None),
        ("numpy.compat.v1.x", None),
    ],
)
def test_canonical_tf(qualified: str, canonical: str | None) -> None:
    assert canonical_tf(qualified) == canonical


_DOUBLE_COMPAT = """\
import tensorflow as tf


def model_fn(features, labels, mode, params):
    logits = tf.compat.v1.compat.v1.layers.dense(features["x"], 2)
    loss = tf.compat.v1.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    optimizer = tf.compat.v1.compat.v1.train.AdamOptimizer(0.01)
    train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
    return tf.compat.v1.compat.v1.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


estimator = tf.compat.v1.compat.v1.estimator.Estimator(
    model_fn=model_fn, config=tf.compat.v1.compat.v1.estimator.RunConfig()
)
"""


def test_compat_v1_compat_v1_is_migrated_like_compat_v1() -> None:
    """The same program spelled `tf.compat.v1.X` and `tf.compat.v1.compat.v1.X`: the same
    migration, but for the spelling of the names est2tpu leaves."""
    plain = _DOUBLE_COMPAT.replace("compat.v1.compat.v1.", "compat.v1.")
    double = migrate_source(_DOUBLE_COMPAT, path="m.py")
    single = migrate_source(plain, path="m.py")
    assert double.new_text is not None and single.new_text is not None
    assert double.new_text != _DOUBLE_COMPAT
    # the same code (longer spellings may wrap a line differently)
    respelled = double.new_text.replace("compat.v1.compat.v1.", "compat.v1.")
    assert ast.dump(ast.parse(respelled)) == ast.dump(ast.parse(single.new_text))
    assert [f.rule_id for f in double.findings] == [f.rule_id for f in single.findings]


_ALIASES = """\
import tensorflow as tf
from tensorflow.compat.v1 import train as t

train = tf.compat.v1.train
Momentum = t.MomentumOptimizer
twice = tf.compat.v1.train
twice = tf.train
not_tf = dict
a = b = tf.compat.v1.train


def f(shadowed):
    local = tf.compat.v1.train
    return local


def shadowed():
    pass


for looped in range(2):
    pass
looped = tf.compat.v1.train
"""


def test_module_aliases_are_names_bound_once_at_module_level_to_tensorflow() -> None:
    module = cst.parse_module(_ALIASES)
    aliases = module_aliases(module, ImportTable.from_module(module))
    assert aliases == {
        "train": "tensorflow.compat.v1.train",
        "Momentum": "tensorflow.compat.v1.train.MomentumOptimizer",
    }
    once = single_assignments(module)
    # bound once, but in a function: not a module alias
    assert set(once) == {"train", "Momentum", "not_tf", "local"}
