"""One small TPUEstimator program per defect class of `verify --tpu`.

`CLEAN` is a program a TPU accepts; each defect is `CLEAN` with a few lines replaced. A line
ending ``# expect: TPU1xx`` is where that finding must be reported.
"""

from __future__ import annotations

import re

CLEAN = '''\
"""A small TPUEstimator program: a two-class problem on four features."""

import numpy as np
import tensorflow as tf

RNG = np.random.RandomState(0)
X = RNG.normal(size=(256, 4)).astype(np.float32)
Y = (X[:, 0] > 0).astype(np.int32)
NAMES = np.array([b"a", b"b"] * 128)
TPU = tf.compat.v1.estimator.tpu


def input_fn(params):
    dataset = tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).repeat()
    return dataset.batch(params["batch_size"], drop_remainder=True)


def model_fn(features, labels, mode, params):
    net = features["x"]
    net = tf.compat.v1.layers.dense(net, 8, activation=tf.nn.relu)
    logits = tf.compat.v1.layers.dense(net, 2)
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    if mode == tf.estimator.ModeKeys.EVAL:

        def metric_fn(labels, logits):
            predictions = tf.argmax(logits, 1)
            return {"accuracy": tf.compat.v1.metrics.accuracy(labels, predictions)}

        eval_tensors = [labels, logits]
        return TPU.TPUEstimatorSpec(mode, loss=loss, eval_metrics=(metric_fn, eval_tensors))
    optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.1)
    if params["use_tpu"]:
        optimizer = tf.compat.v1.tpu.CrossShardOptimizer(optimizer)
    train_op = optimizer.minimize(loss, tf.compat.v1.train.get_global_step())
    return TPU.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)


def main():
    config = TPU.RunConfig(
        model_dir="model", tpu_config=TPU.TPUConfig(iterations_per_loop=2)
    )
    estimator = TPU.TPUEstimator(
        model_fn=model_fn, config=config, use_tpu=False, train_batch_size=32, eval_batch_size=32
    )
    estimator.train(input_fn, max_steps=2)
    metrics = estimator.evaluate(input_fn, steps=1)
    print("accuracy", metrics["accuracy"])


if __name__ == "__main__":
    main()
'''

_NET = "    net = tf.compat.v1.layers.dense(net, 8, activation=tf.nn.relu)\n"
_BATCH = '    return dataset.batch(params["batch_size"], drop_remainder=True)\n'

# defect class -> (the line of CLEAN replaced, its replacement); the TPU1xx it must produce
DEFECTS: dict[str, tuple[str, str]] = {
    "batch_not_divisible": (
        "    estimator = TPU.TPUEstimator(\n",
        "    estimator = TPU.TPUEstimator(  # expect: TPU101\n",
    ),
    "batch_not_divisible_size": (
        "use_tpu=False, train_batch_size=32,",
        "use_tpu=False, train_batch_size=36,",
    ),
    "string_feature": (
        '    dataset = tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).repeat()\n',
        (
            '    dataset = tf.data.Dataset.from_tensor_slices(({"x": X, "name": NAMES}, Y))\n'
            "    dataset = dataset.repeat()\n"
        ),
    ),
    "dynamic_batch": (
        _BATCH,
        '    return dataset.batch(params["batch_size"])  # expect: TPU103\n',
    ),
    "scalar_in_eval_metrics": (
        "        eval_tensors = [labels, logits]\n",
        (
            "        mean_logit = tf.reduce_mean(logits)  # expect: TPU104\n"
            '        eval_tensors = {"labels": labels, "logits": logits, "mean": mean_logit}\n'
        ),
    ),
    "summary_in_loop": (
        _NET,
        _NET + '    tf.compat.v1.summary.scalar("mean", tf.reduce_mean(net))  # expect: TPU105\n',
    ),
    "lookup_table_in_loop": (
        _NET,
        _NET
        + "    keys = tf.constant([0, 1], tf.int64)\n"
        + "    init = tf.lookup.KeyValueTensorInitializer(keys, keys[::-1])\n"
        + "    table = tf.lookup.StaticHashTable(init, -1)  # expect: TPU106\n"
        + "    ids = table.lookup(tf.cast(labels, tf.int64))  # expect: TPU106\n"
        + "    net = net + tf.cast(tf.reshape(ids, [-1, 1]), tf.float32)\n",
    ),
    "string_on_device": (
        _NET,
        _NET
        + "    text = tf.strings.as_string(net)  # expect: TPU107\n"
        + "    net = net + tf.cast(tf.strings.length(text), tf.float32)  # expect: TPU107\n",
    ),
    "no_xla_kernel": (
        _NET,
        _NET
        + "    tanh = tf.numpy_function(np.tanh, [net], tf.float32)  # expect: TPU108\n"
        + "    net = tf.reshape(tanh, tf.shape(net))\n",
    ),
    "dynamic_padder": (
        _NET,
        _NET
        + "    distinct, _ = tf.unique(labels)  # expect: TPU109\n"
        + "    net = net * tf.cast(tf.size(distinct), tf.float32)\n",
    ),
    "metric_on_device": (
        "    optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.1)\n",
        (
            "    _, train_accuracy = tf.compat.v1.metrics.accuracy(labels, tf.argmax(logits, 1))  "
            "# expect: TPU110\n"
            "    optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.1)\n"
        ),
    ),
    "no_cross_replica_sum": (
        (
            '    if params["use_tpu"]:\n        optimizer = tf.compat.v1.tpu.CrossShardOptimizer(optimizer)\n'
            "    train_op = optimizer.minimize(loss, tf.compat.v1.train.get_global_step())\n"
        ),
        (
            "    train_op = optimizer.minimize(loss, tf.compat.v1.train.get_global_step())  "
            "# expect: TPU111\n"
        ),
    ),
    "dynamic_shape_on_device": (
        _NET,
        _NET
        + "    count = tf.reduce_sum(labels)\n"
        + "    padding = tf.zeros(tf.stack([count, 8]))  # expect: TPU115\n"
        + "    net = net + tf.reduce_sum(padding)\n",
    ),
    # XLA refuses a TensorArray sized by the data; the graph shows nothing (variant outputs)
    "data_sized_tensor_array": (
        _NET,
        _NET
        + "    size = tf.reduce_sum(labels) + 1\n"
        + "    rows = tf.TensorArray(tf.float32, size, element_shape=[8])  # expect: TPU115\n"
        + "    net = net + rows.write(0, net[0]).read(0)\n",
    ),
    "eval_batch_size_missing": (
        "train_batch_size=32, eval_batch_size=32\n",
        "train_batch_size=32\n",
    ),
}


def program(defect: str) -> str:
    """CLEAN with ``defect``'s lines replaced (both replacements of a two-part defect)."""
    text = CLEAN
    parts = [defect] + [d for d in DEFECTS if d.startswith(defect + "_")]
    for name in parts:
        old, new = DEFECTS[name]
        if old not in text:
            raise AssertionError(f"{name}: {old!r} is not in the program")
        text = text.replace(old, new, 1)
    if defect == "string_feature":
        text = text.replace(_BATCH, _BATCH.rstrip("\n") + "  # expect: TPU102\n")
    if defect == "eval_batch_size_missing":
        text = text.replace(
            "    estimator = TPU.TPUEstimator(\n",
            "    estimator = TPU.TPUEstimator(  # expect: TPU113\n",
        )
    return text


def expected(text: str) -> set[tuple[int, str]]:
    """(line, ID) of every ``# expect: ID`` mark."""
    out = set()
    for number, line in enumerate(text.splitlines(), 1):
        match = re.search(r"# expect: (TPU\d{3})$", line)
        if match:
            out.add((number, match.group(1)))
    return out


CLASSES = [d for d in DEFECTS if not d.endswith("_size")]
