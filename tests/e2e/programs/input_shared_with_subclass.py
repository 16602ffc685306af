"""One input-function factory feeds a plain Estimator (est2tpu makes it a TPUEstimator) and
an Estimator subclass of the program's own, which est2tpu leaves as it is: the subclass
passes no params["batch_size"], so there the input must keep batching by its own size.

Usage: input_shared_with_subclass.py MODEL_DIR RESULTS
"""

import json
import sys

import numpy as np
import tensorflow as tf

MODEL_DIR, RESULTS = sys.argv[1], sys.argv[2]
tf.keras.utils.set_random_seed(7)
X = np.random.RandomState(0).rand(120, 4).astype(np.float32)
Y = (X.sum(axis=1) > 2).astype(np.int32)


def make_input(training, batch_size):
    def input_fn():
        dataset = tf.data.Dataset.from_tensor_slices(({"x": X}, Y))
        if training:
            dataset = dataset.repeat()
        return dataset.batch(batch_size)

    return input_fn


def model_fn(features, labels, mode):
    logits = tf.compat.v1.layers.dense(features["x"], 2)
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    if mode == tf.estimator.ModeKeys.EVAL:
        # the mean batch size: which batch size the input function used
        batch = tf.cast(tf.shape(labels)[0], tf.float32)
        return tf.estimator.EstimatorSpec(
            mode, loss=loss, eval_metric_ops={"batch": tf.compat.v1.metrics.mean(batch)}
        )
    optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.1)
    train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def subclass_model_fn(features, labels, mode):
    # its own model_fn (one shared with the TPUEstimator would become TPU code too)
    logits = tf.compat.v1.layers.dense(features["x"], 2)
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    if mode == tf.estimator.ModeKeys.EVAL:
        batch = tf.cast(tf.shape(labels)[0], tf.float32)
        return tf.estimator.EstimatorSpec(
            mode, loss=loss, eval_metric_ops={"batch": tf.compat.v1.metrics.mean(batch)}
        )
    optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.1)
    train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


class WarmEstimator(tf.estimator.Estimator):
    """The program's own Estimator."""

    def __init__(self, model_dir):
        super().__init__(
            subclass_model_fn, config=tf.estimator.RunConfig(model_dir=model_dir, tf_random_seed=7)
        )


def as_floats(metrics):
    return {k: float(v) for k, v in sorted(metrics.items())}


estimator = tf.estimator.Estimator(
    model_fn, config=tf.estimator.RunConfig(model_dir=MODEL_DIR + "/plain", tf_random_seed=7)
)
estimator.train(make_input(True, 16), max_steps=12)
plain = estimator.evaluate(make_input(False, 16), steps=5)

# Batches of 24 under the subclass, 16 under the TPUEstimator.
warm = WarmEstimator(MODEL_DIR + "/subclass")
warm.train(make_input(True, 24), max_steps=9)
subclass = warm.evaluate(make_input(False, 24), steps=5)
looped, _ = tf.estimator.train_and_evaluate(
    warm,
    tf.estimator.TrainSpec(make_input(True, 24), max_steps=15),
    tf.estimator.EvalSpec(make_input(False, 24), steps=5, throttle_secs=0),
)

with open(RESULTS, "w") as f:
    json.dump(
        {"plain": as_floats(plain), "subclass": as_floats(subclass), "looped": as_floats(looped)},
        f,
    )
