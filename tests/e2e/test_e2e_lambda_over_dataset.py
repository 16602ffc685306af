"""Why TPU005 refuses a factory's lambdas over a dataset it built before (tfp_vae_2018).

`dataset = ....batch(batch_size)`, `return lambda: make_one_shot_iterator(dataset.repeat())
.get_next(), ...`: the finding says the lambda reads a dataset built outside the graph the
Estimator makes, and that the original fails too on TensorFlow 1.13 and later. This runs
such an original, unmigrated, on TensorFlow 2.15 (eager, and graph mode as TF1 programs
run): it fails with the error the finding quotes, or the eager one. A migration cannot be
compared with an original that does not train; the finding stands.
"""

from __future__ import annotations

from types import ModuleType

import pytest

from est2tpu.api import migrate_source

PROGRAM = """\
import sys

import numpy as np
import tensorflow as tf

if sys.argv[1] == "graph":
    tf.compat.v1.disable_eager_execution()


def model_fn(features, labels, mode, params):
    loss = tf.reduce_mean(tf.compat.v1.layers.dense(features, 1))
    optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.1)
    train_op = optimizer.minimize(loss, tf.compat.v1.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def build_input_fns(batch_size):
    rows = np.random.rand(64, 3).astype("float32")
    dataset = tf.compat.v1.data.Dataset.from_tensor_slices(rows).map(lambda r: (r, 0.0))
    dataset = dataset.batch(batch_size)
    train_input_fn = lambda: tf.compat.v1.data.make_one_shot_iterator(dataset.repeat()).get_next()
    eval_input_fn = lambda: tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()
    return train_input_fn, eval_input_fn


train_input_fn, eval_input_fn = build_input_fns(16)
estimator = tf.estimator.Estimator(model_fn)
estimator.train(train_input_fn, steps=5)
print(estimator.evaluate(eval_input_fn, steps=1))
"""


def test_the_finding_names_the_dataset_built_before() -> None:
    result = migrate_source(PROGRAM, path="train.py")
    messages = [f.message for f in result.findings if f.rule_id == "TPU005"]
    assert len(messages) == 2
    for message in messages:
        assert "reads the dataset `dataset` that `build_input_fns` builds outside" in message


@pytest.mark.tf
@pytest.mark.parametrize("mode", ["eager", "graph"])
def test_the_original_cannot_train_on_tensorflow_2_15(harness: ModuleType, mode: str) -> None:
    proc = harness.run_tf_code(PROGRAM, mode)
    assert proc.returncode != 0
    assert (
        "must be from the same graph" in proc.stderr
        or "Attempting to capture an EagerTensor" in proc.stderr
    ), proc.stderr[-2000:]
