"""Small Estimator programs for `verify --tpu --target tf2`: the migration turns them into the
tf2 Estimator facade, whose train step then compiles under XLA.

A line ending ``# expect: TPU1xx`` is where that finding must be reported (in the migrated
text, which keeps comments).
"""

from __future__ import annotations

CLEAN = '''\
"""A small Estimator program: a two-class problem on four features."""

import numpy as np
import tensorflow as tf

RNG = np.random.RandomState(0)
X = RNG.normal(size=(256, 4)).astype(np.float32)
Y = (X[:, 0] > 0).astype(np.int32)
NAMES = np.array([b"a", b"b"] * 128)


def input_fn():
    dataset = tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).repeat()
    return dataset.batch(32, drop_remainder=True)


def model_fn(features, labels, mode):
    net = features["x"]
    net = tf.compat.v1.layers.dense(net, 8, activation=tf.nn.relu)
    logits = tf.compat.v1.layers.dense(net, 2)
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    if mode == tf.estimator.ModeKeys.EVAL:
        accuracy = tf.compat.v1.metrics.accuracy(labels, tf.argmax(logits, 1))
        return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops={"accuracy": accuracy})
    optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.1)
    train_op = optimizer.minimize(loss, tf.compat.v1.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def main():
    estimator = tf.estimator.Estimator(model_fn=model_fn, model_dir="model")
    estimator.train(input_fn, max_steps=2)
    metrics = estimator.evaluate(input_fn, steps=1)
    print("accuracy", metrics["accuracy"])


if __name__ == "__main__":
    main()
'''

_NET = "    net = tf.compat.v1.layers.dense(net, 8, activation=tf.nn.relu)\n"
_BATCH = "    return dataset.batch(32, drop_remainder=True)\n"

# defect class -> the (old, new) line replacements that make it
DEFECTS: dict[str, list[tuple[str, str]]] = {
    "string_feature": [
        (
            '({"x": X}, Y)).repeat()\n',
            '({"x": X, "name": NAMES}, Y)).repeat()\n',
        ),
        (_BATCH, _BATCH.rstrip("\n") + "  # expect: TPU102\n"),
    ],
    "unknown_batch_dimension": [(_BATCH, "    return dataset.batch(32)  # expect: TPU114\n")],
    "string_on_device": [
        (
            _NET,
            _NET
            + "    text = tf.strings.as_string(net)  # expect: TPU107\n"
            + "    net = net + tf.cast(tf.strings.length(text), tf.float32)\n",
        )
    ],
    "lookup_table_in_step": [
        (
            _NET,
            _NET
            + "    keys = tf.constant([0, 1], tf.int64)\n"
            + "    init = tf.lookup.KeyValueTensorInitializer(keys, keys[::-1])\n"
            + "    table = tf.lookup.StaticHashTable(init, -1)  # expect: TPU106\n"
            + "    ids = table.lookup(tf.cast(labels, tf.int64))\n"
            + "    net = net + tf.cast(tf.reshape(ids, [-1, 1]), tf.float32)\n",
        )
    ],
    "no_xla_kernel": [
        (
            _NET,
            _NET
            + "    tanh = tf.numpy_function(np.tanh, [net], tf.float32)  # expect: TPU108\n"
            + "    net = tf.reshape(tanh, tf.shape(net))\n",
        )
    ],
}


def program(defect: str) -> str:
    text = CLEAN
    for old, new in DEFECTS[defect]:
        if old not in text:
            raise AssertionError(f"{defect}: {old!r} is not in the program")
        text = text.replace(old, new, 1)
    return text
