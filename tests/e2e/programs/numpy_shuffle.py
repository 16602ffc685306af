"""An Estimator fed by ``numpy_input_fn(shuffle=True)``, with every seed a program can set.

TensorFlow's ``numpy_input_fn`` reseeds Python's ``random`` from the operating system for its
random starting row, and a queue-runner thread fills its ``RandomShuffleQueue``: its batches
change from run to run whatever the seeds.  A training hook records the seeds of the
training graph's random ops, the queue's among them.
``python numpy_shuffle.py MODEL_DIR RESULTS``.
"""

import json
import random
import sys

import numpy as np
import tensorflow as tf

SEED = 11
MODEL_DIR, RESULTS_FILE = sys.argv[1], sys.argv[2]
rng = np.random.RandomState(SEED)
X = rng.normal(size=(96, 4)).astype(np.float32)
Y = (X.sum(axis=1) > 0).astype(np.int64)
RESULTS = {}


class RandomOpSeeds(tf.compat.v1.train.SessionRunHook):
    """Records the seeds each random op of the training graph runs with."""

    def begin(self):
        graph = tf.compat.v1.get_default_graph()
        RESULTS["seeds"] = [
            [op.name, op.get_attr("seed"), op.get_attr("seed2")]
            for op in graph.get_operations()
            if "seed2" in op.node_def.attr
        ]


def model_fn(features, labels, mode):
    logits = tf.compat.v1.layers.dense(features["x"], 2)
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions={"logits": logits})
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.1)
    train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


tf.keras.utils.set_random_seed(SEED)
random.seed(SEED)
estimator = tf.estimator.Estimator(
    model_fn, config=tf.estimator.RunConfig(model_dir=MODEL_DIR, tf_random_seed=SEED)
)
train_input_fn = tf.compat.v1.estimator.inputs.numpy_input_fn(
    x={"x": X}, y=Y, batch_size=16, num_epochs=None, shuffle=True
)
estimator.train(train_input_fn, steps=10, hooks=[RandomOpSeeds()])
eval_input_fn = tf.compat.v1.estimator.inputs.numpy_input_fn(
    x={"x": X}, y=Y, batch_size=16, num_epochs=1, shuffle=False
)
RESULTS["loss"] = float(estimator.evaluate(eval_input_fn)["loss"])

with open(RESULTS_FILE, "w") as f:
    json.dump(RESULTS, f, indent=1)
